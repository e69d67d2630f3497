/// Automatic migration: each table is checked (and created or extended) the first time
/// this database uses it.
extension Database {
    /// Automatic migration of several tables in one transaction (for `migrate(_:)`):
    /// all of their additions are applied, or none.
    /// - Returns: each table's drift as found before applying.
    package func migrateAutomatically(_ tables: [TableEngine]) throws -> [TableDrift] {
        try withConnection { connection in
            var drifts: [TableDrift] = []
            try transaction {
                for table in tables {
                    let drift = try table.schema.drift(in: connection)
                    if drift.hasAdditions { try table.schema.applyAdditions(drift, in: connection) }
                    drifts.append(drift)
                }
            }
            for (table, drift) in zip(tables, drifts) {
                preparedTables.withLock { _ = $0.insert(table.serial) }
                if drift.hasLeftovers { logLeftovers(drift) }
            }
            return drifts
        }
    }

    /// Migrates the table the first time this database uses it.
    func prepare(_ table: TableEngine) throws {
        guard automaticMigrations, !preparedTables.withLock({ $0.contains(table.serial) }) else { return }
        try withConnection { _ in
            guard !preparedTables.withLock({ $0.contains(table.serial) }) else { return }
            try migrate(table.schema)
            preparedTables.withLock { _ = $0.insert(table.serial) }
        }
    }

    /// Automatic migration of one table: creates it, adds missing columns and
    /// indexes, all in one transaction, and never drops or rewrites anything;
    /// what it leaves alone (extra columns, type mismatches) goes to the log.
    private func migrate(_ schema: TableSchema) throws {
        let drift = try schema.drift(in: connection)
        if drift.hasAdditions {
            try transaction { try schema.applyAdditions(drift, in: connection) }
        }
        if drift.hasLeftovers { logLeftovers(drift) }
    }

    private func logLeftovers(_ drift: TableDrift) {
        let leftovers = TableDrift(table: drift.table, extraColumns: drift.extraColumns, typeMismatches: drift.typeMismatches)
        log("schema drift: \(leftovers)")
    }

    /// Forgets which tables automatic migration checked, so that the next use checks
    /// again (after a rollback undid a `CREATE`, or versioned migrations changed the schema).
    package func forgetCheckedTables() {
        preparedTables.withLock { $0.removeAll() }
    }

    /// Runs `body` with foreign keys enforced only by an explicit check: SQLite ignores
    /// `PRAGMA foreign_keys` inside a transaction, so a table rebuild turns them off
    /// around its transaction (and checks with `foreign_key_check` inside it).
    @discardableResult
    package func withForeignKeysDeferredToCheck<R>(_ body: () throws -> R) throws -> R {
        try withConnection { connection in
            guard connection.transactionDepth == 0 else { return try body() }
            try connection.execute("PRAGMA foreign_keys=OFF")
            defer { try? connection.execute("PRAGMA foreign_keys=ON") }
            return try body()
        }
    }
}
