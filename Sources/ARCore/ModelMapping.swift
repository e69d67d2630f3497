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
    /// Property name → column index, for look-ups by name (not on per-row paths).
    package let indexByName: [String: Int]

    private init(table: TableMapping, fields: [Field], hooks: [Hook], indexByName: [String: Int]) {
        self.table = table
        self.fields = fields
        self.hooks = hooks
        self.indexByName = indexByName
    }

    private static let cache = Mutex<[ObjectIdentifier: ModelMapping]>([:])

    /// The mapping of `type`, reflected on first use and cached.
    /// - Throws: `.invalidModel` when the class cannot be a table.
    package static func of(_ type: Model.Type) throws -> ModelMapping {
        let key = ObjectIdentifier(type)
        if let mapping = cache.withLock({ $0[key] }) { return mapping }
        // Reflect outside the lock: the prototype's initializer is user code.
        let mapping = try reflect(type)
        return cache.withLock { cache in
            if let existing = cache[key] { return existing }
            cache[key] = mapping
            return mapping
        }
    }

    private static func reflect(_ type: Model.Type) throws -> ModelMapping {
        let prototype = type.init()
        let reflected = try reflectColumnFields(of: type, prototype: prototype)
        let base = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        var columns: [ColumnSchema] = []
        var fields: [Field] = []
        var indexByName: [String: Int] = [:]
        for field in reflected {
            guard let (offset, kind) = field.column else { continue }
            let declaration = kind.declaration(base + offset)
            let name = declaration.name ?? field.propertyName
            columns.append(ColumnSchema(
                name: name, type: kind.sqlType, isNullable: kind.isNullable,
                index: declaration.index, defaultValue: declaration.value))
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
        return ModelMapping(table: TableMapping(schema: schema), fields: fields, hooks: hooks, indexByName: indexByName)
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
