import ActiveRecord
import Dispatch
import Foundation
import Testing

/// Where a read goes on a SQLite file database: through a reader connection, unless the
/// calling thread holds that database's writer (then through the writer, so that it sees its
/// own uncommitted writes). A thread tells which writers it holds by a count of its own, not
/// by reading the writer's fields (which every save writes): these pin down what the count
/// must keep right.
@Suite("Reader routing")
struct ReaderRoutingTests {
    /// Two file databases in a directory of their own, each with one committed `Item`.
    private func withTwoDatabases(_ body: (Database, Database) throws -> Void) throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Database(.file(directory.appendingPathComponent("first.sqlite").path))
        let second = try Database(.file(directory.appendingPathComponent("second.sqlite").path))
        for database in [first, second] {
            try database.use { try Item.create(["title": "committed"]) }
        }
        try body(first, second)
    }

    /// A transaction on another database, begun and ended inside this one's, leaves the
    /// thread holding this one's writer: its reads still see its uncommitted writes.
    @Test func readsStillSeeUncommittedWritesAfterAnotherDatabasesTransactionEnds() throws {
        try withTwoDatabases { first, second in
            try first.use { () throws in
                try first.transaction {
                    try second.use {
                        try second.transaction { try Item.create(["title": "second's"]) }
                    }
                    try Item.create(["title": "uncommitted"])
                    #expect(try Item.count() == 2)
                    #expect(try Item.all(where: "title", equals: "uncommitted").count == 1)
                    throw Rollback()
                }
            }
            try first.use { () throws in #expect(try Item.count() == 1) }
            try second.use { () throws in #expect(try Item.count() == 2) }
        }
    }

    /// Holding one database's writer, a thread reads another database through that one's
    /// readers: it neither waits for the other's writer (held by another thread's open
    /// transaction) nor sees that transaction's uncommitted row.
    @Test func aReadOfAnotherDatabaseInsideATransactionDoesNotWaitForItsWriter() throws {
        try withTwoDatabases { first, second in
            let holding = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
            let finished = DispatchSemaphore(value: 0)
            // Long enough to tell a read that waited for the writer from one that did not.
            let patience: Double = 10
            let thread = Thread {
                defer { finished.signal() }
                _ = try? second.use {
                    try second.transaction {
                        try Item.create(["title": "not yet committed"])
                        holding.signal()
                        _ = done.wait(timeout: .now() + patience)
                    }
                }
            }
            thread.start()
            holding.wait()
            let started = Date()
            var seen = -1
            try first.use {
                try first.transaction {
                    try Item.create(["title": "first's"])
                    seen = try second.use { try Item.count() }
                }
            }
            let waited = Date().timeIntervalSince(started)
            done.signal()
            finished.wait()
            #expect(seen == 1)
            #expect(waited < patience / 2, "the read waited \(waited) s for the other database's writer")
            try second.use { () throws in #expect(try Item.count() == 2) }
        }
    }
}
