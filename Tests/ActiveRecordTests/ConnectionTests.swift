@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

@Suite("SQLite connection: pragmas, bad files, errors")
struct ConnectionTests {
    @Test func fileDatabaseUsesWALNormalSyncForeignKeysAndABusyTimeout() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = try Database(.file(directory.appendingPathComponent("a.sqlite").path))
        #expect(try storedValue(db, "PRAGMA journal_mode") == .text("wal"))
        #expect(try storedValue(db, "PRAGMA synchronous") == .integer(1))  // NORMAL
        #expect(try storedValue(db, "PRAGMA foreign_keys") == .integer(1))
        #expect(try storedValue(db, "PRAGMA busy_timeout") == .integer(10_000))
    }

    @Test func aFileThatIsNotADatabaseFailsAtOpenAndIsLeftUntouched() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("notes.txt").path
        let garbage = Data(String(repeating: "this is not a database\n", count: 300).utf8)
        try garbage.write(to: URL(fileURLWithPath: path))
        let error = expectError(.notADatabase) { _ = try Database(.file(path)) }
        #expect(error?.message.contains(path) == true)
        #expect(error?.message.contains("left untouched") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["notes.txt"])
    }

    @Test func aMissingDirectoryIsAClearError() throws {
        let path = "/nonexistent-\(UUID().uuidString)/db.sqlite"
        let error = expectError(.cannotOpen) { _ = try Database(.file(path)) }
        #expect(error?.message.contains("does not exist") == true)
    }

    @Test func aReadOnlyFileIsAClearErrorAndIsLeftUntouched() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("ro.sqlite").path
        try Database(.file(path)).use { try Item.create(["title": "kept"]) }
        // Checkpoint the WAL so the main file holds everything, then close.
        _ = try Database(.file(path)).rows("PRAGMA wal_checkpoint(TRUNCATE)")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        try makeReadOnly(path)
        defer { undoReadOnly(path) }
        let error = expectError(.readOnly) { _ = try Database(.file(path)) }
        #expect(error?.message.contains("read-only") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        // Opened read-only on purpose, it reads.
        let reader = try Database(.file(path), readOnly: true)
        #expect(try storedValue(reader, #"SELECT "title" FROM "Item""#) == .text("kept"))
        expectError(.readOnly) { try reader.execute(#"DELETE FROM "Item""#) }
    }

    /// Root ignores file modes, so as root the file is made immutable instead.
    private func makeReadOnly(_ path: String) throws {
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
        if geteuid() == 0 {
            let chattr = Process()
            chattr.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
            chattr.arguments = ["+i", path]
            try chattr.run()
            chattr.waitUntilExit()
            try #require(chattr.terminationStatus == 0, "chattr +i is needed to make a file read-only for root")
        }
    }

    private func undoReadOnly(_ path: String) {
        if geteuid() == 0 {
            let chattr = Process()
            chattr.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
            chattr.arguments = ["-i", path]
            try? chattr.run()
            chattr.waitUntilExit()
        }
        try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
    }

    @Test(arguments: TestEngine.all) func constraintViolationsAreConstraintErrorsWithSQLButNoValues(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Account.create(["email": "secret@example.com"])
            let error = expectError(.constraint) { try Account.create(["email": "secret@example.com"]) }
            #expect(error?.isUniqueViolation == true)
            let insert = #"INSERT INTO "Account" ("createdAt", "updatedAt", "email") VALUES (?, ?, ?)"#
            switch engine {
            case .sqlite:
                #expect(error?.engineCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
                #expect(error?.sql == insert)
                #expect(error?.message.contains("UNIQUE constraint failed: Account.email") == true)
            case .postgres:
                #expect(error?.engineState == "23505")
                #expect(error?.sql == insert + #" RETURNING "id""#)
                #expect(error?.message.contains(#"violates unique constraint "Account_email_unique""#) == true)
            }
            #expect(error?.description.contains("secret@example.com") == false)
            #expect(try Account.count() == 1)
            // The statement is usable again after the failure.
            try Account.create(["email": "other@example.com"])
            #expect(try Account.count() == 2)
            #expect(try indexNames(db, "Account") == ["Account_email_unique"])
        }
    }

    @Test(arguments: TestEngine.all) func boundValuesAppearInErrorsOnlyWhenAsked(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Account.create(["email": "secret@example.com"])
            let quiet = expectError(.constraint) { try Account.create(["email": "secret@example.com"]) }
            #expect(quiet?.expandedSQL == nil)
            db.includesBoundValuesInErrors = true
            let verbose = expectError(.constraint) { try Account.create(["email": "secret@example.com"]) }
            #expect(verbose?.expandedSQL?.contains("'secret@example.com'") == true)
            #expect(verbose?.description.contains("secret@example.com") == true)
        }
    }

    @Test(arguments: TestEngine.all) func rawSQLBindsValuesAndRefusesASecondStatement(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Item.create(["title": "a"])
            let hostile = "x'); DROP TABLE \"Item\"; --"
            try db.execute(#"UPDATE "Item" SET "title" = ?"#, [.text(hostile)])
            #expect(try storedValue(db, #"SELECT "title" FROM "Item""#) == .text(hostile))
            expectError(.misuse) { try db.execute(#"DELETE FROM "Item"; DROP TABLE "Item""#) }
            #expect(try Item.count() == 1)
            expectError(engine.genericErrorCode) { try db.execute("SELEKT 1") }
        }
    }

    @Test(arguments: TestEngine.all) func statementsAreCachedAndReused(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Item.create(["title": "a"])
            let recorder = SQLRecorder(db)
            for id in 1...3 { _ = try Item.find(Int64(id)) }
            #expect(Set(recorder.all).count == 1)
            // A prepared-statement count that stays flat shows reuse (one thread: one connection).
            let count = engine == .sqlite ? "SELECT count(*) FROM sqlite_stmt" : "SELECT count(*) FROM pg_prepared_statements"
            let before = try storedValue(db, count)
            for id in 1...50 { _ = try Item.find(Int64(id)) }
            let after = try storedValue(db, count)
            #expect(before == after)
        }
    }
}

final class Account: Model {
    @Column(index: .unique) var email: String = ""
}
