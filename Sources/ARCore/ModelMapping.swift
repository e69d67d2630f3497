#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A model class reflected into its table: the schema, the SQL, and where
/// each column's storage sits inside an instance. Built once per class.
///
/// Two steps, each cached: ``reflected(_:)`` is what the class declares (its columns,
/// their offsets, its relation fields); ``of(_:)`` adds what its validations ask of the
/// table (UNIQUE indexes). Validations name their columns by key path, and key paths are
/// resolved on the reflected step, so building the final mapping never needs itself.
package final class ModelMapping: Sendable {
    package struct Field: Sendable {
        /// The byte offset of the column's value from the object's start.
        package let valueOffset: Int
        /// The byte offset of its original from the start of the originals a changed record
        /// keeps aside (``RecordExtras``): the originals are laid out as the object's columns
        /// are, from ``ModelMapping/originalsStart``, so that one copy of bytes takes them all.
        package let originalOffset: Int
        /// The value's size in bytes.
        package let size: Int
        /// Whether the value is plain bytes (no reference to retain when copied).
        package let isTrivial: Bool
        package let kind: any ColumnField.Type
        /// The Swift type of the value, when per-row work on it has a specialised path.
        package let storage: KnownFieldType
    }

    /// A field with save and destroy hooks (a relation).
    package struct Hook: Sendable {
        package let offset: Int
        package let kind: any RecordHookField.Type
        package let propertyName: String
        /// The column the field holds (a belongs-to's key), as an index of the schema's columns.
        package let columnIndex: Int?
        /// Whether destroying a record has work for the field (a dependency).
        package let destroys: Bool
    }

    package let table: TableOperations
    package let fields: [Field]
    /// ``fields`` where an engine reading rows straight into records reads them
    /// (``DirectRowReading``): a copy made once, kept as long as the process (as the mappings are).
    nonisolated(unsafe) package let fieldBuffer: UnsafeBufferPointer<Field>
    /// The size and alignment of the originals a changed record keeps aside.
    package let originalsLayout: (size: Int, alignment: Int)
    /// Where in the object the bytes the originals copy start.
    package let originalsStart: Int
    /// The fields whose values hold references (copied one by one, after the bytes).
    package let referenceFields: [Field]
    /// How many words a record's bitmap of the originals it keeps aside takes (a bit a column,
    /// ``RecordExtras``).
    package let capturedWordCount: Int
    /// Each column's index by the offset of its value in the object, less ``fieldLookupStart``
    /// (-1 between columns): the column a `@Column` property's setter writes, from its address.
    private let fieldLookup: [Int32]
    private let fieldLookupStart: Int
    package let hooks: [Hook]
    /// The class's encoding and decoding, worked out on first use (Model+Codable.swift).
    package let codingPlanCache = Lock<RecordCodingPlan?>(nil, cacheLineAligned: false)
    /// The Swift property name of each column, for messages.
    package let propertyNames: [String]
    /// Whether the class adopts ``Callbacks`` / ``_ValidationHook`` (checked once, not per save).
    package let hasCallbacks: Bool
    package let validates: Bool
    /// Whether saving needs a transaction of its own (callbacks, validations).
    package var hasLifecycle: Bool { hasCallbacks || validates }
    /// Whether destroying a record runs more than its `DELETE` (callbacks, dependencies).
    package var hasDestroyLifecycle: Bool { hasCallbacks || hooks.contains(where: \.destroys) }

    /// The columns' values in an instance reflection made (its defaults), laid out as a changed
    /// record's originals: a new record still holding these values has them as its originals
    /// without a copy of its own (``Model/captureOriginals()``). Immutable once made, and kept
    /// as long as the process (as the mappings are); shared by a class's two mappings.
    nonisolated(unsafe) package let defaultOriginals: UnsafeRawPointer
    /// The defaults' bytes as the object holds them, by aligned 8-byte word, from the first
    /// column's word to the last one's (``DefaultWords``), so that a record is seen holding its
    /// defaults in a few instructions a word.
    package let defaultWords: DefaultWords

    /// The words of the object that hold column values, as a prototype holds them: from the
    /// object's byte ``start``, ``count`` aligned 8-byte words, each as its bits and the mask of
    /// the bytes that are column values (0 for padding and for what is not a column): the bits
    /// at ``bits``, the masks after them (``count`` words on). Kept as long as the process (as the mappings are).
    /// `@unchecked Sendable`: the words are written once, while the mapping is made, before any
    /// other thread can reach it, and only read after.
    package struct DefaultWords: @unchecked Sendable {
        package let start: Int
        package let count: Int
        package let bits: UnsafePointer<UInt64>

        /// Whether the object at `base` holds these bits in every byte a mask covers: one pass
        /// over the words, without a branch per word.
        @inline(__always)
        package func areHeld(at base: UnsafeRawPointer) -> Bool {
            let words = base + start
            let masks = bits + count
            var differing: UInt64 = 0
            for index in 0..<count {
                differing |= (words.load(fromByteOffset: index &* 8, as: UInt64.self) ^ bits[index]) & masks[index]
            }
            return differing == 0
        }
    }

    private init(
        hasCallbacks: Bool, validates: Bool, table: TableOperations, fields: [Field], hooks: [Hook], propertyNames: [String],
        defaultOriginals: UnsafeRawPointer, defaultWords: DefaultWords
    ) {
        self.hasCallbacks = hasCallbacks
        self.validates = validates
        self.table = table
        self.fields = fields
        let buffer = UnsafeMutableBufferPointer<Field>.allocate(capacity: fields.count)
        _ = buffer.initialize(from: fields)
        fieldBuffer = UnsafeBufferPointer(buffer)
        originalsLayout = Self.originalsLayout(fields)
        originalsStart = fields.map { $0.valueOffset - $0.originalOffset }.first ?? 0
        referenceFields = fields.filter { !$0.isTrivial }
        capturedWordCount = max(1, (fields.count + 63) / 64)
        let start = fields.map(\.valueOffset).min() ?? 0
        var lookup = [Int32](repeating: -1, count: (fields.map { $0.valueOffset + 1 }.max() ?? 0) - start)
        for (index, field) in fields.enumerated() { lookup[field.valueOffset - start] = Int32(index) }
        fieldLookup = lookup
        fieldLookupStart = start
        self.hooks = hooks
        self.propertyNames = propertyNames
        self.defaultOriginals = defaultOriginals
        self.defaultWords = defaultWords
    }

    /// ``defaultWords`` of `prototype`'s columns. (The object is 16-byte aligned and its block
    /// a multiple of 8 bytes long, so an aligned word holding a column's byte is inside it.)
    private static func defaultWords(of prototype: Model, _ fields: [Field]) -> DefaultWords {
        var masks: [Int: UInt64] = [:]
        for field in fields {
            for byte in field.valueOffset..<(field.valueOffset + field.size) {
                masks[byte & ~7, default: 0] |= UInt64(0xFF) << (UInt64(byte & 7) * 8)
            }
        }
        let start = masks.keys.min() ?? 0
        let count = masks.isEmpty ? 0 : ((masks.keys.max() ?? 0) - start) / 8 + 1
        let bits = UnsafeMutablePointer<UInt64>.allocate(capacity: max(2 * count, 1))
        let base = UnsafeRawPointer(Unretained(prototype).address)
        withExtendedLifetime(prototype) {
            for index in 0..<count {
                let offset = start + 8 * index
                let mask = masks[offset] ?? 0
                bits[index] = base.load(fromByteOffset: offset, as: UInt64.self) & mask
                bits[count + index] = mask
            }
        }
        return DefaultWords(start: start, count: count, bits: UnsafePointer(bits))
    }

    /// The size and alignment of the originals of `fields`: at least 16, the alignment of the
    /// object whose layout they copy.
    private static func originalsLayout(_ fields: [Field]) -> (size: Int, alignment: Int) {
        (fields.map { $0.originalOffset + $0.size }.max() ?? 0, 16)
    }

    /// Copies the values of the columns at `values` (a record's address, or another copy of
    /// originals less ``originalsStart``) to `originals`, which holds none: every byte at once,
    /// then each value holding references as its type copies it.
    package func copyOriginals(from values: UnsafeRawPointer, to originals: UnsafeMutableRawPointer) {
        originals.copyMemory(from: values + originalsStart, byteCount: originalsLayout.size)
        for field in referenceFields {
            let address = FieldAddress(
                value: UnsafeMutableRawPointer(mutating: values + field.valueOffset), original: originals + field.originalOffset)
            field.storage.apply(CaptureOriginal(), kind: field.kind, at: address)
        }
    }

    /// Copies the value of column `index` of the record at `values` to its place in
    /// `originals`, which holds none for it.
    @inline(__always)
    package func copyOriginal(_ index: Int, from values: UnsafeRawPointer, to originals: UnsafeMutableRawPointer) {
        let field = fields[index]
        let address = FieldAddress(
            value: UnsafeMutableRawPointer(mutating: values + field.valueOffset), original: originals + field.originalOffset)
        if field.isTrivial {
            address.original.copyMemory(from: address.value, byteCount: field.size)
        } else {
            field.storage.apply(CaptureOriginal(), kind: field.kind, at: address)
        }
    }

    /// Destroys the original of column `index` at `originals` (the memory stays).
    @inline(__always)
    package func releaseOriginal(_ index: Int, at originals: UnsafeMutableRawPointer) {
        let field = fields[index]
        guard !field.isTrivial else { return }
        let original = originals + field.originalOffset
        field.storage.apply(ReleaseOriginal(), kind: field.kind, at: FieldAddress(value: original, original: original))
    }

    /// Destroys the originals at `originals` of the columns whose bits `captured` (of
    /// ``capturedWordCount`` words) sets (the memory stays).
    package func releaseOriginals(at originals: UnsafeMutableRawPointer, captured: UnsafePointer<UInt64>) {
        for word in 0..<capturedWordCount {
            var bits = captured[word]
            while bits != 0 {
                releaseOriginal(word &* 64 &+ bits.trailingZeroBitCount, at: originals)
                bits &= bits &- 1
            }
        }
    }

    /// The index of the column whose value is at `offset` in the object; `nil` when none is.
    @inline(__always)
    package func fieldIndex(atOffset offset: Int) -> Int? {
        let slot = offset &- fieldLookupStart
        guard slot >= 0, slot < fieldLookup.count else { return nil }
        let index = fieldLookup[slot]
        return index < 0 ? nil : Int(index)
    }

    /// ``defaultOriginals`` made from `prototype`'s columns.
    private static func defaultOriginals(of prototype: Model, _ fields: [Field]) -> UnsafeRawPointer {
        let (size, alignment) = originalsLayout(fields)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(size, 1), alignment: alignment)
        let start = fields.map { $0.valueOffset - $0.originalOffset }.first ?? 0
        let base = Unretained(prototype).address
        withExtendedLifetime(prototype) {
            buffer.copyMemory(from: base + start, byteCount: size)
            for field in fields where !field.isTrivial {
                let address = FieldAddress(value: base + field.valueOffset, original: buffer + field.originalOffset)
                field.storage.apply(CaptureOriginal(), kind: field.kind, at: address)
            }
        }
        return UnsafeRawPointer(buffer)
    }

    /// A class's mapping with the class it maps: made once per class and kept as long as the
    /// process (as the mappings are), so a thread's slot may hold its address unretained.
    private final class Entry: Sendable {
        let type: ObjectIdentifier
        let mapping: ModelMapping
        init(_ type: ObjectIdentifier, _ mapping: ModelMapping) {
            self.type = type
            self.mapping = mapping
        }
    }
    private static let mappings = Lock<[ObjectIdentifier: Entry]>([:])
    /// The entry each thread looked up last, as an unretained address in a thread-specific
    /// slot: a loop over one class finds its mapping with no lock and no closure (a look-up
    /// through a generic per-thread box costs several times as much; see
    /// Benchmarks/README.md, Hot-path notes).
    private static let lastEntry = PerThreadWord()
    /// The entry last looked up under the lock, by any thread (its address; 0: none),
    /// checked before ``lastEntry``: reading it is one load, and a loop over one class never
    /// writes it, so threads share it without contention. Entries are never freed.
    private static let lastShared = Atomic<UInt>(0)
    private static let reflections = Lock<[ObjectIdentifier: ModelMapping]>([:])
    private static let names = Lock<[ObjectIdentifier: String]>([:])
    /// Which class maps each table (by folded name), and whether it named the table itself.
    private static let tableOwners = Lock<[String: (type: ObjectIdentifier, name: String, isExplicit: Bool)]>([:])

    /// The class name as written (`String(describing:)` is dear, so it is asked once per
    /// class; see Benchmarks/README.md, Hot-path notes).
    package static func modelName(_ type: Model.Type) -> String {
        let key = ObjectIdentifier(type)
        if let name = names.withLock({ $0[key] }) { return name }
        let name = String(describing: type)
        names.withLock { $0[key] = name }
        return name
    }

    /// The mapping of `type`, with the unique indexes its validations ask for; built on
    /// first use and cached.
    /// - Throws: `.invalidModel` when the class cannot be a table.
    package static func of(_ type: Model.Type) throws -> ModelMapping {
        try unretained(type).object
    }

    /// ``of(_:)`` without a retain: a mapping lives as long as the process, so a caller may
    /// use it through `_withUnsafeGuaranteedRef`, and threads that use one class do not write
    /// its reference count on every call.
    ///
    /// Inlined as far as the last one looked up (a loop over one class: one load and one
    /// comparison in the caller); the rest out of line.
    @inline(__always)
    package static func unretained(_ type: Model.Type) throws -> Unretained<ModelMapping> {
        if let last = mapping(of: ObjectIdentifier(type), in: UnsafeRawPointer(bitPattern: lastShared.load(ordering: .acquiring))) {
            return last
        }
        return try unretainedAfterLast(type)
    }

    /// ``unretained(_:)`` when the last mapping looked up is another class's.
    @inline(never)
    private static func unretainedAfterLast(_ type: Model.Type) throws -> Unretained<ModelMapping> {
        let key = ObjectIdentifier(type)
        // A loop over one class finds its mapping in the thread's last one, without the lock.
        if let last = mapping(of: key, in: UnsafeRawPointer(bitPattern: lastEntry.value)) {
            return last
        }
        if let known = mappings.withLock({ $0[key] }) {
            lastEntry.value = UInt(bitPattern: Unretained(known).address)
            lastShared.store(UInt(bitPattern: Unretained(known).address), ordering: .releasing)
            return Unretained(known.mapping)
        }
        var mapping = try reflected(type)
        if let validating = type as? any _ValidationHook.Type {
            // The validations' key paths resolve on the reflected mapping (see KeyPathColumns).
            let unique = Set(try validating.uniquelyIndexedColumns())
            if !unique.isEmpty { mapping = try mapping.addingUniqueIndexes(unique) }
        }
        return mappings.withLock { mappings in
            if let existing = mappings[key] { return Unretained(existing.mapping) }
            mappings[key] = Entry(key, mapping)
            return Unretained(mapping)
        }
    }

    /// The mapping of the entry at `address` (unretained: entries are never freed) if it is
    /// the one of `type`.
    @inline(__always)
    private static func mapping(of type: ObjectIdentifier, in address: UnsafeRawPointer?) -> Unretained<ModelMapping>? {
        guard let address else { return nil }
        return Unretained<Entry>(address: address).with {
            $0.type == type ? Unretained($0.mapping) : nil
        }
    }

    /// What `type` declares, reflected on first use and cached: the columns and where they
    /// sit, without what validations add. Key-path resolution works on this.
    package static func reflected(_ type: Model.Type) throws -> ModelMapping {
        let key = ObjectIdentifier(type)
        if let known = reflections.withLock({ $0[key] }) { return known }
        // Reflect outside the lock: the prototype's initializer is user code.
        let reflected = try reflect(type)
        return reflections.withLock { reflections in
            if let existing = reflections[key] { return existing }
            reflections[key] = reflected
            return reflected
        }
    }

    /// The same mapping with a UNIQUE index on these columns (by column name).
    private func addingUniqueIndexes(_ names: Set<String>) throws -> ModelMapping {
        let schema = table.schema
        let columns = schema.columns.map { column in
            var column = column
            if names.contains(column.name) { column.index = .unique }
            return column
        }
        return ModelMapping(
            hasCallbacks: hasCallbacks, validates: validates,
            table: TableOperations(
                schema: try TableSchema(
                    name: schema.name, columns: columns, lockingColumn: schema.lockingColumn, primaryKey: schema.primaryKey),
                propertyNames: propertyNames,
                parents: table.parents),
            fields: fields, hooks: hooks, propertyNames: propertyNames, defaultOriginals: defaultOriginals,
            defaultWords: defaultWords)
    }

    /// The table name of `type`, checked against the other classes': two classes that both
    /// take the default name (their class names without namespace, `Admin.User` and
    /// `Shop.User` → `User`) would mix their rows and columns in one table.
    /// - Throws: `.invalidModel` naming both classes.
    private static func tableName(of type: Model.Type) throws -> String {
        let probe = DefaultTableName.Probe()
        let name = DefaultTableName.$probe.withValue(probe) { type.tableName }
        let isExplicit = !probe.used
        let key = foldedName(name)
        let owner = tableOwners.withLock { owners -> (type: ObjectIdentifier, name: String, isExplicit: Bool)? in
            if let owner = owners[key] { return owner }
            owners[key] = (ObjectIdentifier(type), String(reflecting: type), isExplicit)
            return nil
        }
        if let owner, owner.type != ObjectIdentifier(type), !owner.isExplicit, !isExplicit {
            throw ActiveRecordError(
                .invalidModel,
                "\(owner.name) and \(String(reflecting: type)) both map to the table \(name) (a class's default table is "
                    + "its name without its namespace), so their rows would mix; give one a tableName of its own "
                    + "(override class var tableName), or set tableName to share the table on purpose")
        }
        return name
    }

    private static func reflect(_ type: Model.Type) throws -> ModelMapping {
        let tableName = try tableName(of: type)
        let (prototype, recording) = ColumnDeclarations.recording { type.init() }
        let reflected = try reflectColumnFields(of: type, prototype: prototype)
        var declarations = ColumnDeclarations.declarations(
            of: type, prototype: prototype, recording: recording, columns: reflected.compactMap(\.column))[...]
        var columns: [ColumnSchema] = []
        var fields: [Field] = []
        var propertyNames: [String] = []
        var hooks: [Hook] = []
        var parents: [Model.Type] = []
        for field in reflected {
            var columnIndex: Int?
            if let (offset, kind) = field.column {
                let declaration = declarations.removeFirst()
                let name = declaration.name ?? field.defaultColumnName ?? field.propertyName
                var column = ColumnSchema(
                    name: name, type: kind.sqlType, kind: prototype.fieldColumnKind(at: offset, kind: kind),
                    isNullable: kind.isNullable, index: declaration.index, defaultValue: declaration.value,
                    references: field.references?.tableName)
                // A parent keyed by a declared column is referenced by that column.
                if let parent = field.references { column.referencedColumn = parent.primaryKey.name }
                columns.append(column)
                if let parent = field.references { parents.append(parent) }
                propertyNames.append(field.propertyName)
                fields.append(Field(
                    valueOffset: offset, originalOffset: offset, size: kind.valueLayout.size, isTrivial: kind.isTrivial,
                    kind: kind, storage: KnownFieldType(kind)))
                columnIndex = fields.count - 1
            }
            if let hook = field.hook {
                hooks.append(Hook(
                    offset: field.offset, kind: hook, propertyName: field.propertyName, columnIndex: columnIndex,
                    destroys: hook.hasDestroyWork(in: prototype, at: field.offset)))
            }
        }
        // The originals copy the object's bytes from its first column (16-byte aligned, as
        // the object is).
        let start = (fields.map(\.valueOffset).min() ?? 0) & ~15
        fields = fields.map { field in
            Field(
                valueOffset: field.valueOffset, originalOffset: field.valueOffset - start, size: field.size,
                isTrivial: field.isTrivial, kind: field.kind, storage: field.storage)
        }
        let defaultOriginals = Self.defaultOriginals(of: prototype, fields)
        let defaultWords = Self.defaultWords(of: prototype, fields)
        let schema: TableSchema
        do {
            // The locking column may be named by its property.
            let locking = type.lockingColumn.map { name in propertyNames.firstIndex(of: name).map { columns[$0].name } ?? name }
            schema = try TableSchema(name: tableName, columns: columns, lockingColumn: locking, primaryKey: primaryKey(of: type, columns, propertyNames))
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(.invalidModel, "model \(type): \(error.message)")
        }
        return ModelMapping(
            hasCallbacks: type is any Callbacks.Type, validates: type is any _ValidationHook.Type,
            table: TableOperations(
                schema: schema, propertyNames: propertyNames,
                parents: { [parents] in try parents.map { try ModelMapping.of($0).table } }),
            fields: fields, hooks: hooks,
            propertyNames: propertyNames, defaultOriginals: defaultOriginals, defaultWords: defaultWords)
    }

    /// The class's ``Model/primaryKey``, a `UUID` or `String` key named by its column or its property.
    private static func primaryKey(of type: Model.Type, _ columns: [ColumnSchema], _ propertyNames: [String]) -> PrimaryKey {
        let key = type.primaryKey
        guard !key.isAutoincrement, !columns.contains(where: { $0.name == key.name }),
              let index = propertyNames.firstIndex(of: key.name) else { return key }
        return PrimaryKey(name: columns[index].name, kind: key.kind)
    }

    /// The column name for a column or property name (`id`, `createdAt`, `updatedAt` included).
    /// - Throws: `.unknownColumn`, listing the model's columns.
    package func columnName(_ name: String) throws -> String {
        if name == "id" || name == table.schema.primaryKey.name { return table.schema.primaryKey.name }
        if TableSchema.reservedColumnNames.contains(name) { return name }
        return table.schema.columns[try columnIndex(name)].name
    }

    /// The column index for a column or property name.
    /// - Throws: `.unknownColumn`, listing the model's columns.
    package func columnIndex(_ name: String) throws -> Int {
        guard let position = table.position(of: name), position >= 3 else { throw table.schema.unknownColumn(name) }
        return position - 3
    }

    /// The property name of a column (the column name when it is not a declared column).
    package func propertyName(ofColumn column: String) -> String {
        table.schema.columnIndex(named: column).map { propertyNames[$0] } ?? column
    }
}
