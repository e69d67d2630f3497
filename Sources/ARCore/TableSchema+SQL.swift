#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SQL text generated from a ``TableSchema``, in an engine's dialect. Values are always `?`
/// parameters, except column defaults in DDL, which engines do not bind and which come from
/// the model's declaration, written as escaped literals.
extension TableSchema {
    /// The result columns every record query selects, in this order.
    package var selectList: String {
        ([headerKeySQL] + allColumnNames.dropFirst().map(\.quotedIdentifier)).joined(separator: ", ")
    }

    /// What a record query selects first, into the record's header: the integer key column, or
    /// for a `UUID` or `String` key (held by its declared column) a constant `0`, which marks
    /// a record read from the table as saved.
    package var headerKeySQL: String {
        primaryKey.isAutoincrement ? primaryKey.name.quotedIdentifier : Self.savedMarkSQL
    }

    /// The constant a table with a `UUID` or `String` key selects as its header's id (a
    /// `bigint` on PostgreSQL, as an integer id is).
    package static let savedMarkSQL = "CAST(0 AS BIGINT)"

    /// The result columns of ``selectList`` as ``SelectedColumn``s.
    package var selectedColumns: [SelectedColumn] {
        [primaryKey.isAutoincrement ? .column(primaryKey.name) : .expression(Self.savedMarkSQL)]
            + allColumnNames.dropFirst().map(SelectedColumn.column)
    }

    /// The key column's name, quoted: what `WHERE … = ?` of a find, update and delete compares.
    package var quotedKey: String { primaryKey.name.quotedIdentifier }

    /// `CREATE TABLE IF NOT EXISTS` with the implied columns and the declared ones.
    /// - Throws: `.invalidModel` for a name the engine cannot hold.
    package func createTableSQL(_ dialect: any SQLDialect) throws -> String {
        try dialect.validateName(name, of: "table")
        var definitions = [
            "\("createdAt".quotedIdentifier) \(dialect.columnType(.real, .plain))",
            "\("updatedAt".quotedIdentifier) \(dialect.columnType(.real, .plain))",
        ]
        if primaryKey.isAutoincrement {
            try dialect.validateName(primaryKey.name, of: "column")
            definitions.insert(dialect.primaryKeyDefinition(named: primaryKey.name), at: 0)
        }
        definitions += try columns.indices.map { index in
            try columns[index].definitionSQL(dialect, isPrimaryKey: index == keyIndex)
        }
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
        let condition = ([primaryKey.name] + locking).map { "\($0.quotedIdentifier) = ?" }.joined(separator: " AND ")
        return "UPDATE \(name.quotedIdentifier) SET \(assignments.joined(separator: ", ")) WHERE \(condition)"
    }

    /// `DELETE FROM "T" WHERE "id" = ? AND "lockVersion" = ?`, for a table locked optimistically.
    package var lockedDeleteSQL: String? {
        lockingIndex.map { "\(deleteSQL) AND \(columns[$0].name.quotedIdentifier) = ?" }
    }

    package var selectAllSQL: String { "SELECT \(selectList) FROM \(name.quotedIdentifier)" }

    package var findSQL: String { "\(selectAllSQL) WHERE \(quotedKey) = ?" }

    package var deleteSQL: String { "DELETE FROM \(name.quotedIdentifier) WHERE \(quotedKey) = ?" }
}

extension ColumnSchema {
    /// `"name" TEXT NOT NULL DEFAULT ''`, `"groupId" INTEGER REFERENCES "Group"("id") DEFERRABLE
    /// INITIALLY DEFERRED`, in the dialect's types.
    /// - Throws: `.invalidModel` for a name the engine cannot hold.
    /// With `isPrimaryKey` (a `UUID` or `String` key), `"code" TEXT NOT NULL PRIMARY KEY`: never
    /// `NULL` (SQLite would take it in a key that is not an integer), with no default.
    package func definitionSQL(_ dialect: any SQLDialect, isPrimaryKey: Bool = false) throws -> String {
        try dialect.validateName(name, of: "column")
        var sql = "\(name.quotedIdentifier) \(dialect.columnType(type, kind))"
        if isPrimaryKey { return sql + " NOT NULL PRIMARY KEY" }
        if !isNullable { sql += " NOT NULL" }
        if !defaultValue.isNull { sql += " DEFAULT \(dialect.defaultLiteral(defaultValue, type, kind))" }
        if let references {
            sql += " REFERENCES \(references.quotedIdentifier)(\(referencedColumn.quotedIdentifier)) DEFERRABLE INITIALLY DEFERRED"
        }
        return sql
    }
}
