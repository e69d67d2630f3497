@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Logging
import Testing

final class LoggedNote: Model {
    @Column var title: String = ""
}

/// The library's log through swift-log: SQL at trace (values only when asked), connections a
/// pool opens at debug, migrations at info, drift left alone at warning; nothing below the
/// logger's level, nothing at all with no logger.
@Suite("Logging through swift-log")
struct LoggingTests {
    @Test(arguments: TestEngine.all) func sqlGoesToTraceWithoutItsValues(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let log = LogLines()
            db.logger = log.logger(level: .trace, metadata: true)
            try LoggedNote.create(["title": "secret diary"])
            let inserts = log.all.filter { $0.hasPrefix("trace: INSERT INTO \"LoggedNote\"") }
            #expect(inserts.count == 1)
            #expect(!log.all.contains { $0.contains("secret diary") })  // values are not logged
            #expect(log.all.allSatisfy { $0.hasPrefix("trace: ") || $0.hasPrefix("debug: ") })

            db.logsBoundValues = true
            try LoggedNote.create(["title": "open book"])
            let expanded = log.all.filter { $0.contains("[expandedSQL: INSERT INTO \"LoggedNote\"") }
            #expect(expanded.count == 1)
            #expect(expanded.first?.contains("'open book'") == true, "\(expanded)")
        }
    }

    @Test func aLoggerAboveTraceGetsNoSQLAndNilGetsNothing() throws {
        try withDatabase(.sqlite, file: true) { db throws in
            let log = LogLines()
            db.logger = log.logger(level: .info)
            try LoggedNote.create(["title": "a"])
            _ = try db.read { try LoggedNote.all() }
            #expect(log.all.isEmpty)

            db.logger = nil
            try LoggedNote.create(["title": "b"])
            #expect(log.all.isEmpty)
        }
    }

    @Test func aReaderConnectionOpeningGoesToDebug() throws {
        try withDatabase(.sqlite, file: true) { db throws in
            let log = LogLines()
            db.logger = log.logger(level: .debug, metadata: true)
            try LoggedNote.create(["title": "a"])
            #expect(try db.read { try LoggedNote.all().count } == 1)
            #expect(log.all.contains { $0.hasPrefix("debug: opened a reader connection [maximum: ") })
            #expect(!log.all.contains { $0.hasPrefix("trace: ") })
        }
    }

    @Test func migrationStepsGoToInfo() throws {
        try withDatabaseFile { path in
            try Database(.file(path)).use { try BookmarkV1.Bookmark.create(["title": "Swift", "link": "https://swift.org"]) }
            let db = try Database(.file(path))
            let log = LogLines()
            db.logger = log.logger(level: .info)
            #expect(try bookmarkMigrator().apply(to: db) == ["rename Bookmark.link to url"])
            #expect(log.all == ["info: migration 'rename Bookmark.link to url' applied (step 1 of 1)"])
        }
    }
}
