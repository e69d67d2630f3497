@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// These tests change the global configuration, so they run one at a time;
/// every other suite uses its own scoped database.
@Suite("Configuration", .serialized)
struct ConfigurationTests {
    @Test func configureReplacesTheDatabaseAndAFailedConfigureKeepsTheOldOne() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Database.configure(.file(directory.appendingPathComponent("one.sqlite").path))
        #expect(try Database.current === first)
        try Item.create(["title": "in one"])
        let garbage = directory.appendingPathComponent("garbage.sqlite")
        try Data(repeating: 0x41, count: 4096).write(to: garbage)
        expectError(.notADatabase) { try Database.configure(.file(garbage.path)) }
        #expect(try Database.current === first)
        let second = try Database.configure(.inMemory)
        #expect(try Database.current === second)
        #expect(try Item.count() == 0)
        // A scoped database wins over the configured one, for its scope only.
        try first.use { () throws in #expect(try Item.count() == 1) }
        #expect(try Item.count() == 0)
    }

    @Test func temporaryDatabasesAreSeparateFreshFiles() throws {
        let one = try Database(.temporary)
        let two = try Database(.temporary)
        #expect(one.path != two.path)
        #expect(FileManager.default.fileExists(atPath: one.path))
        try one.use { try Item.create(["title": "x"]) }
        try two.use { () throws in #expect(try Item.count() == 0) }
        #expect(try storedValue(one, "PRAGMA journal_mode") == .text("wal"))
    }

    @Test(arguments: TestEngine.all) func automaticMigrationsOffCreatesNothing(engine: TestEngine) throws {
        let test = try engine.makeDatabase(automaticMigrations: false)
        defer { test.drop() }
        let db = test.database
        db.use {
            let error = expectError(engine.genericErrorCode) { try Item.create(["title": "x"]) }
            let missing = engine == .sqlite ? "no such table" : #"relation "Item" does not exist"#
            #expect(error?.message.contains(missing) == true)
        }
        #expect(try db.tableNames() == [])
    }

    @Test func standardDirectoriesFollowXDGAndAreNamedAfterTheProgram() throws {
        let caches = try Database.cachesDirectory()
        #expect(caches.hasSuffix("/" + Database.programName))
        #expect(FileManager.default.fileExists(atPath: caches))
        let documents = try Database.documentsDirectory()
        #expect(documents.hasSuffix("/" + Database.programName))
        let data = try Database.dataDirectory()
        #expect(data.hasSuffix("/" + Database.programName))
        #expect(DatabaseLocation.default == .dataDirectory("\(Database.programName).sqlite"))
    }
}
