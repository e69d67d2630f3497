import Foundation

/// SQL text generated from a ``TableSchema``. Values are always `?`
/// parameters, except column defaults in DDL, which SQLite cannot bind and
/// which come from the model's declaration, written as escaped literals.
extension TableSchema {
    /// The result columns every record query selects, in this order.
    package var selectList: String {
        (["id", "createdAt", "updatedAt"] + columns.map(\.name)).map(\.quotedIdentifier).joined(separator: ", ")
    }

    package var createTableSQL: String {
        var definitions = [
            "\("id".quotedIdentifier) INTEGER PRIMARY KEY",
            "\("createdAt".quotedIdentifier) REAL",
            "\("updatedAt".quotedIdentifier) REAL",
        ]
        definitions += columns.map(\.definitionSQL)
        return "CREATE TABLE IF NOT EXISTS \(name.quotedIdentifier) (\(definitions.joined(separator: ", ")))"
    }

    package var createIndexSQL: [String] {
        columns.compactMap { column in
            guard let index = column.index else { return nil }
            return "CREATE \(index == .unique ? "UNIQUE " : "")INDEX IF NOT EXISTS "
                + "\(indexName(for: column).quotedIdentifier) ON \(name.quotedIdentifier) (\(column.name.quotedIdentifier))"
        }
    }

    /// `User_email_unique` or `User_name_index`.
    package func indexName(for column: ColumnSchema) -> String {
        "\(name)_\(column.name)_\(column.index == .unique ? "unique" : "index")"
    }

    /// `INSERT INTO "T" ("createdAt", "updatedAt", c1, …) VALUES (?, ?, ?, …)`.
    package var insertSQL: String {
        let names = (["createdAt", "updatedAt"] + columns.map(\.name)).map(\.quotedIdentifier)
        let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
        return "INSERT INTO \(name.quotedIdentifier) (\(names.joined(separator: ", "))) VALUES (\(marks))"
    }

    /// `UPDATE "T" SET c = ?, …, "updatedAt" = ? WHERE "id" = ?` for the given column indexes.
    package func updateSQL(columns indexes: [Int]) -> String {
        let assignments = (indexes.map { columns[$0].name } + ["updatedAt"])
            .map { "\($0.quotedIdentifier) = ?" }
        return "UPDATE \(name.quotedIdentifier) SET \(assignments.joined(separator: ", ")) WHERE \("id".quotedIdentifier) = ?"
    }

    package var selectAllSQL: String { "SELECT \(selectList) FROM \(name.quotedIdentifier)" }

    package var findSQL: String { "\(selectAllSQL) WHERE \("id".quotedIdentifier) = ?" }

    package var deleteSQL: String { "DELETE FROM \(name.quotedIdentifier) WHERE \("id".quotedIdentifier) = ?" }
}

extension ColumnSchema {
    /// `"name" TEXT NOT NULL DEFAULT ''`, `"groupId" INTEGER REFERENCES "Group"("id") DEFERRABLE INITIALLY DEFERRED`.
    package var definitionSQL: String {
        var sql = "\(name.quotedIdentifier) \(type.rawValue)"
        if !isNullable { sql += " NOT NULL" }
        if !defaultValue.isNull { sql += " DEFAULT \(defaultValue.sqlLiteral)" }
        if let references { sql += " REFERENCES \(references.quotedIdentifier)(\("id".quotedIdentifier)) DEFERRABLE INITIALLY DEFERRED" }
        return sql
    }
}

extension DatabaseValue {
    /// The value as an SQL literal, for DDL defaults only (SQLite cannot bind them).
    package var sqlLiteral: String {
        switch self {
        case .null: return "NULL"
        case .integer(let int): return String(int)
        case .real(let double):
            guard double.isFinite else { return double < 0 ? "-9e999" : "9e999" }
            return "\(double)"
        case .text(let text): return quoteSQL(text, with: "'")
        case .blob(let data): return "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }
}
