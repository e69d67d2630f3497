import Foundation
import Synchronization

/// A model class reflected into its table: the schema, the SQL, and where
/// each column's storage sits inside an instance. Built once per class.
package final class ModelMapping: Sendable {
    package struct Field: Sendable {
        /// Byte offsets from the object's start of the column's value and original value.
        package let valueOffset: Int
        package let originalOffset: Int
        package let kind: any ColumnField.Type
    }

    /// A field with save and drop hooks (a relation).
    package struct Hook: Sendable {
        package let offset: Int
        package let kind: any RecordHookField.Type
        package let propertyName: String
    }

    package let table: TableMapping
    package let fields: [Field]
    package let hooks: [Hook]
    /// The Swift property name of each column, for messages.
    package let propertyNames: [String]
    /// Whether the class adopts ``Callbacks`` / ``ValidationHook`` (checked once, not per save).
    package let hasCallbacks: Bool
    package let validates: Bool
    /// Whether saving needs a transaction of its own (callbacks, validations).
    package var hasLifecycle: Bool { hasCallbacks || validates }
    /// Property name → column index, for look-ups by name (not on per-row paths).
    package let indexByName: [String: Int]

    private init(
        hasCallbacks: Bool, validates: Bool, table: TableMapping, fields: [Field], hooks: [Hook],
        propertyNames: [String], indexByName: [String: Int]
    ) {
        self.hasCallbacks = hasCallbacks
        self.validates = validates
        self.table = table
        self.fields = fields
        self.hooks = hooks
        self.propertyNames = propertyNames
        self.indexByName = indexByName
    }

    private static let cache = Mutex<[ObjectIdentifier: ModelMapping]>([:])
    private static let building = Mutex<[ObjectIdentifier: (thread: UInt, mapping: ModelMapping)]>([:])
    private static let names = Mutex<[ObjectIdentifier: String]>([:])

    /// The class name as written (`String(describing:)` costs thousands of
    /// instructions, so it is asked once per class).
    package static func modelName(_ type: Model.Type) -> String {
        let key = ObjectIdentifier(type)
        if let name = names.withLock({ $0[key] }) { return name }
        let name = String(describing: type)
        names.withLock { $0[key] = name }
        return name
    }

    /// The mapping of `type`, reflected on first use and cached.
    /// - Throws: `.invalidModel` when the class cannot be a table.
    package static func of(_ type: Model.Type) throws -> ModelMapping {
        let key = ObjectIdentifier(type)
        let thread = UInt(pthread_self())
        let known = cache.withLock { cache -> ModelMapping? in cache[key] }
        if let known { return known }
        // Re-entered on the thread that is building this mapping (a key-path probe
        // of its validations): the provisional mapping serves it; no other thread sees it.
        if let provisional = building.withLock({ $0[key] }), provisional.thread == thread {
            return provisional.mapping
        }
        // Reflect outside the lock: the prototype's initializer is user code.
        let reflected = try reflect(type)
        var final = reflected
        if let hook = type as? any ValidationHook.Type {
            building.withLock { $0[key] = (thread, reflected) }
            defer { building.withLock { _ = $0.removeValue(forKey: key) } }
            // Validations name their columns by key path, which needs a mapping; the
            // unique indexes they ask for make the final one.
            let unique = Set(hook.uniquelyIndexedColumns)
            if !unique.isEmpty { final = try reflected.addingUniqueIndexes(unique) }
        }
        return cache.withLock { cache in
            if let existing = cache[key] { return existing }
            cache[key] = final
            return final
        }
    }

    /// The same mapping with a UNIQUE index on these columns (by column or property name).
    private func addingUniqueIndexes(_ names: Set<String>) throws -> ModelMapping {
        let schema = table.schema
        let columns = schema.columns.enumerated().map { index, column in
            var column = column
            if names.contains(column.name) || names.contains(propertyNames[index]) { column.index = .unique }
            return column
        }
        return ModelMapping(
            hasCallbacks: hasCallbacks, validates: validates,
            table: TableMapping(schema: try TableSchema(name: schema.name, columns: columns)),
            fields: fields, hooks: hooks, propertyNames: propertyNames, indexByName: indexByName)
    }

    private static func reflect(_ type: Model.Type) throws -> ModelMapping {
        let prototype = type.init()
        let reflected = try reflectColumnFields(of: type, prototype: prototype)
        let base = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        var columns: [ColumnSchema] = []
        var fields: [Field] = []
        var propertyNames: [String] = []
        var indexByName: [String: Int] = [:]
        for field in reflected {
            guard let (offset, kind) = field.column else { continue }
            let declaration = kind.declaration(base + offset)
            let name = declaration.name ?? field.defaultColumnName ?? field.propertyName
            columns.append(ColumnSchema(
                name: name, type: kind.sqlType, isNullable: kind.isNullable,
                index: declaration.index, defaultValue: declaration.value))
            propertyNames.append(field.propertyName)
            let layout = kind.layout
            fields.append(Field(valueOffset: offset + layout.value, originalOffset: offset + layout.original, kind: kind))
            indexByName[name] = fields.count - 1
            if indexByName[field.propertyName] == nil { indexByName[field.propertyName] = fields.count - 1 }
        }
        let hooks = reflected.compactMap { field in
            field.hook.map { Hook(offset: field.offset, kind: $0, propertyName: field.propertyName) }
        }
        withExtendedLifetime(prototype) {}
        let schema: TableSchema
        do {
            schema = try TableSchema(name: type.tableName, columns: columns)
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(.invalidModel, "model \(type): \(error.message)")
        }
        return ModelMapping(
            hasCallbacks: type is any Callbacks.Type, validates: type is any ValidationHook.Type,
            table: TableMapping(schema: schema), fields: fields, hooks: hooks,
            propertyNames: propertyNames, indexByName: indexByName)
    }

    /// The position of a column or property name in ``TableMapping/qualifiedColumns``
    /// (0–2 for `id`, `createdAt`, `updatedAt`), or `nil`.
    package func qualifiedColumnPosition(_ name: String) -> Int? {
        switch name {
        case "id": return 0
        case "createdAt": return 1
        case "updatedAt": return 2
        default: return indexByName[name].map { $0 + 3 }
        }
    }

    /// The column name for a column or property name (`id`, `createdAt`, `updatedAt` included).
    /// - Throws: `.unknownColumn`, listing the model's columns.
    package func columnName(_ name: String) throws -> String {
        if TableSchema.reservedColumnNames.contains(name) { return name }
        return table.schema.columns[try columnIndex(name)].name
    }

    /// The column index for a column or property name.
    /// - Throws: `.unknownColumn`, listing the model's columns.
    package func columnIndex(_ name: String) throws -> Int {
        guard let index = indexByName[name] else { throw table.schema.unknownColumn(name) }
        return index
    }
}
