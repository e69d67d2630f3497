@_spi(Engines) import ARCore
import ActiveRecord
import Testing

/// A model whose rows the migrations below write.
final class RevertNote: Model {
    @Column var text: String = ""
}

@Suite("Reverting a migration that writes data")
struct RevertDataWritesTests {
    /// The rows of RevertNote's table, by text.
    private func texts() throws -> [String] {
        try RevertNote.query().order(by: "id").fetch().map(\.text)
    }

    /// Applies "notes" (RevertNote's table and one row) and then `step` as "m".
    private func applyNotesThen(
        _ db: Database, _ step: @escaping @Sendable (MigrationContext) throws -> Void
    ) throws -> Migrator {
        var migrator = Migrator()
        try applyStep(db, &migrator, "notes") { try $0.createTable(RevertNote.self) }
        try RevertNote.create(["text": "first"])
        try applyStep(db, &migrator, "m", step)
        return migrator
    }

    /// Reverting a migration without `down` computes its inverse by running it again against a
    /// recording context: its data writes (a model's `create`, an `updateAll`) must not run
    /// again. The revert is refused, naming the tables written; the data, the index, the
    /// schema and the applied list are as they were.
    @Test(arguments: TestEngine.all) func aMigrationThatWritesDataIsNotRevertedByRunningItAgain(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            let migrator = try applyNotesThen(db) { context in
                try context.addIndex(on: "RevertNote", columns: ["text"])
                _ = try RevertNote.query().updateAll(["text": "backfilled"])
                try RevertNote.create(["text": "seed row"])
            }
            #expect(try texts() == ["backfilled", "seed row"])
            let schema = try db.schemaSQL()
            #expect(schema.contains("INDEX"))
            let applied = try migrator.appliedMigrations(in: db)

            let error = expectError(.irreversibleMigration) { try migrator.revert(last: 1, on: db) }
            #expect(error?.message.contains("migration 'm' writes data outside its schema steps (to RevertNote)") == true)
            #expect(error?.message.contains("give it a down: register(_:up:down:)") == true)
            #expect(error?.message.contains("nothing was reverted") == true)
            #expect(try texts() == ["backfilled", "seed row"])
            #expect(try db.schemaSQL() == schema)
            #expect(try migrator.appliedMigrations(in: db) == applied)
            #expect(try RevertNote.count() == 2)
        }
    }

    /// Writes by raw SQL on the database, or inside a transaction the migration commits, are
    /// writes too: refused, rolled back.
    @Test(arguments: TestEngine.all) func rawSQLAndNestedTransactionWritesAreRefusedToo(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            let raw = try applyNotesThen(db) { context in
                try context.addIndex(on: "RevertNote", columns: ["text"])
                try Database.current.execute(#"UPDATE "RevertNote" SET "text" = 'raw'"#)
            }
            #expect(try texts() == ["raw"])
            let error = expectError(.irreversibleMigration) { try raw.revert(last: 1, on: db) }
            #expect(error?.message.contains("writes data outside its schema steps (SQL run on the database)") == true)
            #expect(try texts() == ["raw"])
            #expect(try raw.appliedMigrations(in: db) == ["notes", "m"])
        }
        try withMigratedDatabase(engine) { db in
            let nested = try applyNotesThen(db) { context in
                try context.addIndex(on: "RevertNote", columns: ["text"])
                try Database.current.transaction { try RevertNote.create(["text": "nested"]) }
            }
            #expect(try texts() == ["first", "nested"])
            expectError(.irreversibleMigration) { try nested.revert(last: 1, on: db) }
            #expect(try texts() == ["first", "nested"])
            #expect(try nested.appliedMigrations(in: db) == ["notes", "m"])
        }
    }

    /// A write that fails when the migration runs again to be recorded (a unique row seeded
    /// twice) fails the revert, saying to give the migration a `down`; nothing is reverted.
    @Test(arguments: TestEngine.all) func aWriteThatFailsWhenRunAgainSaysToGiveADown(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            let migrator = try applyNotesThen(db) { context in
                try context.addIndex(on: "RevertNote", columns: ["text"], unique: true)
                try RevertNote.create(["text": "seed row"])
            }
            let schema = try db.schemaSQL()
            let error = expectError(.migrationFailed) { try migrator.revert(last: 1, on: db) }
            #expect(error?.message.contains("reverting migration 'm' failed: running it again against a recording context") == true)
            #expect(error?.message.contains("needs a down: register(_:up:down:)") == true)
            #expect(error?.message.contains("nothing was reverted") == true)
            #expect(try texts() == ["first", "seed row"])
            #expect(try db.schemaSQL() == schema)
            #expect(try migrator.appliedMigrations(in: db) == ["notes", "m"])
        }
    }

    /// A migration that only reads data (queries, raw SELECTs, the schema through its context)
    /// beside its schema steps reverts by its computed inverse.
    @Test(arguments: TestEngine.all) func aMigrationThatOnlyReadsDataReverts(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "notes") { try $0.createTable(RevertNote.self) }
            try RevertNote.create(["text": "first"])
            let before = try db.schemaSQL()
            try applyStep(db, &migrator, "m") { context in
                let count = try RevertNote.count()
                let rows = try Database.current.rows(#"SELECT "text" FROM "RevertNote""#)
                if count == rows.count, try context.hasColumn("text", in: "RevertNote") {
                    try context.addIndex(on: "RevertNote", columns: ["text"])
                }
            }
            #expect(try db.schemaSQL() != before)
            #expect(try migrator.revert(last: 1, on: db) == ["m"])
            #expect(try db.schemaSQL() == before)
            #expect(try migrator.appliedMigrations(in: db) == ["notes"])
            #expect(try texts() == ["first"])
        }
    }

    /// A migration with an explicit `down` that writes data is reverted by its `down`, whose
    /// writes stay; its `up` does not run again.
    @Test(arguments: TestEngine.all) func aMigrationWithADownThatWritesReverts(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "notes") { try $0.createTable(RevertNote.self) }
            try RevertNote.create(["text": "first"])
            migrator.register(
                "m",
                up: { _ in try RevertNote.create(["text": "seed row"]) },
                down: { _ in _ = try RevertNote.query().where(\.text == "seed row").deleteAll() })
            try migrator.apply(to: db)
            #expect(try texts() == ["first", "seed row"])
            #expect(try migrator.revert(last: 1, on: db) == ["m"])
            #expect(try texts() == ["first"])
            #expect(try migrator.appliedMigrations(in: db) == ["notes"])
        }
    }
}
