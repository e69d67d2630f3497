@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A model for the read-block and found-by-id paths of a find.
final class ScopedFind: Model {
    @Column var name: String = ""

    /// A new record of this name, saved.
    static func saved(_ name: String) throws -> ScopedFind {
        let record = ScopedFind()
        record.name = name
        try record.save()
        return record
    }
}

/// A find by id takes its row's id from the id it looked for (the row `WHERE id = ?` found),
/// and a find inside a ``Database/read(_:)`` block reaches the block's connection through a
/// list of the thread's open blocks (issue 35, point 2). What these must keep, on each engine.
@Suite struct FindPathMoreTests {
    /// A found record carries its own id and timestamps, and saves back to its own row; a
    /// missing id finds nothing; the same cached statement serves each find.
    @Test(arguments: TestEngine.all) func foundRecordHasItsRowsIDAndTimestamps(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let records = try (0..<3).map { try ScopedFind.saved("record \($0)") }
            for record in records.reversed() {
                let found = try #require(try ScopedFind.find(record.id!))
                #expect(found.id == record.id && found.name == record.name)
                #expect(found.createdAt == record.createdAt && found.updatedAt == record.updatedAt)
                #expect(!found.isNewRecord && !found.hasChanges)
            }
            #expect(try ScopedFind.find(records[2].id! + 1000) == nil)

            let found = try #require(try ScopedFind.find(records[1].id!))
            found.name = "changed"
            try found.save()
            #expect(try ScopedFind.find(records[1].id!)?.name == "changed")
            #expect(try ScopedFind.find(records[0].id!)?.name == "record 0")
            #expect(try ScopedFind.find(records[2].id!)?.name == "record 2")
        }
    }

    /// Finds inside a `read` block read its snapshot: a write after the block's first read
    /// (here on the same thread, outside the block's connection) is not seen until the block
    /// ends, a nested `read` of the same database keeps the snapshot, and after the block
    /// the find sees the write.
    @Test(arguments: TestEngine.all) func findsInsideReadBlockKeepTheirSnapshot(_ engine: TestEngine) throws {
        try withDatabase(engine, file: true) { database in
            let record = try ScopedFind.saved("before")
            let id = record.id!
            try database.read {
                #expect(try ScopedFind.find(id)?.name == "before")
                record.name = "after"
                try record.save()
                #expect(try ScopedFind.find(id)?.name == "before")
                let nested = try database.read { try ScopedFind.find(id)?.name }
                #expect(nested == "before")
                #expect(try ScopedFind.find(id)?.name == "before")
            }
            #expect(try ScopedFind.find(id)?.name == "after")
        }
    }

    /// With blocks of two databases open on one thread, the inner on the other database, a
    /// find on each reads through its own block (the outer one found past the inner one).
    @Test(arguments: TestEngine.all) func nestedBlocksOfTwoDatabasesEachReadTheirOwn(_ engine: TestEngine) throws {
        try withDatabase(engine, file: true) { first in
            let one = try ScopedFind.saved("first before")
            try withDatabase(engine, file: true) { second in
                let two = try ScopedFind.saved("second before")
                try first.read {
                    #expect(try first.use { try ScopedFind.find(one.id!)?.name } == "first before")
                    try second.read {
                        #expect(try ScopedFind.find(two.id!)?.name == "second before")
                        try first.use {
                            one.name = "first after"
                            try one.save()
                        }
                        two.name = "second after"
                        try two.save()
                        // Each database's finds through its own block: neither sees the write.
                        #expect(try first.use { try ScopedFind.find(one.id!)?.name } == "first before")
                        #expect(try ScopedFind.find(two.id!)?.name == "second before")
                    }
                    // The inner block gone, the outer one still reads its snapshot.
                    #expect(try first.use { try ScopedFind.find(one.id!)?.name } == "first before")
                    #expect(try second.use { try ScopedFind.find(two.id!)?.name } == "second after")
                }
                #expect(try first.use { try ScopedFind.find(one.id!)?.name } == "first after")
            }
        }
    }

    /// A block open on one thread does not pin another thread's finds: while it holds its
    /// snapshot, the other thread's find sees a write the block does not.
    @Test(arguments: TestEngine.all) func blockOnAnotherThreadDoesNotPinThisThread(_ engine: TestEngine) throws {
        try withDatabase(engine, file: true) { database in
            let record = try ScopedFind.saved("before")
            let id = record.id!
            let opened = DispatchSemaphore(value: 0), written = DispatchSemaphore(value: 0)
            let seen = Lock<[String?]>([])
            let thread = Thread {
                do {
                    try database.use {
                        try database.read {
                            let first = try ScopedFind.find(id)?.name
                            opened.signal()
                            written.wait()
                            let second = try ScopedFind.find(id)?.name
                            seen.withLock { $0 = [first, second] }
                        }
                    }
                } catch {
                    opened.signal()
                    seen.withLock { $0 = ["error: \(error)"] }
                }
            }
            thread.start()
            opened.wait()
            record.name = "after"
            try record.save()
            #expect(try ScopedFind.find(id)?.name == "after")
            written.signal()
            while seen.withLock({ $0.isEmpty }) { Thread.sleep(forTimeInterval: 0.001) }
            #expect(seen.withLock { $0 } == ["before", "before"])
        }
    }

    /// A block left by an error leaves nothing behind: finds after it read the current data,
    /// and the next block reads a new snapshot.
    @Test(arguments: TestEngine.all) func blockLeftByAnErrorLeavesNoScope(_ engine: TestEngine) throws {
        struct Stop: Error {}
        try withDatabase(engine, file: true) { database in
            let record = try ScopedFind.saved("before")
            let id = record.id!
            var seenInBlock: String?
            do {
                try database.read { () throws -> Void in
                    seenInBlock = try ScopedFind.find(id)?.name
                    throw Stop()
                }
                Issue.record("the block's error was not thrown")
            } catch is Stop {}
            #expect(seenInBlock == "before")
            record.name = "after"
            try record.save()
            #expect(try ScopedFind.find(id)?.name == "after")
            try database.read {
                #expect(try ScopedFind.find(id)?.name == "after")
                record.name = "unseen"
                try record.save()
                #expect(try ScopedFind.find(id)?.name == "after")
            }
            record.name = "last"
            try record.save()
            #expect(try ScopedFind.find(id)?.name == "last")
        }
    }
}
