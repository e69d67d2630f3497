@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A model with a column of every common kind, each also optional, for the find path.
final class FoundEverything: Model {
    @Column var text: String = ""
    @Column var maybeText: String? = nil
    @Column var int: Int = 0
    @Column var maybeInt: Int? = nil
    @Column var int64: Int64 = 0
    @Column var maybeInt64: Int64? = nil
    @Column var real: Double = 0
    @Column var maybeReal: Double? = nil
    @Column var flag: Bool = false
    @Column var maybeFlag: Bool? = nil
    @Column var bytes: Data = Data()
    @Column var maybeBytes: Data? = nil
    @Column var date: Date = Date(timeIntervalSince1970: 0)
    @Column var maybeDate: Date? = nil
}

/// A model whose `init()` counts its calls on each thread: a found record is made by its
/// class's `init()` (tests on both engines run at once, each on its own thread).
final class CountedFind: Model {
    private static let counts = Lock<[ObjectIdentifier: Int]>([:])
    /// How many records this thread made.
    static var made: Int { counts.withLock { $0[ObjectIdentifier(Thread.current)] ?? 0 } }
    @Column var name: String = ""

    required init() {
        super.init()
        Self.counts.withLock { $0[ObjectIdentifier(Thread.current), default: 0] += 1 }
    }
}

/// The find and delete by id paths (issue 35, point 2): a find runs its cached statement with
/// the id bound and reads the one row straight into a new record (the layers between
/// `find` and the statement folded, the prepared form run without a retain), a delete by id
/// runs its statement in one engine call. The behaviour these must keep, on each engine.
@Suite struct FindPathTests {
    /// Every column kind reads back by `find` as saved, and every optional one as `nil` when
    /// `NULL`; the same statement then reads a row of values after a row of `NULL`s.
    @Test(arguments: TestEngine.all) func everyColumnKindAndNullReadBack(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let full = FoundEverything()
            full.text = "é text ✓"
            full.maybeText = "maybe"
            full.int = -42
            full.maybeInt = 7
            full.int64 = Int64.max - 1
            full.maybeInt64 = Int64.min + 1
            full.real = 3.25
            full.maybeReal = -0.5
            full.flag = true
            full.maybeFlag = false
            full.bytes = Data([0, 1, 2, 255, 0])
            full.maybeBytes = Data()
            full.date = Date(timeIntervalSince1970: 1_700_000_000.5)
            full.maybeDate = Date(timeIntervalSince1970: 86_400)
            try full.save()
            let empty = FoundEverything()
            try empty.save()

            for _ in 0..<2 {
                let nulls = try #require(try FoundEverything.find(empty.id!))
                #expect(nulls.maybeText == nil && nulls.maybeInt == nil && nulls.maybeInt64 == nil)
                #expect(nulls.maybeReal == nil && nulls.maybeFlag == nil && nulls.maybeBytes == nil && nulls.maybeDate == nil)
                #expect(nulls.text == "" && nulls.int == 0 && nulls.bytes == Data() && !nulls.flag)
                #expect(!nulls.hasChanges && !nulls.isNewRecord)
                #expect(nulls.createdAt != nil && nulls.updatedAt != nil)

                let found = try #require(try FoundEverything.find(full.id!))
                #expect(found.id == full.id)
                #expect(found.text == "é text ✓" && found.maybeText == "maybe")
                #expect(found.int == -42 && found.maybeInt == 7)
                #expect(found.int64 == Int64.max - 1 && found.maybeInt64 == Int64.min + 1)
                #expect(found.real == 3.25 && found.maybeReal == -0.5)
                #expect(found.flag && found.maybeFlag == false)
                #expect(found.bytes == Data([0, 1, 2, 255, 0]) && found.maybeBytes == Data())
                #expect(found.date == Date(timeIntervalSince1970: 1_700_000_000.5))
                #expect(found.maybeDate == Date(timeIntervalSince1970: 86_400))
                #expect(!found.hasChanges && !found.isNewRecord)
            }
        }
    }

    /// A find of an id with no row is `nil` (and makes no record); the statement then finds a
    /// row that exists. A delete of a missing id is `false` and deletes nothing; one of an
    /// existing id `true`, and a second delete of it `false`.
    @Test(arguments: TestEngine.all) func missingIdsFindNothingAndDeleteNothing(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let first = CountedFind()
            first.name = "first"
            try first.save()
            let second = CountedFind()
            second.name = "second"
            try second.save()
            let made = CountedFind.made
            #expect(try CountedFind.find(999_999) == nil)
            #expect(try CountedFind.find(-1) == nil)
            #expect(CountedFind.made == made)
            #expect(try CountedFind.find(first.id!)?.name == "first")
            #expect(CountedFind.made == made + 1)

            #expect(try CountedFind.delete(id: 999_999) == false)
            #expect(try CountedFind.count() == 2)
            #expect(try CountedFind.delete(id: first.id!) == true)
            #expect(try CountedFind.delete(id: first.id!) == false)
            #expect(try CountedFind.find(first.id!) == nil)
            #expect(try CountedFind.find(second.id!)?.name == "second")
            #expect(try CountedFind.count() == 1)
        }
    }

    /// Inside a transaction a find sees the transaction's own writes (a row inserted, a row
    /// deleted by id); after a rollback, outside it, neither is seen. Inside a `read` block a
    /// find reads the block's snapshot.
    @Test(arguments: TestEngine.all) func findInsideAndOutsideTransactionsAndReadBlocks(_ engine: TestEngine) throws {
        try withDatabase(engine, file: true) { db throws in
            let kept = CountedFind()
            kept.name = "kept"
            try kept.save()
            var inserted: Int64?
            struct Rollback: Error {}
            do {
                try db.transaction {
                    let record = CountedFind()
                    record.name = "uncommitted"
                    try record.save()
                    inserted = record.id
                    #expect(try CountedFind.find(record.id!)?.name == "uncommitted")
                    #expect(try CountedFind.delete(id: kept.id!))
                    #expect(try CountedFind.find(kept.id!) == nil)
                    throw Rollback()
                }
            } catch is Rollback {}
            #expect(try CountedFind.find(try #require(inserted)) == nil)
            #expect(try CountedFind.find(kept.id!)?.name == "kept")

            try db.read { () throws in
                #expect(try CountedFind.find(kept.id!)?.name == "kept")
                #expect(try CountedFind.find(12_345) == nil)
            }
            // Many finds in one block, each on the block's connection.
            let ids = try (0..<20).map { index -> Int64 in
                let record = CountedFind()
                record.name = "row \(index)"
                try record.save()
                return record.id!
            }
            try db.read { () throws in
                for (index, id) in ids.enumerated() { #expect(try CountedFind.find(id)?.name == "row \(index)") }
            }
        }
    }

    /// On a SQLite file, a find outside a transaction reads through a reader connection and does
    /// not see another thread's uncommitted row, while that thread's own find (on the writer)
    /// does; once committed, the row is found. (The table is made first: a table made inside the
    /// other thread's transaction would be waited for.)
    @Test func sqliteFindOnAReaderAndOnTheWriter() throws {
        try withDatabase(.sqlite, file: true) { db throws in
            let first = CountedFind()
            first.name = "before"
            try first.save()
            let inserted = DispatchSemaphore(value: 0), checked = DispatchSemaphore(value: 0)
            let finished = DispatchSemaphore(value: 0)
            let seenByWriter = Lock<String?>(nil)
            let id = Lock<Int64?>(nil)
            let thread = Thread {
                defer { finished.signal() }
                _ = try? db.use {
                    try db.transaction {
                        let record = CountedFind()
                        record.name = "writer's"
                        try record.save()
                        id.withLock { $0 = record.id }
                        let seen = try CountedFind.find(record.id!)?.name
                        seenByWriter.withLock { $0 = seen }
                        inserted.signal()
                        // Bounded, so that a find that waited for this writer fails the test
                        // instead of hanging it.
                        _ = checked.wait(timeout: .now() + 10)
                    }
                }
            }
            thread.start()
            #expect(inserted.wait(timeout: .now() + 10) == .success)
            let pending = try #require(id.withLock { $0 })
            #expect(try CountedFind.find(pending) == nil)
            #expect(try CountedFind.find(first.id!)?.name == "before")
            checked.signal()
            finished.wait()
            #expect(seenByWriter.withLock { $0 } == "writer's")
            #expect(try CountedFind.find(pending)?.name == "writer's")
        }
    }

    /// With the SQL logged with its values, a find and a delete by id run aside (the logged
    /// path) and still find, miss and delete as they do unlogged; the logged SQL carries the id.
    @Test(arguments: TestEngine.all) func loggedFindsAndDeletes(_ engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let record = CountedFind()
            record.name = "logged"
            try record.save()
            let log = LogLines()
            db.logger = log.logger(level: .trace, metadata: true)
            db.logsBoundValues = true
            #expect(try CountedFind.find(record.id!)?.name == "logged")
            #expect(try CountedFind.find(777_777) == nil)
            #expect(log.all.contains { $0.contains("777777") }, "\(log.all)")
            #expect(try CountedFind.delete(id: 777_777) == false)
            #expect(try CountedFind.delete(id: record.id!) == true)
            db.logger = nil
            #expect(try CountedFind.find(record.id!) == nil)
        }
    }
}
