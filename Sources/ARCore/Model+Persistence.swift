import Foundation

extension Model {
    /// Sets columns by name, as a dictionary. Nothing is set when one fails.
    /// - Throws: `.unknownColumn` or `.typeMismatch`, naming the column.
    public func set(_ values: [String: (any ColumnValue)?]) throws {
        let mapping = try mapping()
        var resolved: [(Int, DatabaseValue)] = []
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            let index = try mapping.columnIndex(name)
            resolved.append((index, try value?.toSQL() ?? .null))
        }
        let saved = try resolved.map { index, _ in try currentValue(index) }
        do {
            for (index, value) in resolved {
                do {
                    try assignColumn(index, value)
                } catch let error as ActiveRecordError {
                    throw ActiveRecordError(
                        error.code, "\(mapping.table.schema.name).\(mapping.table.schema.columns[index].name): \(error.message)")
                }
            }
        } catch {
            for ((index, _), value) in zip(resolved, saved) { try? assignColumn(index, value) }
            throw error
        }
    }

    /// A column's current value, by column (or property) name.
    /// - Throws: `.unknownColumn`.
    public func value(of column: String) throws -> DatabaseValue {
        switch column {
        case "id": return id.map { .integer($0) } ?? .null
        case "createdAt": return try createdAt?.toSQL() ?? .null
        case "updatedAt": return try updatedAt?.toSQL() ?? .null
        default: return try currentValue(try mapping().columnIndex(column))
        }
    }

    /// Saves the record: `INSERT` when new, else an `UPDATE` of only the
    /// changed columns (and `updatedAt`); no SQL at all when nothing changed.
    ///
    /// The table is created on first use when automatic migrations are on.
    /// - Throws: `.constraint` (unique index), `.invalidValue` (a value that
    ///   cannot be stored), `.notFound` (the row was deleted elsewhere),
    ///   `.misuse` (the record was dropped). The record is unchanged on error.
    public func save() throws { try mapping().table.save(self) }

    /// Deletes the record's row: `DELETE FROM "T" WHERE "id" = ?`.
    /// - Throws: `.misuse` for a new or already dropped record; `.notFound`
    ///   when the row was deleted elsewhere (the record counts as dropped).
    public func drop() throws { try mapping().table.drop(self) }

    /// Reads the record's row again, discarding unsaved changes.
    /// - Throws: `.notFound` when the record is new, dropped or deleted elsewhere.
    public func reload() throws { try mapping().table.reload(self) }
}
