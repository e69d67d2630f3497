@_spi(Engines) import ARCore
import ActiveRecord
import Dispatch
import Foundation
import Synchronization
import Testing

final class Tally: Model {
    @Column var worker: Int = 0
    @Column var n: Int = 0
}

final class CrashBatch: Model {
    @Column var marker: Int = 0
    @Column var n: Int = 0
}

/// Bounded in time: a few seconds on the 2-core machine.
@Suite("Threads under load", .serialized)
struct StressTests {
    /// Interleaving: 8 writer threads each save 2,000 rows (autocommit: on SQLite through the
    /// one writer connection, on PostgreSQL each through a pooled connection of its own, at
    /// once), while 2 reader threads count; one more thread keeps opening transactions that
    /// insert and roll back.
    @Test(arguments: TestEngine.all) func eightWritersTwoReadersAndARollbackLoseNothing(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { db in try eightWritersTwoReadersAndARollback(db) }
    }

    private func eightWritersTwoReadersAndARollback(_ db: Database) throws {
        try db.use { try Tally.destroyAll() }
        let failures = Mutex<[String]>([])
        let writing = Atomic<Int>(8)
        let readerCounts = Mutex<[[Int]]>([[], []])
        DispatchQueue.concurrentPerform(iterations: 11) { index in
            do {
                try db.use {
                    switch index {
                    case 0..<8:
                        for n in 0..<2_000 { try Tally.create(["worker": index, "n": n]) }
                        writing.subtract(1, ordering: .relaxed)
                    case 8, 9:
                        while writing.load(ordering: .relaxed) > 0 {
                            let count = try Tally.count()
                            readerCounts.withLock { $0[index - 8].append(count) }
                        }
                    default:
                        while writing.load(ordering: .relaxed) > 0 {
                            try db.transaction {
                                for n in 0..<50 { try Tally.create(["worker": 99, "n": n]) }
                                throw Rollback()
                            }
                        }
                    }
                }
            } catch {
                failures.withLock { $0.append("thread \(index): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        try db.use { () throws in
            #expect(try Tally.count() == 16_000)
            #expect(try Tally.query().where("worker = 99").count() == 0)
            let perWorker = try Tally.query().group(by: "worker").order(by: "worker").values("worker, count(*), max(n)")
            #expect(perWorker == (0..<8).map { [.integer(Int64($0)), .integer(2_000), .integer(1_999)] })
        }
        // Readers never saw a count go down (committed snapshots only), nor a rolled-back row.
        for counts in readerCounts.withLock({ $0 }) {
            #expect(counts == counts.sorted())
            #expect(counts.allSatisfy { $0 <= 16_000 })
        }
    }

    /// A transaction belongs to its thread: while thread A holds one open, thread B's
    /// saves (which wait for it on SQLite's single writer, and do not on PostgreSQL) are not
    /// rolled back with it.
    @Test(arguments: TestEngine.all) func anotherThreadsWorkIsNeverRolledBackWithMine(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { db in try anotherThreadsWork(db) }
    }

    private func anotherThreadsWork(_ db: Database) throws {
        try db.use { try Tally.destroyAll() }
        let insideA = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            _ = try? db.use {
                try db.transaction {
                    try Tally.create(["worker": 1])
                    insideA.signal()
                    Thread.sleep(forTimeInterval: 0.2)  // B tries to save meanwhile
                    throw Rollback()
                }
            }
        }
        insideA.wait()
        DispatchQueue.global().async(group: group) {
            _ = try? db.use { try Tally.create(["worker": 2]) }
        }
        group.wait()
        try db.use { () throws in
            #expect(try Tally.all().map(\.worker) == [2])
        }
    }

    /// Readers do not wait for the writer: thread A holds a write transaction open and,
    /// inside it, waits for thread B's read to finish. Were reads serialized behind the
    /// writer, B could not finish and A's wait would time out.
    @Test(arguments: TestEngine.all) func readersDoNotWaitForAnOpenWriteTransaction(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { db in try readersDoNotWait(db) }
    }

    private func readersDoNotWait(_ db: Database) throws {
        try db.use { _ = try Tally.create(["worker": 1]) }
        let readDone = DispatchSemaphore(value: 0)
        let seen = Mutex<Int?>(nil)
        var waited = DispatchTimeoutResult.timedOut
        try db.use {
            try db.transaction {
                try Tally.create(["worker": 2])  // uncommitted
                DispatchQueue.global().async {
                    let count = try? db.use { try Tally.count() }
                    seen.withLock { $0 = count }
                    readDone.signal()
                }
                waited = readDone.wait(timeout: .now() + 10)
            }
        }
        #expect(waited == .success)
        #expect(seen.withLock { $0 } == 1)  // the committed snapshot, not the open transaction's row
        try db.use { () throws in #expect(try Tally.count() == 2) }
    }

    /// The seeds' "save in a background queue", and the async forms.
    @Test(arguments: TestEngine.all) func savingInTheBackgroundAndTheAsyncForms(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let saved = DispatchSemaphore(value: 0)
        DispatchQueue.global(qos: .background).async {
            _ = try? db.use { try Tally.create(["worker": 7]) }
            saved.signal()
        }
        saved.wait()
        #expect(try db.use { try Tally.first()?.worker } == 7)
        let id = try await db.write { try Tally.create(["worker": 8]).id! }
        let worker = try await db.read { try Tally.find(id)?.worker }
        #expect(worker == 8)
        await #expect(throws: Rollback.self) {
            _ = try await db.write { () throws -> Int in
                try Tally.create(["worker": 9])
                throw Rollback()
            }
        }
        #expect(try await db.read { try Tally.count() } == 2)
        // Many tasks at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 10..<20 {
                group.addTask { _ = try await db.write { try Tally.create(["worker": worker]).id } }
            }
            try await group.waitForAll()
        }
        #expect(try await db.read { try Tally.count() } == 12)
    }

    /// The VinylRecord savepoint scenario: A's changes kept, B's rolled back.
    @Test(arguments: TestEngine.all) func savepointsKeepAAndRollBackB(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.transaction {
                try Tally.create(["worker": 1])            // A
                try db.transaction {
                    try Tally.create(["worker": 2])        // B
                    try db.transaction {
                        try Tally.create(["worker": 3])    // C, inside B
                    }
                    throw Rollback()
                }
                try Tally.create(["worker": 4])            // A again
            }
            #expect(try Tally.all().map(\.worker) == [1, 4])
            #expect(throws: Boom.self) {
                try db.transaction {
                    try Tally.create(["worker": 5])
                    try db.transaction { try Tally.create(["worker": 6]) }
                    throw Boom()                            // escapes the outer block
                }
            }
            #expect(try Tally.all().map(\.worker) == [1, 4])
        }
    }

    /// kill -9 of a client in the middle of a 10,000-row transaction, 20 times: afterwards
    /// each batch is all there or not at all (and an SQLite file passes integrity_check).
    @Test(arguments: TestEngine.all) func killedInTheMiddleOfATransactionLeavesAllOrNothing(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in try killedMidTransaction(place, engine) }
    }

    private func killedMidTransaction(_ place: TestLocation, _ engine: TestEngine) throws {
        try Database(place.location).use { try CrashBatch.destroyAll() }
        let child = QuickstartTests.productsDirectory.appendingPathComponent("ActiveRecordStressChild")
        var killed = 0
        for marker in 1...20 {
            let process = Process()
            process.executableURL = child
            process.arguments = [place.argument, String(marker), "10000"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            // Wait until it is inside the transaction, then kill it at a varying moment.
            let line = String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
            #expect(line.hasPrefix("inserting") || line.hasPrefix("committed"), "\(line)")
            Thread.sleep(forTimeInterval: Double(marker % 5) * 0.005)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if process.terminationReason == .uncaughtSignal { killed += 1 }
        }
        #expect(killed >= 15)  // most runs really died mid-way (a fast run may commit first)
        let db = try Database(place.location)
        try db.use { () throws in
            let batches = try CrashBatch.query().group(by: "marker").values("marker, count(*)")
            for batch in batches { #expect(batch[1] == .integer(10_000), "\(batch)") }
        }
        if engine == .sqlite { #expect(try db.rows("PRAGMA integrity_check") == [[.text("ok")]]) }
    }

    /// 4 processes each save 2,000 rows (autocommit) into one database at once: every row is
    /// there once, each process's numbered 0 to 1,999.
    @Test(arguments: TestEngine.all) func fourProcessesSavingAtOnceLoseNothing(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            try Database(place.location).use { try CrashBatch.destroyAll() }
            let start = Date().timeIntervalSince1970 + 0.5
            let children = try runStressChildren((1...4).map { ["saves", place.argument, String($0), "2000", String(start)] })
            for child in children { #expect(child.status == 0, "\(child.output)") }
            try Database(place.location).use { () throws in
                #expect(try CrashBatch.count() == 8_000)
                let perProcess = try CrashBatch.query().group(by: "marker").order(by: "marker")
                    .values("marker, count(*), min(n), max(n)")
                #expect(perProcess == (1...4).map { [.integer(Int64($0)), .integer(2_000), .integer(0), .integer(1_999)] })
                let distinct = try CrashBatch.query().group(by: "marker").group(by: "n").count()
                #expect(distinct == 8_000)  // no row twice
            }
        }
    }
}
