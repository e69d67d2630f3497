@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

final class Client: Model {
    @Column var name: String = ""
    @Column var phone: String = ""
}

final class Customer: Model {
    @Column var name: String = ""
    @Column var telephone: String = ""
}

/// A bookmark as version 1 of an app declared it, and as version 2 does.
enum BookmarkV1 {
    final class Bookmark: Model {
        override class var tableName: String { "Bookmark" }  // the same table as version 2's, on purpose
        @Column var title: String = ""
        @Column(index: .index) var link: String = ""
    }
}

final class Bookmark: Model {
    @Column var title: String = ""
    @Column(index: .index) var url: String = ""
}

/// A file database path in a fresh directory, removed afterwards.
func withDatabaseFile(_ body: (String) throws -> Void) throws {
    let directory = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    try body(directory.appendingPathComponent("app.sqlite").path)
}

/// Version 2's migrator: the rename version 1's users need.
func bookmarkMigrator() -> Migrator {
    var migrator = Migrator()
    migrator.register("rename Bookmark.link to url") { try $0.renameColumn("link", to: "url", in: "Bookmark") }
    return migrator
}

@Suite("Versioned migrations")
struct VersionedMigrationTests {
    /// Version 1 used the database; version 2 opens it with its migrator: the rename runs
    /// before any model touches the table, so the data moves with it, no orphan column is
    /// left, and no second index appears.
    @Test(arguments: TestEngine.all) func aRenameRunsBeforeAutomaticMigrationSeesTheTable(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            try Database(place.location).use {
                try BookmarkV1.Bookmark.create(["title": "Swift", "link": "https://swift.org"])
            }
            let db = try Database(place.location, migrator: bookmarkMigrator())
            try db.use { () throws in
                #expect(try Bookmark.all().map(\.url) == ["https://swift.org"])
                try Bookmark.create(["title": "SQLite", "url": "https://sqlite.org"])
            }
            #expect(try columnNames(db, "Bookmark") == ["id", "createdAt", "updatedAt", "title", "url"])
            // The index named after the column was renamed with it: automatic migration made no second one.
            #expect(try indexNames(db, "Bookmark") == ["Bookmark_url_index"])
            #expect(try db.drift(of: [Bookmark.self]) == [TableDrift(table: "Bookmark")])
            #expect(try bookmarkMigrator().appliedMigrations(in: db) == ["rename Bookmark.link to url"])
            // Opened again: nothing left to run.
            let again = try Database(place.location, migrator: bookmarkMigrator())
            try again.use { () throws in #expect(try Bookmark.count() == 2) }
        }
    }

    /// A new database: the models create the latest schema, so the steps are recorded as
    /// applied without running (the rename would find no table).
    @Test(arguments: TestEngine.all) func aNewDatabaseRecordsEveryStepAsApplied(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            let db = try Database(place.location, migrator: bookmarkMigrator())
            #expect(try bookmarkMigrator().appliedMigrations(in: db) == ["rename Bookmark.link to url"])
            try db.use { () throws in
                try Bookmark.create(["title": "Swift", "url": "https://swift.org"])
                #expect(try Bookmark.first()?.url == "https://swift.org")
            }
            _ = try Database(place.location, migrator: bookmarkMigrator())  // nothing to run, no error
        }
    }

    @Test(arguments: TestEngine.all) func aStepCanReadTheSchemaItChanges(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            try Database(place.location).use { try BookmarkV1.Bookmark.create(["title": "a", "link": "b"]) }
            var migrator = Migrator()
            migrator.register("rename if still needed") { context in
                #expect(try context.tableNames() == ["Bookmark"])
                // Names as the engine compares them: SQLite folds ASCII case, PostgreSQL (quoted) does not.
                #expect(try context.hasTable("BOOKMARK") == (engine == .sqlite) && !context.hasTable("Nope"))
                let columns = try context.columns(of: "Bookmark")
                #expect(columns.map(\.name) == ["id", "createdAt", "updatedAt", "title", "link"])
                #expect(columns[0].isPrimaryKey && columns[0].type == (engine == .sqlite ? "INTEGER" : "bigint"))
                #expect(!columns[3].isNullable)
                #expect(try context.indexes(of: "Bookmark")
                    == [MigrationContext.IndexInfo(name: "Bookmark_link_index", isUnique: false, columns: ["link"])])
                if try context.hasColumn("link", in: "Bookmark") { try context.renameColumn("link", to: "url", in: "Bookmark") }
                #expect(try !context.hasColumn("link", in: "Bookmark") && context.hasColumn("url", in: "Bookmark"))
            }
            _ = try Database(place.location, migrator: migrator)
        }
    }

    @Test(arguments: TestEngine.all) func aRenamedTableKeepsItsRowsAndItsIndexNames(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            try Database(place.location).use {
                try Client.create(["name": "Ada", "phone": "123"])
                try Client.create(["name": "Bob", "phone": "456"])
            }
            try Database(place.location).execute(#"CREATE INDEX "Client_phone_index" ON "Client" ("phone")"#)
            var migrator = Migrator()
            migrator.register("rename Client to Customer") { try $0.renameTable("Client", to: "Customer") }
            migrator.register("rename phone to telephone") { try $0.renameColumn("phone", to: "telephone", in: "Customer") }
            let db = try Database(place.location, migrator: migrator)
            try db.use { () throws in
                #expect(try Customer.all().map { "\($0.name) \($0.telephone)" } == ["Ada 123", "Bob 456"])
            }
            #expect(try db.tableNames() == ["Customer", "activerecord_migrations"])
            #expect(try indexNames(db, "Customer") == ["Customer_telephone_index"])
            #expect(try migrator.appliedMigrations(in: db) == ["rename Client to Customer", "rename phone to telephone"])
        }
    }

    /// An index over a model's indexed column under another name serves: automatic
    /// migration does not make a second one.
    @Test(arguments: TestEngine.all) func anIndexUnderAnotherNameIsNotMadeTwice(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.execute(
                #"CREATE TABLE "Bookmark" ("# + engine.idColumn + #", "createdAt" \#(engine.real), "updatedAt" \#(engine.real), "#
                    + #""title" TEXT NOT NULL DEFAULT '', "url" TEXT NOT NULL DEFAULT '')"#)
            try db.execute(#"CREATE UNIQUE INDEX "my_urls" ON "Bookmark" ("url")"#)
            try Bookmark.create(["url": "x"])
            #expect(try indexNames(db, "Bookmark") == ["my_urls"])
        }
    }

    @Test func dropAndRetypeColumnsPreserveTheOtherData() throws {
        try withDatabaseFile { path in
            let setup = try Database(.file(path))
            try setup.execute(#"CREATE TABLE "Item" ("id" INTEGER PRIMARY KEY, "title" TEXT NOT NULL DEFAULT '', "legacy" BLOB, "count" TEXT, "note" TEXT)"#)
            try setup.execute(#"CREATE INDEX "Item_title" ON "Item" ("title")"#)
            try setup.execute(#"CREATE INDEX "Item_legacy" ON "Item" ("legacy")"#)
            let rows: [[DatabaseValue]] = [
                [.integer(1), .text("a'b"), .blob(Data([0, 1])), .text("42"), .null],
                [.integer(7), .text("Алексей"), .null, .text("x"), .text("kept")],
                [.integer(9), .text(""), .blob(Data()), .text("-3"), .real(2.5)],
            ]
            for row in rows { try setup.execute(#"INSERT INTO "Item" VALUES (?, ?, ?, ?, ?)"#, row) }
            var migrator = Migrator()
            migrator.register("drop Item.legacy") { try $0.dropColumn("legacy", from: "Item") }
            migrator.register("count as integer") { try $0.changeColumnType("count", in: "Item", to: .integer) }
            let db = try Database(.file(path), migrator: migrator)
            #expect(try db.rows(#"SELECT * FROM "Item" ORDER BY "id""#) == [
                [.integer(1), .text("a'b"), .integer(42), .null],
                [.integer(7), .text("Алексей"), .text("x"), .text("kept")],   // not a number: kept as text
                [.integer(9), .text(""), .integer(-3), .text("2.5")],  // TEXT affinity stored 2.5 as text
            ])
            #expect(try db.rows(#"SELECT name, type FROM pragma_table_info('Item')"#) == [
                [.text("id"), .text("INTEGER")], [.text("title"), .text("TEXT")],
                [.text("count"), .text("INTEGER")], [.text("note"), .text("TEXT")],
            ])
            // The index on the kept column is back; the one on the dropped column is gone.
            #expect(try db.rows(#"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Item'"#) == [[.text("Item_title")]])
            #expect(try db.rows("PRAGMA integrity_check") == [[.text("ok")]])
        }
    }

    @Test(arguments: TestEngine.all) func aFailingStepLeavesTheDatabaseAsItWasAndSaysWhich(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            try Database(place.location).use { try Client.create(["name": "Ada", "phone": "1"]) }
            var migrator = Migrator()
            migrator.register("one") { try $0.execute(#"UPDATE "Client" SET "name" = 'changed'"#) }
            migrator.register("two") { context in
                try context.execute(#"UPDATE "Client" SET "phone" = 'lost'"#)
                try context.dropColumn("nope", from: "Client")
            }
            migrator.register("three") { try $0.execute(#"UPDATE "Client" SET "name" = 'never'"#) }
            let error = expectError(.migrationFailed) { _ = try Database(place.location, migrator: migrator) }
            #expect(error?.message == "migration 'two' (step 2 of 3) failed: Client has no column 'nope'; its columns are: id, createdAt, updatedAt, name, phone; the database is as it was before this step")
            let db = try Database(place.location)
            #expect(try db.rows(#"SELECT "name", "phone" FROM "Client""#) == [[.text("changed"), .text("1")]])
            #expect(try migrator.appliedMigrations(in: db) == ["one"])
            if engine == .sqlite { #expect(try storedValue(db, "PRAGMA foreign_keys") == .integer(1)) }
        }
    }

    @Test func aRebuildThatBreaksForeignKeysIsRolledBack() throws {
        try withDatabaseFile { path in
            let setup = try Database(.file(path))
            try setup.execute(#"CREATE TABLE "Parent" ("id" INTEGER PRIMARY KEY)"#)
            try setup.execute(#"CREATE TABLE "Child" ("id" INTEGER PRIMARY KEY, "parentId" INTEGER REFERENCES "Parent"("id"), "x" TEXT)"#)
            try setup.execute("PRAGMA foreign_keys=OFF")
            try setup.execute(#"INSERT INTO "Child" VALUES (1, 99, 'orphan')"#)
            try setup.execute("PRAGMA foreign_keys=ON")
            var migrator = Migrator()
            migrator.register("drop Child.x") { try $0.dropColumn("x", from: "Child") }
            let error = expectError(.migrationFailed) { _ = try Database(.file(path), migrator: migrator) }
            #expect(error?.message.contains("broke 1 foreign key reference") == true)
            #expect(try setup.rows(#"SELECT name FROM pragma_table_info('Child')"#).count == 3)
            // Without the orphan, the rebuild keeps the foreign key and the UNIQUE constraint.
            try setup.execute(#"DELETE FROM "Child""#)
            try setup.execute(#"CREATE TABLE "Tagged" ("id" INTEGER PRIMARY KEY, "code" TEXT UNIQUE, "parentId" INTEGER REFERENCES "Parent"("id") ON DELETE CASCADE, "x" TEXT)"#)
            var second = Migrator()
            second.register("drop Tagged.x") { try $0.dropColumn("x", from: "Tagged") }
            let db = try Database(.file(path), migrator: second)
            let ddl = try storedValue(db, "SELECT sql FROM sqlite_master WHERE name = 'Tagged'")
            #expect(ddl == .text(#"CREATE TABLE "Tagged" ("id" INTEGER PRIMARY KEY, "code" TEXT, "parentId" INTEGER, FOREIGN KEY ("parentId") REFERENCES "Parent"("id") ON UPDATE NO ACTION ON DELETE CASCADE, UNIQUE ("code"))"#))
        }
    }

    /// Rebuilding a parent table (dropping its column) drops the old table: with foreign keys
    /// enforced, that would run the children's ON DELETE CASCADE and empty them. Steps run
    /// with foreign keys off and checked at the end, so the children keep every row.
    @Test(arguments: TestEngine.all) func rebuildingAParentKeepsItsCascadingChildren(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            let setup = try Database(place.location)
            try setup.execute(#"CREATE TABLE "Parent" ("# + engine.idColumn + #", "legacy" TEXT)"#)
            try setup.execute(
                #"CREATE TABLE "Child" ("# + engine.idColumn + #", "parentId" \#(engine.integer) REFERENCES "Parent"("id") ON DELETE CASCADE)"#)
            try setup.execute(#"INSERT INTO "Parent" VALUES (1, 'x'), (2, 'y')"#)
            try setup.execute(#"INSERT INTO "Child" VALUES (10, 1), (11, 2), (12, 2)"#)
            var migrator = Migrator()
            migrator.register("drop Parent.legacy") { context in
                // Even inside a transaction of the step's own, the rebuild is safe.
                try context.dropColumn("legacy", from: "Parent")
            }
            let db = try Database(place.location, migrator: migrator)
            #expect(try db.rows(#"SELECT "id", "parentId" FROM "Child" ORDER BY "id""#)
                == [[.integer(10), .integer(1)], [.integer(11), .integer(2)], [.integer(12), .integer(2)]])
            #expect(try columnNames(db, "Parent") == ["id"])
        }
    }

    /// Declared types and defaults come back from SQLite dequoted: a rebuild writes them so
    /// that they stay one type and one default, never new columns or constraints.
    @Test func aRebuildNeverTurnsSchemaTextIntoSQL() throws {
        try withDatabaseFile { path in
            let setup = try Database(.file(path))
            try setup.execute(#"CREATE TABLE "Victim" ("id" INTEGER PRIMARY KEY)"#)
            try setup.execute(#"""
                CREATE TABLE "T" ("id" INTEGER PRIMARY KEY, "a" 'TEXT, injected TEXT DEFAULT ''PWNED''',
                "b" 'INTEGER REFERENCES Victim(id) ON DELETE CASCADE', "c" TEXT DEFAULT (1+2), "gone" TEXT)
                """#)
            try setup.execute(#"INSERT INTO "Victim" VALUES (1)"#)
            try setup.execute(#"INSERT INTO "T" ("id", "a", "b") VALUES (1, 'x', 1)"#)
            var migrator = Migrator()
            migrator.register("drop T.gone") { try $0.dropColumn("gone", from: "T") }
            let db = try Database(.file(path), migrator: migrator)
            #expect(try db.rows(#"SELECT name, type, dflt_value FROM pragma_table_info('T')"#) == [
                [.text("id"), .text("INTEGER"), .null],
                [.text("a"), .text("TEXT, injected TEXT DEFAULT 'PWNED'"), .null],
                [.text("b"), .text("INTEGER REFERENCES Victim(id) ON DELETE CASCADE"), .null],
                [.text("c"), .text("TEXT"), .text("1+2")],
            ])
            #expect(try db.rows(#"SELECT * FROM pragma_foreign_key_list('T')"#).isEmpty)
            try db.execute(#"DELETE FROM "Victim""#)
            #expect(try db.rows(#"SELECT "id", "c" FROM "T""#) == [[.integer(1), .text("3")]])  // TEXT affinity
        }
    }

    @Test(arguments: TestEngine.all) func aRebuildRemakesTheViewsAndNamesOneItBreaks(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            let setup = try Database(place.location)
            try setup.execute(#"CREATE TABLE "T" ("# + engine.idColumn + #", "kept" TEXT, "gone" TEXT)"#)
            try setup.execute(#"INSERT INTO "T" VALUES (1, 'k', 'g')"#)
            try setup.execute(#"CREATE VIEW "Kept" AS SELECT "kept" FROM "T""#)
            var fine = Migrator()
            fine.register("drop T.gone") { try $0.dropColumn("gone", from: "T") }
            let db = try Database(place.location, migrator: fine)
            #expect(try db.rows(#"SELECT * FROM "Kept""#) == [[.text("k")]])
            try db.execute(#"CREATE VIEW "Uses" AS SELECT "kept" FROM "T""#)
            var broken = Migrator()
            broken.register("drop T.kept") { try $0.dropColumn("kept", from: "T") }
            let error = expectError(.migrationFailed) { _ = try Database(place.location, migrator: broken) }
            // SQLite rebuilds the table and finds the view broken; PostgreSQL refuses to drop what a view uses.
            let reason = engine == .sqlite ? "the view Kept uses what rebuilding T removes" : "other objects depend on it"
            #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
            #expect(try db.rows(#"SELECT * FROM "Uses""#) == [[.text("k")]])  // rolled back: all there
        }
    }

    /// The library's foreign keys are deferred (checked at commit); a rebuild keeps them so.
    @Test func aRebuildKeepsAForeignKeyDeferred() throws {
        try withDatabaseFile { path in
            try Database(.file(path)).use {
                let group = try RelationGroup.create(["title": "g"])
                let member = RelationMember()
                member.group = group
                try member.save()
            }
            try Database(.file(path)).execute(#"ALTER TABLE "RelationMember" ADD COLUMN "extra" TEXT"#)
            var migrator = Migrator()
            migrator.register("drop extra") { try $0.dropColumn("extra", from: "RelationMember") }
            let db = try Database(.file(path), migrator: migrator)
            let ddl = try storedValue(db, "SELECT sql FROM sqlite_master WHERE name = 'RelationMember'")
            #expect(ddl.description.contains(#"REFERENCES "RelationGroup"("id") ON UPDATE NO ACTION ON DELETE NO ACTION DEFERRABLE INITIALLY DEFERRED"#))
        }
    }
}

final class RelationGroup: Model {
    @Column var title: String = ""
}

final class RelationMember: Model {
    @BelongsTo var group: RelationGroup?
}
