@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Runs the examples as a user would, and checks what they print.
@Suite("Examples")
struct QuickstartTests {
    /// The directory holding the built products (next to the test bundle).
    static var productsDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    func run(_ product: String, arguments: [String] = [], environment: [String: String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = Self.productsDirectory.appendingPathComponent(product)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// The second example: the same models on PostgreSQL, four threads transferring at once
    /// (each holding a pooled connection), conflicts retried; nothing lost.
    @Test(.enabled(if: TestEngine.postgresConnection != nil)) func thePostgreSQLExampleMovesMoneyOnFourThreads() throws {
        try withDatabaseLocation(.postgres) { place in
            let url = try #require(ProcessInfo.processInfo.environment["AR_TEST_POSTGRES_URL"])
            let schema = String(try #require(place.argument.split(separator: "=").last)).replacingOccurrences(of: "'", with: "")
            let (status, output) = try run(
                "ActiveRecordPostgreSQLExample", arguments: [url + "&options=-csearch_path%3D" + schema], environment: [:])
            #expect(status == 0, "\(output)")
            #expect(output == """
                opened: 2 accounts, total 200
                transferred: 100 transfers on 4 threads; alice 100, bob 100; total 200

                """)
        }
    }

    @Test func quickstartRunsTheSeedScenarioOnTheDefaultDatabase() throws {
        let data = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        // Twice: the second run starts from an empty table, too.
        for _ in 1...2 {
            let (status, output) = try run(
                "ActiveRecordQuickstart",
                environment: ["XDG_DATA_HOME": data.path, "XDG_CACHE_HOME": data.path + "/cache", "ACTIVERECORD_DATABASE": ""])
            #expect(status == 0, "\(output)")
            #expect(output == """
                database: \(data.path)/ActiveRecordQuickstart/ActiveRecordQuickstart.sqlite
                created: User #1 name=Alex age=31
                listed: 2 users: Alex, Maria
                changed: name: 'Alex' → 'John'
                updated: User #1 is now John
                destroyed: User #1; 1 left: Maria

                """)
        }
        #expect(FileManager.default.fileExists(atPath: "\(data.path)/ActiveRecordQuickstart/ActiveRecordQuickstart.sqlite"))
    }

    /// The default database moved from the cache directory (which cleaning tools empty) to
    /// the data directory: one found in the old place is moved, never silently ignored.
    @Test func anOldDefaultDatabaseInTheCacheDirectoryIsMovedToTheDataDirectory() throws {
        let home = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let cache = home.appendingPathComponent("cache/ActiveRecordQuickstart")
        let data = home.appendingPathComponent("data/ActiveRecordQuickstart")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        let old = cache.appendingPathComponent("ActiveRecordQuickstart.sqlite").path
        try Database(.file(old)).execute("CREATE TABLE kept (x)")
        let environment = [
            "XDG_DATA_HOME": home.appendingPathComponent("data").path, "XDG_CACHE_HOME": home.appendingPathComponent("cache").path,
            "ACTIVERECORD_DATABASE": "",
        ]
        let (status, output) = try run("ActiveRecordQuickstart", environment: environment)
        #expect(status == 0, "\(output)")
        let moved = data.appendingPathComponent("ActiveRecordQuickstart.sqlite").path
        // Through swift-log's default handler (standard error): level warning (the default
        // logger prints the library's lines from .warning), label activerecord.
        #expect(output.contains("warning activerecord:"))
        #expect(output.contains("moved the database from the old default location \(old)"))
        #expect(output.contains("database: \(moved)"))
        #expect(!FileManager.default.fileExists(atPath: old))
        #expect(try Database(.file(moved)).tableNames().contains("kept"))
        // Both there: the data directory's is used, and the other one is named, not ignored.
        try Database(.file(old)).execute("CREATE TABLE other (x)")
        let (_, second) = try run("ActiveRecordQuickstart", environment: environment)
        #expect(second.contains("database: \(moved)"))
        #expect(second.contains("another database at the old default location \(old) (the cache directory) is left alone"))
    }

    @Test func quickstartReportsABadDatabaseClearly() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("garbage.sqlite").path
        try Data("not a database at all, but long enough to have a header....".utf8).write(to: URL(fileURLWithPath: path))
        let (status, output) = try run("ActiveRecordQuickstart", environment: ["ACTIVERECORD_DATABASE": path])
        #expect(status == 1)
        #expect(output.hasPrefix("error: notADatabase: \(path) is not an SQLite database"))
    }
}
