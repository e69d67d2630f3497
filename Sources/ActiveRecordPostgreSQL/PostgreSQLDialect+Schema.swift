@_spi(Engines) import ARCore

/// PostgreSQL's schema steps: `ALTER TABLE … ADD CONSTRAINT` / `DROP CONSTRAINT`, in place
/// (and transactional, as all its DDL is). Constraints are read from `pg_constraint`, in the
/// connection's current schema.
extension PostgreSQLDialect: SchemaStepsDialect {
    /// The constraint takes PostgreSQL's own name (`<table>_<column>_fkey`, cut to 63 bytes).
    func addForeignKey(
        _ column: String, in table: String, references parent: String, column referencedColumn: String,
        onDelete action: ForeignKeyAction, _ connection: Connection
    ) throws {
        try connection.execute(
            "ALTER TABLE \(table.quotedIdentifier) ADD FOREIGN KEY (\(column.quotedIdentifier)) REFERENCES "
                + "\(parent.quotedIdentifier)(\(referencedColumn.quotedIdentifier)) ON DELETE \(action.sql) DEFERRABLE INITIALLY DEFERRED")
    }

    func dropForeignKey(_ column: String, in table: String, _ connection: Connection) throws {
        let names = try connection.rows("""
            SELECT con.conname FROM pg_catalog.pg_constraint con JOIN pg_catalog.pg_class c ON c.oid = con.conrelid \
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
            JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1] \
            WHERE con.contype = 'f' AND c.relname = ? AND n.nspname = current_schema() \
            AND cardinality(con.conkey) = 1 AND a.attname = ? ORDER BY con.conname
            """, [.text(table), .text(column)]).compactMap { $0.first?.schemaText }
        for name in names {
            try connection.execute("ALTER TABLE \(table.quotedIdentifier) DROP CONSTRAINT \(name.quotedIdentifier)")
        }
    }

    func addCheck(_ name: String, _ expression: String, to table: String, _ connection: Connection) throws {
        try validateName(name, of: "constraint")
        try connection.execute("ALTER TABLE \(table.quotedIdentifier) ADD CONSTRAINT \(name.quotedIdentifier) CHECK (\(expression))")
    }

    func dropCheck(_ name: String, from table: String, _ connection: Connection) throws {
        try connection.execute("ALTER TABLE \(table.quotedIdentifier) DROP CONSTRAINT \(name.quotedIdentifier)")
    }

    /// Each expression as PostgreSQL prints it back (`pg_get_constraintdef`, normalised:
    /// `price > 0` on a `DOUBLE PRECISION` column reads `price > (0)::double precision`).
    func checks(of table: String, _ connection: Connection) throws -> [CheckDescription] {
        try connection.rows("""
            SELECT con.conname, pg_catalog.pg_get_constraintdef(con.oid) FROM pg_catalog.pg_constraint con \
            JOIN pg_catalog.pg_class c ON c.oid = con.conrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
            WHERE con.contype = 'c' AND c.relname = ? AND n.nspname = current_schema() ORDER BY con.conname
            """, [.text(table)]).compactMap { row in
            guard let name = row[0].schemaText, var definition = row[1].schemaText else { return nil }
            // `CHECK (<expression>)`, perhaps followed by `NOT VALID`: the text between the outer parentheses.
            if definition.hasPrefix("CHECK ("), let close = definition.lastIndex(of: ")") {
                definition = String(definition[definition.index(definition.startIndex, offsetBy: 7)..<close])
            }
            return CheckDescription(name: name, expression: definition)
        }
    }

    func foreignKeyDetails(of table: String, _ connection: Connection) throws -> [ForeignKeyDetail] {
        try connection.rows("""
            SELECT a.attname, fc.relname, fa.attname, CAST(con.confdeltype AS text), CAST(con.confupdtype AS text), con.condeferred \
            FROM pg_catalog.pg_constraint con JOIN pg_catalog.pg_class c ON c.oid = con.conrelid \
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace JOIN pg_catalog.pg_class fc ON fc.oid = con.confrelid \
            CROSS JOIN LATERAL unnest(con.conkey, con.confkey) AS k(attnum, referenced) \
            JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum \
            JOIN pg_catalog.pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = k.referenced \
            WHERE con.contype = 'f' AND c.relname = ? AND n.nspname = current_schema() ORDER BY con.conname, a.attnum
            """, [.text(table)]).compactMap { row in
            guard let column = row[0].schemaText, let parent = row[1].schemaText, let referenced = row[2].schemaText else { return nil }
            return ForeignKeyDetail(
                column: column, table: parent, referencedColumn: referenced, onDelete: Self.action(row[3].schemaText),
                onUpdate: Self.action(row[4].schemaText), isDeferred: row[5] == .integer(1))
        }
    }

    /// `pg_constraint`'s one-letter action as SQL.
    private static func action(_ code: String?) -> String {
        switch code {
        case "c": "CASCADE"
        case "n": "SET NULL"
        case "r": "RESTRICT"
        case "d": "SET DEFAULT"
        default: "NO ACTION"
        }
    }

    /// Identity columns say so after their type (`bigint GENERATED BY DEFAULT AS IDENTITY`).
    func dumpedColumns(of table: String, _ connection: Connection) throws -> [ColumnDescription] {
        let identities = try connection.rows("""
            SELECT a.attname, CAST(a.attidentity AS text) FROM pg_catalog.pg_attribute a \
            JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
            WHERE c.relname = ? AND n.nspname = current_schema() AND a.attnum > 0 AND NOT a.attisdropped AND a.attidentity <> ''
            """, [.text(table)]).reduce(into: [String: String]()) { found, row in
            if let name = row[0].schemaText { found[name] = row[1].schemaText == "a" ? "ALWAYS" : "BY DEFAULT" }
        }
        return try columns(of: table, connection).map { column in
            var column = column
            if let identity = identities[column.name] { column.type += " GENERATED \(identity) AS IDENTITY" }
            return column
        }
    }
}
