@_spi(Engines) import ARCore

extension Database {
    /// The database's schema as deterministic SQL text, for a test to compare with a
    /// checked-in file: each table (sorted by name; not the library's own bookkeeping tables)
    /// as a `CREATE TABLE` with its columns in their order (type as the engine reports it,
    /// `PRIMARY KEY`, `NOT NULL`, `DEFAULT`), its foreign keys (sorted by column, with their
    /// actions) and its CHECK constraints (sorted by name), then its indexes (sorted by name).
    /// Nothing volatile: no OIDs, no schema names, no `sqlite_sequence`, no row counts.
    ///
    /// ```swift
    /// let expected = try String(contentsOfFile: "Tests/Fixtures/schema.sqlite.sql", encoding: .utf8)
    /// #expect(try db.schemaSQL() == expected)
    /// ```
    ///
    /// Types and expressions are each engine's own (SQLite: as written; PostgreSQL: as
    /// `pg_catalog` prints them, `bigint`, `(price > (0)::double precision)`), so keep one
    /// file per engine. A partial index shows its columns and says `-- partial` (its condition
    /// is not shown); on SQLite, CHECK constraints written inside a column's definition are not
    /// listed, nor are views and triggers.
    /// - Throws: the engine's errors; `.misuse` for an engine that cannot describe its constraints.
    public func schemaSQL() throws -> String {
        try withSchema { connection, dialect in
            guard let steps = dialect as? any SchemaStepsDialect else {
                throw ActiveRecordError(.misuse, "the \(dialect.name) engine cannot dump its schema")
            }
            let tables = try dialect.tableNames(connection)
                .filter { name in !Self.bookkeepingTables.contains { dialect.sameName($0, name) } }
                .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            // One table after another, a blank line between.
            return try tables.map { try Self.dump($0, steps, connection) }.joined(separator: "\n")
        }
    }

    private static func dump(_ table: String, _ dialect: any SchemaStepsDialect, _ connection: Connection) throws -> String {
        func byBytes(_ lhs: String, _ rhs: String) -> Bool { lhs.utf8.lexicographicallyPrecedes(rhs.utf8) }
        var definitions = try dialect.dumpedColumns(of: table, connection).map { column in
            var line = column.name.quotedIdentifier
            if !column.type.isEmpty { line += " " + column.type }
            if column.isPrimaryKey { line += " PRIMARY KEY" }
            if !column.isNullable { line += " NOT NULL" }
            if let value = column.defaultSQL { line += " DEFAULT " + value }
            return line
        }
        definitions += try dialect.foreignKeyDetails(of: table, connection).sorted { byBytes($0.column, $1.column) }.map { key in
            "FOREIGN KEY (\(key.column.quotedIdentifier)) REFERENCES \(key.table.quotedIdentifier) (\(key.referencedColumn.quotedIdentifier))"
                + " ON DELETE \(key.onDelete)" + (key.onUpdate == "NO ACTION" ? "" : " ON UPDATE \(key.onUpdate)")
                + (key.isDeferred ? " DEFERRABLE INITIALLY DEFERRED" : "")
        }
        definitions += try dialect.checks(of: table, connection)
            .sorted { byBytes($0.name ?? "\u{10FFFF}", $1.name ?? "\u{10FFFF}") || ($0.name == $1.name && byBytes($0.expression, $1.expression)) }
            .map { check in (check.name.map { "CONSTRAINT \($0.quotedIdentifier) " } ?? "") + "CHECK (\(check.expression))" }
        var text = "CREATE TABLE \(table.quotedIdentifier) (\n" + definitions.map { "  " + $0 }.joined(separator: ",\n") + "\n);\n"
        for index in try dialect.indexes(of: table, connection).sorted(by: { byBytes($0.name, $1.name) }) {
            text += "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX \(index.name.quotedIdentifier) ON \(table.quotedIdentifier) ("
                + index.columns.map(\.quotedIdentifier).joined(separator: ", ") + ")" + (index.isPartial ? "; -- partial\n" : ";\n")
        }
        return text
    }
}
