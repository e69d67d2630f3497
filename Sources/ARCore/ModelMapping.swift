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

    package let table: TableMapping
    package let fields: [Field]
    /// Property name → column index, for look-ups by name (not on per-row paths).
    package let indexByName: [String: Int]

    private init(table: TableMapping, fields: [Field], indexByName: [String: Int]) {
        self.table = table
        self.fields = fields
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
        var indexByName: [String: Int] = [:]
        for (position, field) in reflected.enumerated() {
            let declaration = field.kind.declaration(base + field.offset)
            let name = declaration.name ?? field.propertyName
            columns.append(ColumnSchema(
                name: name, type: field.kind.sqlType, isNullable: field.kind.isNullable,
                index: declaration.index, defaultValue: declaration.value))
            indexByName[name] = position
            indexByName[field.propertyName] = position
        }
        withExtendedLifetime(prototype) {}
        let schema: TableSchema
        do {
            schema = try TableSchema(name: type.tableName, columns: columns)
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(.invalidModel, "model \(type): \(error.message)")
        }
        return ModelMapping(
            table: TableMapping(schema: schema),
            fields: reflected.map { field in
                let layout = field.kind.layout
                return Field(
                    valueOffset: field.offset + layout.value, originalOffset: field.offset + layout.original,
                    kind: field.kind)
            },
            indexByName: indexByName)
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
