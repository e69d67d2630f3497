import Foundation

/// SQL text generated from a ``TableSchema``, in an engine's dialect. Values are always `?`
/// parameters, except column defaults in DDL, which engines do not bind and which come from
/// the model's declaration, written as escaped literals.
extension TableSchema {
    /// The result columns every record query selects, in this order.
    package var selectList: String {
        allColumnNames.map(\.quotedIdentifier).joined(separator: ", ")
    }

    /// `CREATE TABLE IF NOT EXISTS` with the implied columns and the declared ones.
    /// - Throws: `.invalidModel` for a name the engine cannot hold.
    package func createTableSQL(_ dialect: any SQLDialect) throws -> String {
        try dialect.validateName(name, of: "table")
        var definitions = [
            dialect.primaryKeyDefinition,
            "\("createdAt".quotedIdentifier) \(dialect.columnType(.real, .plain))",
            "\("updatedAt".quotedIdentifier) \(dialect.columnType(.real, .plain))",
        ]
        definitions += try columns.map { try $0.definitionSQL(dialect) }
        return "CREATE TABLE IF NOT EXISTS \(name.quotedIdentifier) (\(definitions.joined(separator: ", ")))"
    }

    /// `CREATE [UNIQUE] INDEX IF NOT EXISTS "T_c_index" ON "T" ("c")` for `column`.
    package func createIndexSQL(for column: ColumnSchema) -> String? {
        guard let index = column.index else { return nil }
        return "CREATE \(index == .unique ? "UNIQUE " : "")INDEX IF NOT EXISTS "
            + "\(indexName(for: column).quotedIdentifier) ON \(name.quotedIdentifier) (\(column.name.quotedIdentifier))"
    }

    /// `User_email_unique` or `User_name_index`.
    package func indexName(for column: ColumnSchema) -> String {
        "\(name)_\(column.name)_\(column.index == .unique ? "unique" : "index")"
    }

    /// The columns an `INSERT` of a new record writes: the timestamps, then the declared columns.
    package var insertColumns: [String] { ["createdAt", "updatedAt"] + columns.map(\.name) }

    /// `UPDATE "T" SET c = ?, …, "updatedAt" = ? WHERE "id" = ?` for the given column indexes.
    /// With optimistic locking (``lockingIndex``): `… SET c = ?, …, "lockVersion" = ?, "updatedAt" = ?
    /// WHERE "id" = ? AND "lockVersion" = ?` (the indexes then leave the locking column out).
    package func updateSQL(columns indexes: [Int]) -> String {
        let locking = lockingIndex.map { [columns[$0].name] } ?? []
        let assignments = (indexes.map { columns[$0].name } + locking + ["updatedAt"])
            .map { "\($0.quotedIdentifier) = ?" }
        let condition = (["id"] + locking).map { "\($0.quotedIdentifier) = ?" }.joined(separator: " AND ")
        return "UPDATE \(name.quotedIdentifier) SET \(assignments.joined(separator: ", ")) WHERE \(condition)"
    }

    /// `DELETE FROM "T" WHERE "id" = ? AND "lockVersion" = ?`, for a table locked optimistically.
    package var lockedDeleteSQL: String? {
        lockingIndex.map { "\(deleteSQL) AND \(columns[$0].name.quotedIdentifier) = ?" }
    }

    package var selectAllSQL: String { "SELECT \(selectList) FROM \(name.quotedIdentifier)" }

    package var findSQL: String { "\(selectAllSQL) WHERE \("id".quotedIdentifier) = ?" }

    package var deleteSQL: String { "DELETE FROM \(name.quotedIdentifier) WHERE \("id".quotedIdentifier) = ?" }
}

extension ColumnSchema {
    /// `"name" TEXT NOT NULL DEFAULT ''`, `"groupId" INTEGER REFERENCES "Group"("id") DEFERRABLE
    /// INITIALLY DEFERRED`, in the dialect's types.
    /// - Throws: `.invalidModel` for a name the engine cannot hold.
    package func definitionSQL(_ dialect: any SQLDialect) throws -> String {
        try dialect.validateName(name, of: "column")
        var sql = "\(name.quotedIdentifier) \(dialect.columnType(type, kind))"
        if !isNullable { sql += " NOT NULL" }
        if !defaultValue.isNull { sql += " DEFAULT \(dialect.defaultLiteral(defaultValue, type, kind))" }
        if let references { sql += " REFERENCES \(references.quotedIdentifier)(\("id".quotedIdentifier)) DEFERRABLE INITIALLY DEFERRED" }
        return sql
    }
}
