@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 31, point 6: `clear()` empties the user's tables, keeps the record of applied
/// migrations, and restarts ids at 1 on every engine.
@Suite("Database.clear keeps the schema's history and restarts ids")
struct ClearTests {
    @Test(arguments: TestEngine.all) func aMigratorAppliedAgainAfterClearRunsNothing(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            try Database(place.location).use {
                try BookmarkV1.Bookmark.create(["title": "Swift", "link": "https://swift.org"])
                try BookmarkV1.Bookmark.create(["title": "SQLite", "link": "https://sqlite.org"])
            }
            let migrator = bookmarkMigrator()
            let db = try Database(place.location, migrator: migrator)
            #expect(try migrator.appliedMigrations(in: db) == ["rename Bookmark.link to url"])
            try db.use { () throws in #expect(try Bookmark.count() == 2) }

            try db.clear()
            #expect(try migrator.appliedMigrations(in: db) == ["rename Bookmark.link to url"])
            // Applied again (the app opened again with its migrator): nothing re-runs. It used
            // to re-run the rename and fail with "Bookmark has no column 'link'".
            #expect(try migrator.apply(to: db).isEmpty)
            let reopened = try Database(place.location, migrator: migrator)
            try reopened.use {
                #expect(try Bookmark.count() == 0)
                let first = try Bookmark.create(["title": "Swift", "url": "https://swift.org"])
                #expect(first.id == 1)
            }
        }
    }

    @Test(arguments: TestEngine.all) func idsRestartAtOneInEveryTable(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            for name in ["a", "b", "c"] { try User.create(["name": name]) }
            try Item.create(["title": "x"])
            try db.clear()
            #expect(try User.count() == 0 && Item.count() == 0)
            #expect(try User.create(["name": "d"]).id == 1)
            #expect(try Item.create(["title": "y"]).id == 1)
            #expect(try db.tableNames() == ["Item", "User"])   // the tables stay
        }
    }

    @Test(arguments: TestEngine.all) func aClearRolledBackWithItsTransactionKeepsRowsAndIds(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            for name in ["a", "b"] { try User.create(["name": name]) }
            struct Undo: Error {}
            #expect(throws: Undo.self) {
                try db.transaction {
                    try db.clear()
                    throw Undo()
                }
            }
            #expect(try User.count() == 2)
            #expect(try User.create(["name": "c"]).id == 3)   // the sequence was not restarted
        }
    }

    /// PostgreSQL's TRUNCATE waits for every lock on the tables: a cursor this thread holds open
    /// (on another pooled connection) would make it wait forever. It waits 10 s, then `.busy`.
    @Test(.enabled(if: TestEngine.postgresConnection != nil)) func aClearBehindAnOpenCursorFailsInsteadOfHanging() throws {
        try withDatabase(.postgres) { db throws in
            for name in ["a", "b"] { try User.create(["name": name]) }
            let cursor = try User.query().cursor()
            #expect(try cursor.next()?.name == "a")
            let started = Date()
            let error = expectError(.busy) { try db.clear() }
            #expect(Date().timeIntervalSince(started) < 30)
            #expect(error?.message.hasPrefix("clear() waited 10s for the tables, which another connection holds") == true)
            cursor.close()
            #expect(try User.count() == 2)
            try db.clear()
            #expect(try User.count() == 0)
            #expect(try db.rows("SHOW lock_timeout") == [[.text("0")]])   // the session's setting, as it was
        }
    }

    @Test func anAutoincrementTableOfSQLiteRestartsToo() throws {
        try withDatabase(.sqlite) { db throws in
            try db.execute(#"CREATE TABLE "Counter" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "n" INTEGER)"#)
            try db.execute(#"CREATE TABLE "Other" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "n" INTEGER)"#)
            for n in 1...3 {
                try db.execute(#"INSERT INTO "Counter" ("n") VALUES (?)"#, [.integer(Int64(n))])
                try db.execute(#"INSERT INTO "Other" ("n") VALUES (?)"#, [.integer(Int64(n))])
            }
            try db.clear()
            try db.execute(#"INSERT INTO "Counter" ("n") VALUES (9)"#)
            #expect(try db.rows(#"SELECT "id" FROM "Counter""#) == [[.integer(1)]])
        }
    }
}
