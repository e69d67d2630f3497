@_spi(Engines) import ARCore

extension Migrator {
    /// Reverts the last `count` applied migrations, the latest first, for development: each
    /// by its `down` when it was registered with one (``register(_:up:down:)``), otherwise by
    /// the inverse of its steps, computed by running it against a context that records them
    /// instead (createTable ↔ dropTable, addIndex ↔ dropIndex, renameTable ↔ renameTable back,
    /// addForeignKey and addCheck ↔ dropping them), undone last step first. Their rows leave
    /// the table of applied migrations, so that ``apply(to:)`` runs them again.
    ///
    /// The recording pass runs the closure's other code for real (reads are fine: queries,
    /// the schema through the context), so it runs in a savepoint that is always rolled back:
    /// a migration that writes data there (a model's `create`, `updateAll`, `db.execute`) is
    /// refused, its writes undone, rather than reverted with its writes run again. Give such a
    /// migration a `down` (``register(_:up:down:)``).
    ///
    /// ```swift
    /// try migrator.revert(last: 1, on: db)   // undo the latest migration
    /// try migrator.apply(to: db)             // and run it again, changed
    /// ```
    ///
    /// All of it runs in ONE transaction (DDL is transactional on SQLite and PostgreSQL): on
    /// any error nothing is reverted, the schema and the applied list are as they were. A
    /// migration that branches on the schema (`if try context.hasColumn(…)`) is recorded
    /// against the schema as it is when reverting, after it ran: give such a migration a `down`.
    /// - Returns: the names of the migrations reverted, latest first.
    /// - Throws: `.irreversibleMigration` when one of them has a step without an inverse (raw
    ///   SQL, `dropColumn`, `changeColumnType`, `dropTable` by name, `dropIndex` by name…) and no
    ///   `down`, naming the step, or writes data outside its schema steps and has no `down`,
    ///   naming the tables written, or is applied but not registered in this migrator;
    ///   `.migrationFailed` naming the migration whose inverse failed; `.misuse` when fewer
    ///   than `count` migrations are applied; `.readOnly` on a database opened read-only.
    @discardableResult
    public func revert(last count: Int = 1, on database: Database) throws -> [String] {
        guard !database.isReadOnly else {
            throw ActiveRecordError(.readOnly, "the database is open read-only: migrations cannot be reverted")
        }
        let applied = try appliedMigrations(in: database)
        guard count >= 0, count <= applied.count else {
            throw ActiveRecordError(
                .misuse, "cannot revert the last \(count) migration(s): \(applied.count) are applied (\(applied.joined(separator: ", ")))")
        }
        let targets = Array(applied.suffix(count).reversed())
        guard !targets.isEmpty else { return [] }
        let registered = try targets.map { name in
            guard let step = steps.first(where: { $0.name == name }) else {
                throw ActiveRecordError(
                    .irreversibleMigration,
                    "migration '\(name)' is applied but not registered in this migrator, so it cannot be reverted; nothing was reverted")
            }
            return step
        }
        var current = ""
        do {
            try database.aroundMigrationStep {
                try database.transaction {
                    // Read again under the write lock: another process may have reverted or applied meanwhile.
                    guard try appliedMigrations(in: database).suffix(count).reversed() == targets else {
                        throw ActiveRecordError(.misuse, "the applied migrations changed while reverting; nothing was reverted")
                    }
                    for step in registered {
                        current = step.name
                        try revert(step.name, step.run, down: step.down, in: database)
                    }
                }
            }
        } catch let error as ActiveRecordError where error.code == .irreversibleMigration || current.isEmpty {
            throw error
        } catch {
            let reason = (error as? ActiveRecordError)?.message ?? "\(error)"
            let message = "reverting migration '\(current)' failed: \(reason); nothing was reverted"
            throw (error as? ActiveRecordError)?.with(code: .migrationFailed, message: message)
                ?? ActiveRecordError(.migrationFailed, message)
        }
        database.forgetCheckedTables()
        for name in targets { database.log(.info, "migration '\(name)' reverted") }
        return targets
    }

    /// Runs `record` (a migration against a recording context) in a savepoint that is ALWAYS
    /// rolled back, and returns the tables its statements wrote, as the transaction's change
    /// tracking (observers') noted them: a migration's code beside its context's steps (a
    /// model's `create`, an `updateAll`, `db.execute`) really runs, and must not run again.
    private func writes(in database: Database, _ record: () throws -> Void) throws -> TableChanges {
        try database.beginTransaction()
        let written: TableChanges
        do {
            try record()
            written = try database.withConnection { $0.changes.byLevel.last ?? TableChanges() }
        } catch {
            try? database.rollbackTransaction()
            // Often a write that cannot run twice (a unique row seeded): say what to do.
            let reason = (error as? ActiveRecordError)?.message ?? "\(error)"
            let message = "running it again against a recording context, to compute its inverse, threw: \(reason) "
                + "(a migration that writes data needs a down: register(_:up:down:))"
            throw (error as? ActiveRecordError)?.with(message: message) ?? ActiveRecordError(.migrationFailed, message)
        }
        try database.rollbackTransaction()
        return written
    }

    /// Undoes one migration (inside the caller's transaction) and removes its row.
    private func revert(
        _ name: String, _ up: @Sendable (MigrationContext) throws -> Void, down: (@Sendable (MigrationContext) throws -> Void)?,
        in database: Database
    ) throws {
        if let down {
            try down(MigrationContext(database: database))
        } else {
            let recorder = StepRecorder()
            let written = try writes(in: database) { try up(MigrationContext(database: database, recorder: recorder)) }
            if !written.isEmpty {
                let what = written.everyTable ? "SQL run on the database" : "to " + written.tables.sorted().joined(separator: ", ")
                throw ActiveRecordError(
                    .irreversibleMigration,
                    "migration '\(name)' writes data outside its schema steps (\(what)), so its inverse cannot be "
                        + "computed by running it again; give it a down: register(_:up:down:); nothing was reverted")
            }
            if let step = recorder.irreversibleSteps.first {
                throw ActiveRecordError(
                    .irreversibleMigration,
                    "migration '\(name)' cannot be reverted: its step \(step) has no inverse; register it with "
                        + "register(_:up:down:) to say how to undo it; nothing was reverted")
            }
            for inverse in recorder.inverses { try inverse(MigrationContext(database: database)) }
        }
        let sql = database.dialect.deleteSQL(from: Self.tableName, where: [.equals("name")])
        try database.execute(sql, [.text(name)])
    }
}
