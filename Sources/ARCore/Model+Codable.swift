#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Records as `Codable`: a record encodes to its columns (and the relations it holds loaded),
/// and decodes into a new, unsaved record from the columns a client may set.
///
/// ```swift
/// let json = try JSONEncoder().encode(user)        // {"id":1,"name":"Alex","age":31,"groupId":2,"createdAt":…}
/// let draft = try JSONDecoder().decode(User.self, from: body)
/// try draft.save()                                  // INSERT: a new record, whatever id the body held
/// try user.assign(fromJSON: body)                   // an edit, the same columns allowed
/// try user.save()                                   // UPDATE of what changed
/// ```
///
/// What is encoded: `id`, every declared column, `createdAt` and `updatedAt` (`null` when
/// unset), or those of them ``Model/encodedColumns`` lists, each value as its Swift type encodes (dates, data, UUIDs and decimals by the
/// encoder's strategies), under the property's name (a belongs-to's key under its column
/// name, `groupId`); then each relation the record holds in memory: a belongs-to parent assigned
/// or loaded, a has-one child loaded, has-many and has-many-through records eager-loaded
/// (`includes`), under the relation's property name.
/// Nothing is loaded to encode a record; a relation leading back to a record being encoded is
/// left out.
///
/// What is decoded: only ``Model/decodableColumns`` (every declared column but belongs-to keys
/// and a UUID or String primary key, unless the model says otherwise). `id`, `createdAt`,
/// `updatedAt`, the other columns, relations and unknown keys are ignored: a client cannot
/// choose a record's id (or key), its timestamps or its parent, and may send back what it was given. A key that is absent leaves
/// the column as it is (its default, for a new record); `null` clears an optional column; a
/// value of the wrong type is a `DecodingError` naming the key, and nothing is assigned.
extension Model: Codable {}

extension Model {
    /// The declared columns (property or column names) that decoding may set:
    /// ``decodableColumns``' default, every declared column except belongs-to keys and the
    /// primary key's column of a model keyed by a `UUID` or `String` (see ``primaryKey``): a client
    /// chooses neither a record's parent nor its key unless the model lists them.
    public static var defaultDecodableColumns: [String] {
        guard let mapping = try? ModelMapping.of(self) else { return [] }
        var keys = Set(mapping.hooks.compactMap(\.columnIndex))
        if let key = RecordCodingPlan.keyColumn(mapping) { keys.insert(key) }
        return mapping.propertyNames.indices.filter { !keys.contains($0) }.map { mapping.propertyNames[$0] }
    }

    /// The keys an encoding may hold: ``Model/encodedColumns``' default, `id`, every declared column
    /// (a belongs-to's key by its column name, as it is encoded), `createdAt` and `updatedAt`. A
    /// model keyed by a `UUID` or `String` column has no `id` of its own: its key is that column.
    public static var defaultEncodedColumns: [String] {
        guard let mapping = try? ModelMapping.of(self) else { return [] }
        let id = RecordCodingPlan.keyColumn(mapping) == nil ? ["id"] : []
        return id + RecordCodingPlan.keys(mapping).map(\.stringValue) + ["createdAt", "updatedAt"]
    }

    /// Encodes the record as ``Model`` does (see `encode(to:)`): the work of the default.
    ///
    /// ```swift
    /// override func encode(to encoder: any Encoder) throws {
    ///     try encodeRecord(to: encoder)
    ///     var extra = encoder.container(keyedBy: RecordCodingKey.self)
    ///     try extra.encode(displayName, forKey: RecordCodingKey("displayName"))
    /// }
    /// ```
    /// - Throws: the encoder's errors, and `.invalidModel` for a class that cannot be a table or
    ///   whose ``encodedColumns`` names no column.
    public final func encodeRecord(to encoder: any Encoder) throws {
        try encodeRecord(to: encoder, ancestors: [])
    }

    /// ``encodeRecord(to:)`` inside the records `ancestors` (by identity) being encoded.
    fileprivate final func encodeRecord(to encoder: any Encoder, ancestors: [ObjectIdentifier]) throws {
        let mapping = try mapping()
        let plan = mapping.codingPlan(for: type(of: self))
        let encoded = try plan.encoded.get()
        var container = encoder.container(keyedBy: RecordCodingKey.self)
        if encoded.id { try container.encode(id, forKey: RecordCodingKey("id")) }
        for index in encoded.columns {
            try withField(index) { kind, address in
                guard let coding = kind as? any CodableColumnField.Type else { return }
                try coding.encode(address, to: &container, forKey: plan.keys[index])
            }
        }
        if encoded.createdAt { try container.encode(createdAt, forKey: RecordCodingKey("createdAt")) }
        if encoded.updatedAt { try container.encode(updatedAt, forKey: RecordCodingKey("updatedAt")) }
        let lineage = ancestors + [ObjectIdentifier(self)]
        for hook in mapping.hooks {
            guard let relation = hook.kind as? any LoadedRelationField.Type, let loaded = loadedRecords(hook, relation) else { continue }
            let key = RecordCodingKey(hook.propertyName)
            switch loaded {
            case .one(let parent):
                guard !lineage.contains(ObjectIdentifier(parent)) else { continue }
                try container.encode(RelatedRecord(record: parent, ancestors: lineage), forKey: key)
            case .many(let children):
                guard !children.contains(where: { lineage.contains(ObjectIdentifier($0)) }) else { continue }
                try container.encode(children.map { RelatedRecord(record: $0, ancestors: lineage) }, forKey: key)
            }
        }
    }

    /// The records the relation field of `hook` holds in memory.
    private final func loadedRecords<Field: LoadedRelationField>(_ hook: ModelMapping.Hook, _ kind: Field.Type) -> LoadedRecords? {
        withHookField(at: hook.offset, as: Field.self) { Field.loadedRecords($0) }
    }

    /// Assigns the decodable columns (``decodableColumns``) present in `decoder`'s keyed
    /// container to the record, without saving: all of them, or none when one fails.
    ///
    /// ```swift
    /// // A framework's decoder (Vapor's content, a form): the same allow-list as JSON.
    /// try user.assign(from: decoder)
    /// try user.save()
    /// ```
    /// - Throws: `DecodingError` naming the key of a value of the wrong type (or `null` for a
    ///   column that cannot be NULL); `.invalidModel` for a name in ``decodableColumns`` that
    ///   is not a declared column. The record is left as it was.
    public final func assign(from decoder: any Decoder) throws {
        let mapping = try mapping()
        let plan = mapping.codingPlan(for: type(of: self))
        let decodable = try plan.decodable.get()
        let container = try decoder.container(keyedBy: RecordCodingKey.self)
        var decoded: [(index: Int, value: DatabaseValue)] = []
        for index in decodable {
            let key = plan.keys[index]
            guard container.contains(key), let coding = mapping.fields[index].kind as? any CodableColumnField.Type else { continue }
            decoded.append((index, try coding.decode(from: container, forKey: key)))
        }
        for (index, value) in decoded { try assignColumn(index, value) }
    }

    /// ``assign(from:)`` from JSON: a client's edit, the same columns allowed.
    ///
    /// ```swift
    /// try user.assign(fromJSON: request.body)   // {"age": 32, "id": 9}: age changes, id is ignored
    /// try user.save()                           // UPDATE "User" SET "age" = ?, "updatedAt" = ? WHERE "id" = ?
    /// ```
    /// - Parameters:
    ///   - data: a JSON object.
    ///   - decoder: the decoder (its date and data strategies); default `JSONDecoder()`.
    /// - Throws: what ``assign(from:)`` throws, and `DecodingError` for data that is not a JSON object.
    public final func assign(fromJSON data: Data, using decoder: JSONDecoder = JSONDecoder()) throws {
        try decoder.decode(Assignment.self, from: data).apply(to: self)
    }
}

/// A class's encoding and decoding, worked out once (``ModelMapping/codingPlan(for:)``): each
/// column's key, the keys encoded (``Model/encodedColumns``) and the columns decoded
/// (``Model/decodableColumns``), or the error naming what is wrong in them.
package struct RecordCodingPlan: Sendable {
    /// Each declared column's key: its property's name, a belongs-to's key its column name
    /// (the relation's property name is the relation's key).
    let keys: [RecordCodingKey]
    /// What ``Model/encodeRecord(to:)`` writes: whether `id` and each timestamp, and the
    /// declared columns (their indexes, in the schema's order).
    let encoded: Result<(id: Bool, columns: [Int], createdAt: Bool, updatedAt: Bool), ActiveRecordError>
    /// The declared columns ``Model/assign(from:)`` may set, as listed.
    let decodable: Result<[Int], ActiveRecordError>
    /// The class the plan is for (a mapping is its class's; checked, not assumed).
    let type: ObjectIdentifier

    /// The index of the declared column that holds the primary key of a model keyed by a `UUID`
    /// or `String`; `nil` for an integer key (the record's ``Model/id``).
    static func keyColumn(_ mapping: ModelMapping) -> Int? {
        let key = mapping.table.schema.primaryKey
        return key.isAutoincrement ? nil : mapping.table.schema.columnIndex(named: key.name)
    }

    /// Each declared column's key (see ``keys``).
    static func keys(_ mapping: ModelMapping) -> [RecordCodingKey] {
        let relationKeys = Set(mapping.hooks.compactMap(\.columnIndex))
        return mapping.propertyNames.indices.map { index in
            RecordCodingKey(relationKeys.contains(index) ? mapping.table.schema.columns[index].name : mapping.propertyNames[index])
        }
    }

    init(_ mapping: ModelMapping, for type: Model.Type) {
        self.type = ObjectIdentifier(type)
        keys = Self.keys(mapping)
        let model = ModelMapping.modelName(type)
        func unknown(_ list: String, _ name: String, _ also: String) -> ActiveRecordError {
            ActiveRecordError(
                .invalidModel,
                "\(model).\(list) names \"\(name)\", which is not a declared column\(also); list property or column names "
                    + "among: " + mapping.propertyNames.joined(separator: ", "))
        }
        decodable = Self.indexes(type.decodableColumns) { name in
            guard let index = try? mapping.columnIndex(name) else {
                return .failure(unknown("decodableColumns", name, " (id and the timestamps are never decoded)"))
            }
            return .success(index)
        }
        let keys = keys
        // id and the timestamps as -1, -2, -3.
        let listed = Self.indexes(type.encodedColumns) { name in
            switch name {
            // A keyed model's `id` is its key column.
            case "id": return .success(Self.keyColumn(mapping) ?? -1)
            case "createdAt": return .success(-2)
            case "updatedAt": return .success(-3)
            default:
                guard let index = (try? mapping.columnIndex(name)) ?? keys.firstIndex(where: { $0.stringValue == name }) else {
                    return .failure(unknown("encodedColumns", name, " (nor id, createdAt, updatedAt)"))
                }
                return .success(index)
            }
        }
        encoded = listed.map { indexes in
            (indexes.contains(-1), Set(indexes.filter { $0 >= 0 }).sorted(), indexes.contains(-2), indexes.contains(-3))
        }
    }

    /// Each name's index, or the first name's error.
    private static func indexes(
        _ names: [String], _ index: (String) -> Result<Int, ActiveRecordError>
    ) -> Result<[Int], ActiveRecordError> {
        var indexes: [Int] = []
        for name in names {
            switch index(name) {
            case .success(let found): indexes.append(found)
            case .failure(let error): return .failure(error)
            }
        }
        return .success(indexes)
    }
}

extension ModelMapping {
    /// `type`'s ``RecordCodingPlan``, worked out on first use and kept (the mappings are
    /// shared between threads: behind a lock, taken once per record encoded or decoded).
    package func codingPlan(for type: Model.Type) -> RecordCodingPlan {
        if let plan = codingPlanCache.withLock({ $0 }), plan.type == ObjectIdentifier(type) { return plan }
        // Worked out outside the lock: the class's lists may reach the mapping (their defaults do).
        let plan = RecordCodingPlan(self, for: type)
        codingPlanCache.withLock { $0 = plan }
        return plan
    }
}

/// Carries a decoder out of `JSONDecoder` to ``Model/assign(from:)``.
private struct Assignment: Decodable {
    let decoder: any Decoder
    init(from decoder: any Decoder) throws { self.decoder = decoder }
    func apply(to record: Model) throws { try record.assign(from: decoder) }
}

/// A related record inside another's encoding, with the records it is inside.
private struct RelatedRecord: Encodable {
    let record: Model
    let ancestors: [ObjectIdentifier]
    func encode(to encoder: any Encoder) throws { try record.encodeRecord(to: encoder, ancestors: ancestors) }
}

/// A key of a record's encoding: a column's property name, `id`, a timestamp, a relation.
public struct RecordCodingKey: CodingKey, Hashable, Sendable {
    /// The key's name.
    public let stringValue: String
    /// Always `nil`: records are keyed by name.
    public var intValue: Int? { nil }

    /// The key named `name`.
    public init(_ name: String) { stringValue = name }
    /// The key named `stringValue`.
    public init?(stringValue: String) { self.stringValue = stringValue }
    /// `nil`: records are keyed by name.
    public init?(intValue: Int) { nil }
}

/// What a relation field holds in memory, for encoding.
package enum LoadedRecords {
    case one(Model)
    case many([Model])
}

/// A relation field that can say what it holds loaded (``Model/encodeRecord(to:)``).
package protocol LoadedRelationField: RecordHookField {
    /// The records `field` holds in memory (assigned, loaded, eager-loaded); `nil` when none.
    static func loadedRecords(_ field: Self) -> LoadedRecords?
}

/// A column's value encoded and decoded as its Swift type.
package protocol CodableColumnField {
    /// Encodes the value at `field.value` (a `Value`, the column's Swift type).
    static func encode(
        _ field: FieldAddress, to container: inout KeyedEncodingContainer<RecordCodingKey>, forKey key: RecordCodingKey) throws
    static func decode(from container: KeyedDecodingContainer<RecordCodingKey>, forKey key: RecordCodingKey) throws -> DatabaseValue
}

extension Column: CodableColumnField {
    package static func encode(
        _ field: FieldAddress, to container: inout KeyedEncodingContainer<RecordCodingKey>, forKey key: RecordCodingKey
    ) throws {
        // The typed value as the record holds it (a JSON column's value encoded once, not
        // stored as text, read back and encoded again).
        let typed = field.value.assumingMemoryBound(to: Value.self).pointee
        if let encodable = typed as? any Encodable { return try container.encode(encodable, forKey: key) }
        // A type that is not Encodable: its stored value.
        switch try typed.toSQL() {
        case .null: try container.encodeNil(forKey: key)
        case .integer(let number): try container.encode(number, forKey: key)
        case .real(let number): try container.encode(number, forKey: key)
        case .text(let text): try container.encode(text, forKey: key)
        case .blob(let bytes): try container.encode(bytes, forKey: key)
        }
    }

    package static func decode(from container: KeyedDecodingContainer<RecordCodingKey>, forKey key: RecordCodingKey) throws -> DatabaseValue {
        func stored(_ value: Value?) throws -> DatabaseValue {
            guard let value else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: "the value does not fit the column's type \(Value.self)")
            }
            do {
                return try value.toSQL()
            } catch {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(error)")
            }
        }
        if let decodable = Value.self as? any Decodable.Type {
            func typed<T: Decodable>(_ type: T.Type) throws -> Value? { try container.decode(T.self, forKey: key) as? Value }
            return try stored(typed(decodable))
        }
        // A type that is not Decodable: its stored value, checked by the type.
        if Value.isNullable, try container.decodeNil(forKey: key) { return .null }
        let value: DatabaseValue = switch Value.sqlType {
        case .integer: .integer(try container.decode(Int64.self, forKey: key))
        case .real: .real(try container.decode(Double.self, forKey: key))
        case .text: .text(try container.decode(String.self, forKey: key))
        case .blob: .blob(try container.decode(Data.self, forKey: key))
        }
        return try stored(try? Value.fromSQL(value))
    }
}
