@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

final class Reading: Model {
    @Column var n: Int = 0
}

/// `RecordCursor` and the C API's cursor share one strategy: outside a transaction, a
/// connection leased for the cursor's life (an SQLite reader; on PostgreSQL a pooled
/// connection in a read-only transaction); in a transaction, the transaction's connection
/// (on SQLite's writer, or in memory, locked per step).
@Suite("Cursors")
struct CursorTests {
    /// A new database (a file for SQLite) holding readings 1, 2, 3, current for `body`.
    private func withReadings(_ engine: TestEngine = .sqlite, _ body: (Database) throws -> Void) throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let database = test.database
        try database.use {
            for n in 1...3 { try Reading.create(["n": n]) }
            try body(database)
        }
    }

    @Test(arguments: TestEngine.all) func outsideATransactionACursorReadsTheSnapshotOfItsFirstStep(engine: TestEngine) throws {
        try withReadings(engine) { database in
            let cursor = try Reading.query().cursor()
            #expect(try cursor.next()?.n == 1)
            // Interleaving: another thread commits a fourth reading while the cursor is open.
            // The writer is free (the cursor holds a reader, not the writer's lock), and the
            // cursor keeps reading the rows as they were: a cursor stepping on the writer
            // would reach the new row, which comes later in id order.
            let wrote = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                database.use { _ = try? Reading.create(["n": 4]) }
                wrote.signal()
            }
            #expect(wrote.wait(timeout: .now() + 10) == .success)
            #expect(try Reading.count() == 4)
            var rest: [Int] = []
            while let reading = try cursor.next() { rest.append(reading.n) }
            #expect(rest == [2, 3])
            #expect(try cursor.next() == nil)
            // Ran out: the reader went back; a new cursor sees the fourth reading.
            #expect(try Reading.query().cursor().next().map { _ in true } == true)
            var all: [Int] = []
            try Reading.query().forEach { all.append($0.n) }
            #expect(all == [1, 2, 3, 4])
        }
    }

    @Test(arguments: TestEngine.all) func inATransactionACursorReadsTheTransactionsOwnWrites(engine: TestEngine) throws {
        try withReadings(engine) { database in
            try database.transaction {
                try Reading.create(["n": 10])
                var seen: [Int] = []
                try Reading.query().where("n >= %@", 2).forEach { seen.append($0.n) }
                #expect(seen == [2, 3, 10])
                throw Rollback()
            }
            #expect(try Reading.count() == 3)
        }
    }

    @Test(arguments: TestEngine.all) func closingACursorEarlyGivesItsReaderBack(engine: TestEngine) throws {
        try withReadings(engine) { _ in
            // More cursors than readers (four), each closed after one row: none waits or fails.
            for _ in 0..<10 {
                let cursor = try Reading.query().order(by: "n", ascending: false).cursor()
                #expect(try cursor.next()?.n == 3)
                cursor.close()
                #expect(try cursor.next() == nil)
            }
            // Every reader came back: four cursors at once all read a snapshot (a cursor
            // without a reader would step on the writer and see the row written meanwhile).
            let cursors = try (0..<4).map { _ in try Reading.query().cursor() }
            for cursor in cursors { #expect(try cursor.next()?.n == 1) }
            try Reading.create(["n": 4])
            for cursor in cursors {
                var rest: [Int] = []
                while let reading = try cursor.next() { rest.append(reading.n) }
                #expect(rest == [2, 3])
            }
        }
    }

    @Test func withEveryReaderBusyACursorStepsOnTheWriter() throws {
        try withReadings { _ in
            let busy = try (0..<4).map { _ in try Reading.query().cursor() }
            for cursor in busy { _ = try cursor.next() }
            // A fifth cursor reads through the writer, locked per step: it sees a row written
            // between its steps (no snapshot), and never fails for want of a reader.
            let fifth = try Reading.query().cursor()
            #expect(try fifth.next()?.n == 1)
            try Reading.create(["n": 4])
            var rest: [Int] = []
            while let reading = try fifth.next() { rest.append(reading.n) }
            #expect(rest == [2, 3, 4])
        }
    }

    @Test(arguments: TestEngine.all) func inMemoryACursorStepsOnTheWriter(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            for n in 1...3 { try Reading.create(["n": n]) }
            let cursor = try Reading.query().only("n").cursor()
            var seen: [Int] = []
            while let reading = try cursor.next() { seen.append(reading.n) }
            #expect(seen == [1, 2, 3])
        }
    }
}
