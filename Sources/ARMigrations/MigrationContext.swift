import ARCore

/// What a migration step can do. Every change runs inside the step's transaction.
public struct MigrationContext: Sendable {
    let database: Database

    /// Runs one SQL statement with bound arguments (anything the named operations do not cover).
    public func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        try database.execute(sql, arguments)
    }

    /// Renames a table (`ALTER TABLE … RENAME TO`, which also updates its indexes and triggers).
    public func renameTable(_ table: String, to newName: String) throws {
        try requireTable(table)
        try execute("ALTER TABLE \(table.quotedIdentifier) RENAME TO \(newName.quotedIdentifier)")
    }

    /// Renames a column (`ALTER TABLE … RENAME COLUMN`, which also updates indexes that use it).
    public func renameColumn(_ column: String, to newName: String, in table: String) throws {
        try requireColumn(column, in: table)
        try execute("ALTER TABLE \(table.quotedIdentifier) RENAME COLUMN \(column.quotedIdentifier) TO \(newName.quotedIdentifier)")
    }

    /// Drops a column by rebuilding the table; indexes on other columns are recreated.
    public func dropColumn(_ column: String, from table: String) throws {
        try requireColumn(column, in: table)
        try rebuild(table) { columns in columns.filter { $0.name.lowercased() != column.lowercased() } }
    }

    /// Changes a column's declared type by rebuilding the table. Values are copied as
    /// they are; SQLite applies the new type's affinity (text `'42'` into INTEGER becomes 42).
    public func changeColumnType(_ column: String, in table: String, to type: SQLType) throws {
        try requireColumn(column, in: table)
        try rebuild(table) { columns in
            columns.map { existing in
                var changed = existing
                if existing.name.lowercased() == column.lowercased() { changed.type = type.rawValue }
                return changed
            }
        }
    }

    // MARK: The table-rebuild procedure

    /// A column as the table declares it.
    struct ColumnDefinition {
        var name: String
        var type: String
        var notNull: Bool
        var defaultSQL: String?
        var primaryKey: Bool

        var sql: String {
            var text = "\(name.quotedIdentifier) \(type)"
            if primaryKey { text += " PRIMARY KEY" }
            if notNull { text += " NOT NULL" }
            if let defaultSQL { text += " DEFAULT \(defaultSQL)" }
            return text
        }
    }

    /// SQLite's procedure for schema changes ALTER TABLE cannot make: create the new
    /// table, copy the rows, drop the old one, rename, recreate indexes and triggers,
    /// then check foreign keys. Runs inside the step's transaction.
    func rebuild(_ table: String, _ transform: ([ColumnDefinition]) -> [ColumnDefinition]) throws {
        let columns = try definitions(of: table)
        let kept = transform(columns)
        let temporary = "activerecord_rebuild_\(table)"
        let keptNames = Set(kept.map { $0.name.lowercased() })
        // Indexes to recreate: those whose columns all remain (read before the old table goes).
        var schemaSQL: [String] = []
        for row in try database.rows(
            "SELECT name, sql FROM sqlite_master WHERE tbl_name = ? AND type = 'index' AND sql IS NOT NULL", [.text(table)]) {
            guard let index = row[0].textValue, let sql = row[1].textValue else { continue }
            let indexed = try database.rows("SELECT name FROM pragma_index_info(?)", [.text(index)]).compactMap { $0[0].textValue }
            if indexed.allSatisfy({ keptNames.contains($0.lowercased()) }) { schemaSQL.append(sql) }
        }
        schemaSQL += try database.rows(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type = 'trigger' AND sql IS NOT NULL", [.text(table)])
            .compactMap { $0[0].textValue }
        let constraints = try tableConstraints(of: table, keeping: keptNames)
        let body = (kept.map(\.sql) + constraints).joined(separator: ", ")
        try execute("CREATE TABLE \(temporary.quotedIdentifier) (\(body))")
        let names = kept.map { $0.name.quotedIdentifier }.joined(separator: ", ")
        try execute("INSERT INTO \(temporary.quotedIdentifier) (\(names)) SELECT \(names) FROM \(table.quotedIdentifier)")
        try execute("DROP TABLE \(table.quotedIdentifier)")
        try execute("ALTER TABLE \(temporary.quotedIdentifier) RENAME TO \(table.quotedIdentifier)")
        for sql in schemaSQL { try execute(sql) }
        let problems = try database.rows("SELECT * FROM pragma_foreign_key_check(?)", [.text(table)])
        guard problems.isEmpty else {
            throw ActiveRecordError(.constraint, "rebuilding \(table) broke \(problems.count) foreign key reference(s)")
        }
    }

    /// The table's FOREIGN KEY and UNIQUE constraints (which `pragma_table_info` does not show)
    /// whose columns all remain. CHECK constraints and collations are not carried over.
    func tableConstraints(of table: String, keeping kept: Set<String>) throws -> [String] {
        var constraints: [String] = []
        var keys: [Int64: (table: String, from: [String], to: [String], onUpdate: String, onDelete: String)] = [:]
        for row in try database.rows(
            "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            [.text(table)]) {
            guard case .integer(let id) = row[0] else { continue }
            var key = keys[id] ?? (row[1].textValue ?? "", [], [], row[4].textValue ?? "NO ACTION", row[5].textValue ?? "NO ACTION")
            key.from.append(row[2].textValue ?? "")
            if let to = row[3].textValue { key.to.append(to) }
            keys[id] = key
        }
        for (_, key) in keys.sorted(by: { $0.key < $1.key }) where key.from.allSatisfy({ kept.contains($0.lowercased()) }) {
            let target = key.to.isEmpty ? "" : "(" + key.to.map(\.quotedIdentifier).joined(separator: ", ") + ")"
            constraints.append(
                "FOREIGN KEY (" + key.from.map(\.quotedIdentifier).joined(separator: ", ") + ") REFERENCES "
                    + key.table.quotedIdentifier + target + " ON UPDATE \(key.onUpdate) ON DELETE \(key.onDelete)")
        }
        for row in try database.rows("SELECT name FROM pragma_index_list(?) WHERE origin = 'u'", [.text(table)]) {
            guard let index = row[0].textValue else { continue }
            let columns = try database.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(index)])
                .compactMap { $0[0].textValue }
            if !columns.isEmpty, columns.allSatisfy({ kept.contains($0.lowercased()) }) {
                constraints.append("UNIQUE (" + columns.map(\.quotedIdentifier).joined(separator: ", ") + ")")
            }
        }
        return constraints
    }

    func definitions(of table: String) throws -> [ColumnDefinition] {
        try requireTable(table)
        return try database.rows("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", [.text(table)])
            .map { row in
                ColumnDefinition(
                    name: row[0].textValue ?? "", type: row[1].textValue ?? "", notNull: row[2] == .integer(1),
                    defaultSQL: row[3].textValue, primaryKey: row[4] == .integer(1))
            }
    }

    private func requireTable(_ table: String) throws {
        guard try database.tableNames().contains(table) else {
            throw ActiveRecordError(.unknownTable, "there is no table \(table)")
        }
    }

    private func requireColumn(_ column: String, in table: String) throws {
        let columns = try definitions(of: table).map(\.name)
        guard columns.contains(where: { $0.lowercased() == column.lowercased() }) else {
            throw ActiveRecordError(
                .unknownColumn, "\(table) has no column '\(column)'; its columns are: \(columns.joined(separator: ", "))")
        }
    }
}

extension DatabaseValue {
    var textValue: String? {
        switch self {
        case .text(let text): text
        case .integer(let value): String(value)
        case .real(let value): String(value)
        default: nil
        }
    }
}
