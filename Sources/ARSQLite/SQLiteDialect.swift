@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SQLite's SQL: storage classes in DDL (the seeds' on-disk format), `rowid` ids,
/// `BEGIN IMMEDIATE`, schema read through the `pragma_*` table functions, and the table
/// rebuild for the schema changes `ALTER TABLE` cannot make.
package struct SQLiteDialect: SQLDialect {
    package init() {}

    package var name: String { "SQLite" }

    // MARK: Tables

    package var primaryKeyDefinition: String { "\("id".quotedIdentifier) INTEGER PRIMARY KEY" }

    /// The storage class, whatever the kind: booleans are INTEGER 0/1, decimals and UUIDs TEXT.
    package func columnType(_ type: SQLType, _ kind: ColumnKind) -> String { type.rawValue }

    package func defaultLiteral(_ value: DatabaseValue, _ type: SQLType, _ kind: ColumnKind) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let int): return String(int)
        case .real(let double):
            guard double.isFinite else { return double < 0 ? "-9e999" : "9e999" }
            return "\(double)"
        case .text(let text): return quoteSQL(text, with: "'")
        case .blob(let data): return "X'" + data.hexDigits(uppercase: true) + "'"
        }
    }

    /// The same affinity (a column declared with no type matches anything).
    package func typeMatches(_ found: String, _ type: SQLType, _ kind: ColumnKind) -> Bool {
        found.isEmpty || affinity(of: found) == affinity(of: type.rawValue)
    }

    /// By affinity; SQLite has no narrower kinds (a boolean is an INTEGER).
    package func storage(ofDeclaredType type: String) -> (SQLType, ColumnKind) {
        switch affinity(of: type) {
        case "INTEGER": (.integer, .plain)
        case "REAL": (.real, .plain)
        case "BLOB": (type.isEmpty ? .text : .blob, .plain)
        default: (.text, .plain)
        }
    }

    package func validateName(_ name: String, of what: String) throws {}

    // MARK: Statements

    package func insertSQL(into table: String, columns: [String]) -> String {
        let marks = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        return "INSERT INTO \(table.quotedIdentifier) (\(columns.map(\.quotedIdentifier).joined(separator: ", "))) VALUES (\(marks))"
    }

    package func insertIgnoringConflictsSQL(into table: String, columns: [String]) -> String {
        "INSERT OR IGNORE" + insertSQL(into: table, columns: columns).dropFirst("INSERT".count)
    }

    /// SQLite's upsert (3.24) with `RETURNING` (3.35): PostgreSQL's syntax.
    package func upsertSQL(
        into table: String, columns: [String], conflictColumns: [String], updateColumns: [String], returning: [String]
    ) -> String {
        insertSQL(into: table, columns: columns) + onConflictUpdate(table, conflictColumns, updateColumns, returning)
    }

    /// SQLite's LIKE already has the meaning: ASCII case folded, no escape character unless given.
    package func like(_ value: String, _ pattern: String, escape: String?, negated: Bool) -> String {
        value + (negated ? " NOT LIKE " : " LIKE ") + pattern + (escape.map { " ESCAPE " + $0 } ?? "")
    }

    package func equalsIgnoringASCIICase(_ column: String) -> String { "\(column) = ? COLLATE NOCASE" }

    /// SQLite puts NULLs first when ascending already.
    package func orderTerm(_ expression: String, ascending: Bool) -> String {
        expression + (ascending ? " ASC" : " DESC")
    }

    package var unlimited: DatabaseValue { .integer(-1) }

    package func aggregate(_ function: String, _ expression: String) -> String { "\(function)(\(expression))" }

    /// Takes the write lock at once, so that a transaction never fails to upgrade a read lock;
    /// it then runs alone, serializable whatever level is asked.
    package func beginTransactionSQL(isolation: TransactionIsolation?) -> String { "BEGIN IMMEDIATE" }

    package func isolation(of requested: TransactionIsolation?) -> TransactionIsolation { .serializable }

    /// Nothing: the transaction holds the database's write lock from `BEGIN IMMEDIATE` on, so
    /// no other connection writes a row it read until it ends.
    package func rowLockClause(_ lock: RowLock, of table: String) -> String { "" }

    /// An SQLite statement steps incrementally outside any transaction.
    package var beginCursorTransactionSQL: String? { nil }

    /// `BEGIN IMMEDIATE` already makes the transaction the only writer.
    package func schemaLockSQL() -> [String] { [] }

    package var failedStatementAbortsTransaction: Bool { false }

    // MARK: Names

    package func sameName(_ lhs: String, _ rhs: String) -> Bool { isSameName(lhs, rhs) }

    // MARK: Reading the schema

    package func tableNames(_ connection: Connection) throws -> [String] {
        try connection.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        ).compactMap { $0.first?.schemaText }
    }

    package func columns(of table: String, _ connection: Connection) throws -> [ColumnDescription] {
        try connection.rows(#"SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)"#, [.text(table)])
            .map { row in
                ColumnDescription(
                    name: row[0].schemaText ?? "", type: row[1].schemaText ?? "", isNullable: row[2] != .integer(1),
                    defaultSQL: row[3].schemaText, isPrimaryKey: row[4] != .integer(0))
            }
    }

    package func indexes(of table: String, _ connection: Connection) throws -> [IndexDescription] {
        try connection.rows(#"SELECT name, "unique", partial FROM pragma_index_list(?)"#, [.text(table)]).compactMap { row in
            guard let name = row[0].schemaText else { return nil }
            let columns = try connection.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(name)])
                .compactMap { $0[0].schemaText }
            return IndexDescription(name: name, isUnique: row[1] == .integer(1), columns: columns, isPartial: row[2] == .integer(1))
        }
    }

    package func foreignKeys(of table: String, _ connection: Connection) throws -> [ForeignKeyDescription] {
        try connection.rows(#"SELECT "from", "table", "to" FROM pragma_foreign_key_list(?)"#, [.text(table)]).compactMap { row in
            guard let from = row[0].schemaText, let parent = row[1].schemaText else { return nil }
            return ForeignKeyDescription(column: from, table: parent, referencedColumn: row[2].schemaText ?? "id")
        }
    }

    // MARK: Changing it

    /// SQLite ignores `PRAGMA foreign_keys` inside a transaction, so a step (which may rebuild
    /// a table: drop and remake it) runs with them off around its transaction, and the rebuild
    /// checks them with `foreign_key_check` before the step commits.
    package func aroundMigrationStep<R>(_ connection: Connection, _ body: () throws -> R) throws -> R {
        guard connection.transactionDepth == 0 else { return try body() }
        try connection.execute("PRAGMA foreign_keys=OFF")
        defer { try? connection.execute("PRAGMA foreign_keys=ON") }
        return try body()
    }

    /// `DELETE FROM` each table (foreign keys are deferred to the commit, where no row is left
    /// to break them). A rowid table's next id is one more than its largest, so 1 once it is
    /// empty; an `AUTOINCREMENT` table (made with raw SQL) keeps its counter in
    /// `sqlite_sequence`, whose rows for these tables go too.
    package func clear(_ tables: [String], _ connection: Connection) throws {
        for table in tables { try connection.execute("DELETE FROM \(table.quotedIdentifier)") }
        let hasSequences = try !connection.rows("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").isEmpty
        guard hasSequences else { return }
        let marks = Array(repeating: "?", count: tables.count).joined(separator: ", ")
        try connection.execute("DELETE FROM sqlite_sequence WHERE name IN (\(marks))", tables.map { .text($0) })
    }

    /// SQLite has no `ALTER INDEX … RENAME`: the index is made again under the new name.
    package func renameIndex(
        _ index: IndexDescription, to newName: String, on table: String, columns: [String], _ connection: Connection
    ) throws {
        try connection.execute("DROP INDEX \(index.name.quotedIdentifier)")
        try connection.execute(
            "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX \(newName.quotedIdentifier) ON \(table.quotedIdentifier) ("
                + columns.map(\.quotedIdentifier).joined(separator: ", ") + ")")
    }

    package func dropColumn(_ column: String, from table: String, _ connection: Connection) throws {
        try SQLiteRebuild(table: table, connection: connection).run { columns in
            columns.filter { !isSameName($0.name, column) }
        }
    }

    /// Values are copied as they are; SQLite applies the new type's affinity (text `'42'` into
    /// INTEGER becomes 42).
    package func changeColumnType(
        _ column: String, in table: String, to type: SQLType, _ kind: ColumnKind, _ connection: Connection
    ) throws {
        try SQLiteRebuild(table: table, connection: connection).run { columns in
            columns.map { definition in
                var changed = definition
                if isSameName(definition.name, column) { changed.type = type.rawValue }
                return changed
            }
        }
    }

    package func migrationsTableSQL(_ table: String) -> String {
        "CREATE TABLE IF NOT EXISTS \(table.quotedIdentifier) (name TEXT PRIMARY KEY, appliedAt REAL NOT NULL)"
    }

    package var migrationsOrder: String { "rowid" }
}

/// SQLite's type affinity of a declared type name (the rules of section 3.1 of its datatype page).
package func affinity(of type: String) -> String {
    let upper = type.uppercased()
    if upper.contains("INT") { return "INTEGER" }
    if upper.contains("CHAR") || upper.contains("CLOB") || upper.contains("TEXT") { return "TEXT" }
    if upper.contains("BLOB") || upper.isEmpty { return "BLOB" }
    if upper.contains("REAL") || upper.contains("FLOA") || upper.contains("DOUB") { return "REAL" }
    return "NUMERIC"
}

