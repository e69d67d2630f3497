/// Automatic migration: each table is checked (and created or extended) the first time
/// this database uses it.
extension Database {
    /// Automatic migration of several tables in one transaction (for `migrate(_:)`):
    /// all of their additions are applied, or none.
    /// - Returns: each table's drift as found before applying.
    package func migrateAutomatically(_ tables: [TableOperations]) throws -> [TableDrift] {
        try withConnection { connection in
            var drifts: [TableDrift] = []
            try transaction {
                try lockSchema(connection)
                for table in tables {
                    let drift = try table.schema.drift(in: connection)
                    if drift.hasAdditions { try table.schema.applyAdditions(drift, in: connection) }
                    drifts.append(drift)
                }
            }
            for (table, drift) in zip(tables, drifts) {
                markPrepared(table, connection)
                log(drift)
            }
            return drifts
        }
    }

    /// Migrates the table the first time this database uses it, after its parent tables
    /// (those its foreign keys reference: they must exist to create or write to it).
    ///
    /// A table prepared inside a transaction counts as prepared for other threads only once
    /// that transaction commits (until then they prepare it themselves, and wait for the
    /// schema lock or the writer, then find it); if it rolls back, the next use prepares it again.
    @inline(__always)
    func prepare(_ table: TableOperations) throws {
        // A loop over one table finds it here, in the caller, without taking the lock.
        guard automaticMigrations, lastPreparedTable.load(ordering: .acquiring) != table.serial else { return }
        try migrateOnce(table)
    }

    @inline(never)
    private func migrateOnce(_ table: TableOperations) throws {
        let prepared = migratedTables.withLock { prepared in
            // Stored under the lock, so that ``forgetCheckedTables()`` cannot be undone by it.
            guard prepared.contains(table.serial) else { return false }
            lastPreparedTable.store(table.serial, ordering: .releasing)
            return true
        }
        if prepared { return }
        try withConnection { connection in
            guard !migratedTables.withLock({ $0.contains(table.serial) }),
                  !connection.transaction.migratedTables.contains(table.serial),
                  connection.migrating.insert(table.serial).inserted else { return }  // a cycle of parents
            defer { connection.migrating.remove(table.serial) }
            for parent in try table.parents() { try prepare(parent) }
            try migrate(table.schema, connection)
            markPrepared(table, connection)
        }
    }

    /// Records that `table` is prepared: for every thread, or, inside a transaction, for the
    /// transaction's thread until it commits (``commitTransaction()`` publishes it).
    private func markPrepared(_ table: TableOperations, _ connection: Connection) {
        if connection.transaction.depth > 0 {
            connection.transaction.migratedTables.insert(table.serial)
        } else {
            migratedTables.withLock { _ = $0.insert(table.serial) }
        }
    }

    /// Automatic migration of one table: creates it, adds missing columns and indexes, and
    /// never drops or rewrites anything; what it leaves alone (extra columns, type
    /// mismatches, missing foreign keys) goes to the log. The table is read and changed in
    /// one write transaction holding the schema lock, so that another process (or, on a
    /// pooled engine, thread) adding the same columns meanwhile is seen, not added to twice.
    /// (A read-only database reads it only.)
    private func migrate(_ schema: TableSchema, _ connection: Connection) throws {
        var drift = TableDrift(table: schema.name)
        if isReadOnly {
            drift = try schema.drift(in: connection)
            if drift.hasAdditions { try schema.applyAdditions(drift, in: connection) }  // fails: read-only, with the SQL
        } else {
            try transaction {
                try lockSchema(connection)
                drift = try schema.drift(in: connection)
                if drift.hasAdditions { try schema.applyAdditions(drift, in: connection) }
            }
        }
        log(drift)
    }

    /// Logs what automatic migration added (to an existing table `.info`; a table it
    /// created, routine on a new database, `.debug`) and what it left alone (`.warning`).
    private func log(_ drift: TableDrift) {
        if drift.hasAdditions && !isReadOnly {
            let additions = TableDrift(
                table: drift.table, tableIsMissing: drift.tableIsMissing, missingColumns: drift.missingColumns,
                missingIndexes: drift.missingIndexes)
            log(drift.tableIsMissing ? .debug : .info, "automatic migration: \(additions)", metadata: ["table": "\(drift.table)"])
        }
        if drift.hasLeftovers {
            let leftovers = TableDrift(
                table: drift.table, extraColumns: drift.extraColumns, typeMismatches: drift.typeMismatches,
                missingForeignKeys: drift.missingForeignKeys)
            log(.warning, "schema drift: \(leftovers)", metadata: ["table": "\(drift.table)"])
        }
    }

    /// Forgets which tables automatic migration checked, so that the next use checks
    /// again (after a rollback undid a `CREATE`, or versioned migrations changed the schema).
    package func forgetCheckedTables() {
        migratedTables.withLock { prepared in
            prepared.removeAll()
            lastPreparedTable.store(0, ordering: .releasing)
        }
    }

    /// Makes the calling thread's transaction the only one changing the schema until it ends
    /// (nothing on SQLite, whose `BEGIN IMMEDIATE` already does).
    private func lockSchema(_ connection: Connection) throws {
        for sql in dialect.schemaLockSQL() { try connection.execute(sql) }
    }

    /// Runs `body`, one versioned migration step's transaction, as the engine needs for
    /// schema changes (SQLite turns foreign keys off around it and checks them inside it).
    @discardableResult
    package func aroundMigrationStep<R>(_ body: () throws -> R) throws -> R {
        try withConnection { connection in try dialect.aroundMigrationStep(connection, body) }
    }

    /// Runs `body` with the calling thread's connection and the dialect, to read or change
    /// the schema.
    package func withSchema<R>(_ body: (Connection, any SQLDialect) throws -> R) throws -> R {
        try withConnection { connection in try body(connection, dialect) }
    }
}
