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

@Suite("Versioned migrations")
struct VersionedMigrationTests {
    @Test func aRenamedTableKeepsItsRows() throws {
        let db = try Database(.inMemory)
        try db.use {
            try Client.create(["name": "Ada", "phone": "123"])
            try Client.create(["name": "Bob", "phone": "456"])
        }
        var migrator = Migrator()
        migrator.register("rename Client to Customer") { try $0.renameTable("Client", to: "Customer") }
        migrator.register("rename phone to telephone") { try $0.renameColumn("phone", to: "telephone", in: "Customer") }
        #expect(try migrator.migrate(db) == ["rename Client to Customer", "rename phone to telephone"])
        try db.use { () throws in
            #expect(try Customer.all().map { "\($0.name) \($0.telephone)" } == ["Ada 123", "Bob 456"])
        }
        #expect(try db.tableNames() == ["Customer", "activerecord_migrations"])
        // Recorded: running again runs nothing.
        #expect(try migrator.appliedMigrations(in: db) == ["rename Client to Customer", "rename phone to telephone"])
        #expect(try migrator.migrate(db) == [])
    }

    @Test func dropAndRetypeColumnsPreserveTheOtherData() throws {
        let db = try Database(.inMemory)
        try db.execute(#"CREATE TABLE "Item" ("id" INTEGER PRIMARY KEY, "title" TEXT NOT NULL DEFAULT '', "legacy" BLOB, "count" TEXT, "note" TEXT)"#)
        try db.execute(#"CREATE INDEX "Item_title" ON "Item" ("title")"#)
        try db.execute(#"CREATE INDEX "Item_legacy" ON "Item" ("legacy")"#)
        let rows: [[DatabaseValue]] = [
            [.integer(1), .text("a'b"), .blob(Data([0, 1])), .text("42"), .null],
            [.integer(7), .text("Алексей"), .null, .text("x"), .text("kept")],
            [.integer(9), .text(""), .blob(Data()), .text("-3"), .real(2.5)],
        ]
        for row in rows { try db.execute(#"INSERT INTO "Item" VALUES (?, ?, ?, ?, ?)"#, row) }
        var migrator = Migrator()
        migrator.register("drop Item.legacy") { try $0.dropColumn("legacy", from: "Item") }
        migrator.register("count as integer") { try $0.changeColumnType("count", in: "Item", to: .integer) }
        try migrator.migrate(db)
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

    @Test func aFailingStepLeavesTheDatabaseAsItWasAndSaysWhich() throws {
        let db = try Database(.inMemory)
        try db.use { try Client.create(["name": "Ada", "phone": "1"]) }
        var migrator = Migrator()
        migrator.register("one") { try $0.execute(#"UPDATE "Client" SET "name" = 'changed'"#) }
        migrator.register("two") { context in
            try context.execute(#"UPDATE "Client" SET "phone" = 'lost'"#)
            try context.dropColumn("nope", from: "Client")
        }
        migrator.register("three") { try $0.execute(#"UPDATE "Client" SET "name" = 'never'"#) }
        let error = expectError(.migrationFailed) { try migrator.migrate(db) }
        #expect(error?.message == "migration 'two' (step 2 of 3) failed: Client has no column 'nope'; its columns are: id, createdAt, updatedAt, name, phone; the database is as it was before this step")
        #expect(try db.rows(#"SELECT "name", "phone" FROM "Client""#) == [[.text("changed"), .text("1")]])
        #expect(try migrator.appliedMigrations(in: db) == ["one"])
        #expect(try storedValue(db, "PRAGMA foreign_keys") == .integer(1))
    }

    @Test func aRebuildThatBreaksForeignKeysIsRolledBack() throws {
        let db = try Database(.inMemory)
        try db.execute(#"CREATE TABLE "Parent" ("id" INTEGER PRIMARY KEY)"#)
        try db.execute(#"CREATE TABLE "Child" ("id" INTEGER PRIMARY KEY, "parentId" INTEGER REFERENCES "Parent"("id"), "x" TEXT)"#)
        try db.execute("PRAGMA foreign_keys=OFF")
        try db.execute(#"INSERT INTO "Child" VALUES (1, 99, 'orphan')"#)
        try db.execute("PRAGMA foreign_keys=ON")
        var migrator = Migrator()
        migrator.register("drop Child.x") { try $0.dropColumn("x", from: "Child") }
        let error = expectError(.migrationFailed) { try migrator.migrate(db) }
        #expect(error?.message.contains("broke 1 foreign key reference") == true)
        #expect(try db.rows(#"SELECT name FROM pragma_table_info('Child')"#).count == 3)
        // Without the orphan, the rebuild keeps the foreign key and the UNIQUE constraint.
        try db.execute(#"DELETE FROM "Child""#)
        try db.execute(#"CREATE TABLE "Tagged" ("id" INTEGER PRIMARY KEY, "code" TEXT UNIQUE, "parentId" INTEGER REFERENCES "Parent"("id") ON DELETE CASCADE, "x" TEXT)"#)
        var second = Migrator()
        second.register("drop Tagged.x") { try $0.dropColumn("x", from: "Tagged") }
        try second.migrate(db)
        let ddl = try storedValue(db, "SELECT sql FROM sqlite_master WHERE name = 'Tagged'")
        #expect(ddl == .text(#"CREATE TABLE "Tagged" ("id" INTEGER PRIMARY KEY, "code" TEXT, "parentId" INTEGER, FOREIGN KEY ("parentId") REFERENCES "Parent"("id") ON UPDATE NO ACTION ON DELETE CASCADE, UNIQUE ("code"))"#))
    }
}
