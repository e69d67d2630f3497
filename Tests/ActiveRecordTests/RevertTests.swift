@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

@Suite("Reverting versioned migrations")
struct RevertTests {
    /// A migration of reversible steps only is reverted by its computed inverse: the schema is
    /// as it was before it (the dump says so), and its row leaves the applied list.
    @Test(arguments: TestEngine.all) func aReversibleMigrationIsRevertedByItsInverse(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "authors") { try $0.createTable(StepAuthor.self) }
            let before = try db.schemaSQL()
            try applyStep(db, &migrator, "books") { context in
                try context.createTable(stepBookSchema())
                try context.addIndex(on: "StepBook", columns: ["authorId", "title"], unique: true)
                try context.addForeignKey("authorId", in: "StepBook", references: "StepAuthor", onDelete: .cascade)
                try context.addCheck("StepBook_pages_positive", on: "StepBook", "pages >= 1")
                try context.addIndex(on: "StepAuthor", columns: ["rating"])
                try context.addCheck("StepAuthor_rating_range", on: "StepAuthor", "rating BETWEEN 0 AND 5")
                try context.renameTable("StepAuthor", to: "StepWriter")
                try context.renameColumn("rating", to: "stars", in: "StepWriter")
            }
            #expect(try db.tableNames().contains("StepWriter"))
            #expect(try db.schemaSQL() != before)

            #expect(try migrator.revert(last: 1, on: db) == ["books"])
            #expect(try db.schemaSQL() == before)
            #expect(try migrator.appliedMigrations(in: db) == ["authors"])
            // The model's table is usable again, and the migration applies again.
            try StepAuthor.create(["name": "Tolkien", "rating": 9])
            try db.execute(#"DELETE FROM "StepAuthor""#)
            #expect(try migrator.apply(to: db) == ["books"])
            #expect(try db.tableNames().contains("StepBook"))
        }
    }

    /// A dropTable with the table's description is reversible (the table comes back empty);
    /// a dropIndex, dropForeignKey or dropCheck given what they drop is too.
    @Test(arguments: TestEngine.all) func dropsGivenTheirDefinitionAreReversible(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "tables") { context in
                try context.createTable(StepAuthor.self)
                try context.createTable(stepBookSchema())
                try context.addIndex(on: "StepBook", columns: ["pages"])
                try context.addForeignKey("authorId", in: "StepBook", references: "StepAuthor", onDelete: .setNull)
                try context.addCheck("StepBook_pages_positive", on: "StepBook", "pages >= 1")
                try context.createTable("StepTag", columns: [ColumnSchema(name: "label", type: .text, index: .unique)])
            }
            let before = try db.schemaSQL()
            try applyStep(db, &migrator, "drops") { context in
                try context.dropIndex(on: "StepBook", columns: ["pages"])
                try context.dropForeignKey("authorId", in: "StepBook", references: "StepAuthor", onDelete: .setNull)
                try context.dropCheck("StepBook_pages_positive", from: "StepBook", expression: "pages >= 1")
                try context.dropTable(TableSchema(name: "StepTag", columns: [ColumnSchema(name: "label", type: .text, index: .unique)]))
            }
            #expect(try !db.tableNames().contains("StepTag"))
            try migrator.revert(last: 1, on: db)
            #expect(try db.schemaSQL() == before)
        }
    }

    /// An irreversible step (a dropped column, raw SQL, a table dropped by name) makes revert
    /// throw, naming the step; nothing is reverted, even the later migrations that could be.
    @Test(arguments: TestEngine.all) func anIrreversibleMigrationIsNotReverted(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "book") { try $0.createTable(stepBookSchema()) }
            try applyStep(db, &migrator, "drop pages") { try $0.dropColumn("pages", from: "StepBook") }
            try applyStep(db, &migrator, "index title") { try $0.addIndex(on: "StepBook", columns: ["title"]) }
            let before = try db.schemaSQL()
            let applied = try migrator.appliedMigrations(in: db)

            let error = expectError(.irreversibleMigration) { try migrator.revert(last: 2, on: db) }
            #expect(error?.message.contains(#"migration 'drop pages' cannot be reverted: its step dropColumn("pages", from: "StepBook") has no inverse"#) == true)
            #expect(error?.message.contains("nothing was reverted") == true)
            #expect(try db.schemaSQL() == before)
            #expect(try migrator.appliedMigrations(in: db) == applied)

            for (name, step) in [
                ("raw", { @Sendable (context: MigrationContext) throws in try context.execute("UPDATE \"StepBook\" SET \"title\" = 'x'") }),
                ("drop by name", { @Sendable (context: MigrationContext) throws in try context.dropTable("StepBook") }),
            ] {
                try applyStep(db, &migrator, name, step)
                let irreversible = expectError(.irreversibleMigration) { try migrator.revert(on: db) }
                #expect(irreversible?.message.contains("migration '\(name)' cannot be reverted") == true)
                #expect(try migrator.appliedMigrations(in: db).last == name)
            }
        }
    }

    /// An explicit `down` is run instead of a computed inverse.
    @Test(arguments: TestEngine.all) func anExplicitDownIsUsed(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "book") { try $0.createTable(stepBookSchema()) }
            try db.execute(#"INSERT INTO "StepBook" ("title", "pages") VALUES ('a', 1)"#)
            migrator.register(
                "drop pages", up: { try $0.dropColumn("pages", from: "StepBook") },
                down: { context in
                    try context.execute(SQL(sql: "ALTER TABLE \"StepBook\" ADD COLUMN \"pages\" \(engine.integer)"))
                    try context.execute("UPDATE \"StepBook\" SET \"pages\" = 0")
                })
            try migrator.apply(to: db)
            #expect(try !columnNames(db, "StepBook").contains("pages"))
            #expect(try migrator.revert(last: 1, on: db) == ["drop pages"])
            #expect(try columnNames(db, "StepBook").last == "pages")
            #expect(try storedValue(db, #"SELECT "pages" FROM "StepBook""#) == .integer(0))
            #expect(try migrator.appliedMigrations(in: db) == ["book"])
        }
    }

    /// Reverting several: the latest first, all in one transaction. A failing inverse leaves
    /// everything as it was and names the migration.
    @Test(arguments: TestEngine.all) func revertingSeveralIsAllOrNothing(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "book") { try $0.createTable(stepBookSchema()) }
            try applyStep(db, &migrator, "index") { try $0.addIndex(on: "StepBook", columns: ["title"]) }
            try applyStep(db, &migrator, "check") { try $0.addCheck("StepBook_pages_positive", on: "StepBook", "pages >= 1") }
            // Make the inverse of "index" (dropping StepBook_title_index) fail, after "check"'s has run: the index
            // now has another name.
            try db.execute(engine == .sqlite ? #"DROP INDEX "StepBook_title_index""# : #"ALTER INDEX "StepBook_title_index" RENAME TO "elsewhere""#)
            if engine == .sqlite { try db.execute(#"CREATE INDEX "elsewhere" ON "StepBook" ("title")"#) }
            let before = try db.schemaSQL()
            let error = expectError(.migrationFailed) { try migrator.revert(last: 3, on: db) }
            #expect(error?.message.contains("reverting migration 'index' failed: StepBook has no index 'StepBook_title_index'") == true)
            #expect(error?.message.contains("nothing was reverted") == true)
            #expect(try db.schemaSQL() == before)
            #expect(try migrator.appliedMigrations(in: db) == ["book", "index", "check"])

            let tooMany = expectError(.misuse) { try migrator.revert(last: 4, on: db) }
            #expect(tooMany?.message.contains("3 are applied") == true)
            // A migration applied but not registered here cannot be reverted.
            let unknown = expectError(.irreversibleMigration) { try Migrator().revert(on: db) }
            #expect(unknown?.message.contains("migration 'check' is applied but not registered in this migrator") == true)

            try db.execute(#"DROP INDEX "elsewhere""#)
            try db.execute(#"CREATE INDEX "StepBook_title_index" ON "StepBook" ("title")"#)
            #expect(try migrator.revert(last: 3, on: db) == ["check", "index", "book"])
            #expect(try !db.tableNames().contains("StepBook"))
            #expect(try migrator.appliedMigrations(in: db).isEmpty)
        }
    }
}
