@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Logging
import Synchronization
import Testing

/// The same table, "Gadget", as a first version and as a later version of the class.
final class GadgetV1: Model {
    override class var tableName: String { "Gadget" }
    @Column var name: String = ""
    @Column var legacy: String = "old"
}

final class GadgetV2: Model {
    override class var tableName: String { "Gadget" }
    @Column var name: String = ""
    @Column(index: .index) var price: Double = 9.5
    @Column var note: String? = nil
}

/// Log lines, captured.
/// The lines a database logs, each as `level: message` (metadata in brackets when asked for).
final class LogLines: Sendable {
    let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }

    /// A logger at `level` that appends here.
    func logger(level: Logger.Level = .info, metadata: Bool = false) -> Logger {
        var logger = Logger(label: "test") { _ in Handler(lines: self, withMetadata: metadata) }
        logger.logLevel = level
        return logger
    }

    private struct Handler: LogHandler {
        let lines: LogLines
        let withMetadata: Bool
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var line = "\(event.level): \(event.message)"
            if withMetadata, let metadata = event.metadata, !metadata.isEmpty {
                line += " " + metadata.keys.sorted().map { "[\($0): \(metadata[$0]!)]" }.joined(separator: " ")
            }
            lines.lines.withLock { $0.append(line) }
        }
    }
}

@Suite("Automatic migration")
struct MigrationTests {
    @Test(arguments: TestEngine.all) func aClassThatGainedAColumnSavesAndReadsItWithOldRowsIntact(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in try gainedAColumn(place.location) }
    }

    private func gainedAColumn(_ location: DatabaseLocation) throws {
        try Database(location).use {
            try GadgetV1.create(["name": "first"])
            try GadgetV1.create(["name": "second"])
        }
        // The program is rebuilt with a new version of the class.
        let db = try Database(location)
        let log = LogLines()
        db.logger = log.logger()
        try db.use { () throws in
            let new = try GadgetV2.create(["name": "third", "price": 12.25, "note": "new"])
            let all = try GadgetV2.all()
            #expect(all.map(\.name) == ["first", "second", "third"])
            #expect(all.map(\.price) == [9.5, 9.5, 12.25])  // old rows read the default
            #expect(all.map(\.note) == [nil, nil, "new"])
            #expect(try GadgetV2.find(new.id!)?.price == 12.25)
        }
        // The column the class dropped is left alone, with its data, and reported.
        // (new rows get its SQL default)
        #expect(try storedValue(db, #"SELECT count(*) FROM "Gadget" WHERE "legacy" = 'old'"#) == .integer(3))
        #expect(log.all == [
            "info: automatic migration: Gadget: add columns price, note; create indexes Gadget_price_index",
            "warning: schema drift: Gadget: columns not in the model, left alone: legacy",
        ])
        #expect(try indexNames(db, "Gadget") == ["Gadget_price_index"])
    }

    @Test(arguments: TestEngine.all) func theDriftReportListsWithoutApplying(engine: TestEngine) throws {
        let test = try engine.makeDatabase()
        defer { test.drop() }
        let db = test.database
        db.logger = nil
        #expect(try db.drift(of: [GadgetV2.self]) == [
            TableDrift(table: "Gadget", tableIsMissing: true, missingIndexes: ["Gadget_price_index"]),
        ])
        try db.use { try GadgetV1.create(["name": "x"]) }
        try db.execute(#"ALTER TABLE "Gadget" ADD COLUMN "price" TEXT"#)
        let drift = try #require(try db.drift(of: [GadgetV2.self]).first)
        #expect(drift.missingColumns == ["note"])
        #expect(drift.missingIndexes == ["Gadget_price_index"])
        #expect(drift.extraColumns == ["legacy"])
        // The types as the engine writes them.
        let (declared, found) = engine == .sqlite ? ("REAL", "TEXT") : ("DOUBLE PRECISION", "text")
        #expect(drift.typeMismatches == [.init(column: "price", declared: declared, found: found)])
        #expect(drift.description == "Gadget: add columns note; create indexes Gadget_price_index; columns not in the model, left alone: legacy; price is \(found) in the database but declared \(declared) (left alone; a versioned migration can change it)")
        // Nothing was applied.
        #expect(try columnNames(db, "Gadget").count == 6)
        #expect(try db.drift(of: [GadgetV1.self]).first?.extraColumns == ["price"])
    }

    @Test(arguments: TestEngine.all) func aUniqueIndexOverDuplicatesIsAClearErrorAndChangesNothing(engine: TestEngine) throws {
        final class Login: Model {
            @Column var name: String = ""
        }
        final class UniqueLogin: Model {
            override class var tableName: String { "Login" }
            @Column(index: .unique) var name: String = ""
            @Column var extra: Int = 0
        }
        let test = try engine.makeDatabase()
        defer { test.drop() }
        let db = test.database
        try db.use {
            try Login.create(["name": "same"])
            try Login.create(["name": "same"])
        }
        try db.use { () throws in
            let error = expectError(.constraint) { _ = try UniqueLogin.count() }
            #expect(error?.message.contains("rows of Login already repeat values of name") == true)
        }
        // One transaction: the column added before the index failed is gone again.
        #expect(try columnNames(db, "Login").count == 4)
    }
}

@Suite("Automatic migration of several models")
struct MigrateAllTests {
    @Test(arguments: TestEngine.all) func migrateAppliesEveryModelInOneTransactionOrNone(engine: TestEngine) throws {
        final class Shelf: Model { @Column var label: String = "" }
        final class Book: Model {
            @Column var title: String = ""
            @Column(index: .unique) var isbn: String = ""
        }
        let test = try engine.makeDatabase()
        defer { test.drop() }
        let db = test.database
        db.logger = nil
        let drifts = try db.migrate([Shelf.self, Book.self])
        #expect(drifts.map(\.tableIsMissing) == [true, true])
        #expect(try db.tableNames() == ["Book", "Shelf"])
        #expect(try db.drift(of: [Shelf.self, Book.self]).allSatisfy(\.isEmpty))
        // A failing table rolls back the others too.
        final class Crate: Model { @Column var size: Int = 0 }
        final class DuplicateBook: Model {
            override class var tableName: String { "Book" }
            @Column var title: String = ""
            @Column var isbn: String = ""
            @Column(index: .unique) var shelfCode: String = ""
        }
        try db.execute(#"INSERT INTO "Book" ("title", "isbn") VALUES ('a', '1'), ('b', '2')"#)
        expectError(.constraint) { try db.migrate([Crate.self, DuplicateBook.self]) }
        #expect(try db.tableNames() == ["Book", "Shelf"])  // no Crate
        #expect(try columnNames(db, "Book").count == 5)  // no shelfCode
    }
}
