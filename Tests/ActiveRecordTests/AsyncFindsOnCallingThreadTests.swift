@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Synchronization
import Testing

/// `Database.awaitedFinds` (issue 35, point 8 on PostgreSQL): `.onExecutor`, an awaited find on
/// PostgreSQL runs on the database's own threads; `.onCallingThread`, it runs at once on
/// the calling thread when a pooled connection is idle, and goes to the database's threads
/// otherwise (every connection held), as before; a task cancelled before it reads nothing.
/// (The default, `.automatic`: AwaitedFindPolicyTests.)

final class CallingThreadNote: Model {
    @Column var body: String = ""
}

/// A thread outside Swift concurrency holding the pool's one connection in a transaction,
/// until released.
private final class HeldConnection: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(_ db: Database) {
        Thread.detachNewThread { [self] in
            _ = try? db.use {
                try db.transaction {
                    _ = try CallingThreadNote.count()
                    entered.signal()
                    release.wait()
                }
            }
            finished.signal()
        }
        entered.wait()
    }

    func end() {
        release.signal()
        finished.wait()
    }
}

@Suite("Awaited finds on the calling thread (PostgreSQL, .onCallingThread and .onExecutor)", .serialized)
struct AsyncFindsOnCallingThreadTests {
    /// A PostgreSQL test database with a pool of `connections`, its note table made and one
    /// note saved; `nil` when the suite runs without a server.
    private func postgresDatabase(connections: Int = 10) throws -> (TestDatabase, Int64)? {
        guard TestEngine.postgresConnection != nil else { return nil }
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try PostgresAdmin.database.execute("CREATE SCHEMA \(ident: schema)")
        let db = try Database(.postgres(TestEngine.connection(schema: schema), maximumConnections: connections))
        let test = TestDatabase(db, schema: schema)
        let id = try db.use { try CallingThreadNote.create(["body": "kept"]).id }
        return (test, try #require(id))
    }

    @Test("On the executor: an awaited find on PostgreSQL runs on one of the database's threads")
    func offByDefaultFindsHop() async throws {
        guard let (test, id) = try postgresDatabase() else { return }
        defer { test.drop() }
        let db = test.database
        db.awaitedFinds = .onExecutor
        let threads = StatementThreads()
        db.trace { _ in threads.record() }
        for _ in 0..<5 {
            let caller = currentThreadNumber
            #expect(try await CallingThreadNote.find(id, on: db)?.body == "kept")
            let ran = threads.take()
            #expect(!ran.isEmpty && !ran.contains(caller))
        }
        db.trace(nil)
    }

    @Test("On the calling thread: the find runs on the calling thread with an idle connection, and returns the record or nil")
    func setFindsRunOnTheCallingThread() async throws {
        guard let (test, id) = try postgresDatabase() else { return }
        defer { test.drop() }
        let db = test.database
        db.awaitedFinds = .onCallingThread
        let threads = StatementThreads()
        db.trace { _ in threads.record() }
        // A connection takes a new setting (the tracer) on a check-out that may wait: the first
        // find after it goes to the database's threads, which apply it.
        _ = try await CallingThreadNote.find(id, on: db)
        _ = threads.take()
        for _ in 0..<20 {
            let caller = currentThreadNumber
            #expect(try await CallingThreadNote.find(id, on: db)?.body == "kept")
            #expect(threads.take() == [caller])
        }
        let caller = currentThreadNumber
        #expect(try await CallingThreadNote.find(id + 1, on: db) == nil)
        #expect(threads.take() == [caller])
        db.trace(nil)
    }

    @Test("On the calling thread, with every connection held: the find goes to the database's threads and waits for one")
    func setWithEveryConnectionHeldWaits() async throws {
        guard let (test, id) = try postgresDatabase(connections: 1) else { return }
        defer { test.drop() }
        let db = test.database
        db.awaitedFinds = .onCallingThread
        let held = HeldConnection(db)
        let threads = StatementThreads()
        db.trace { _ in threads.record() }
        let caller = currentThreadNumber
        let find = Task { try await CallingThreadNote.find(id, on: db)?.body }
        // The find waits for the held connection (nothing ran for it), then runs once it is free.
        try await Task.sleep(for: .milliseconds(100))
        #expect(threads.take().isEmpty)
        held.end()
        #expect(try await find.value == "kept")
        let ran = threads.take()
        #expect(!ran.isEmpty && !ran.contains(caller))
        db.trace(nil)
    }

    @Test("On the calling thread: a find from a task already cancelled throws CancellationError and reads nothing")
    func setFindFromACancelledTaskReadsNothing() async throws {
        guard let (test, id) = try postgresDatabase() else { return }
        defer { test.drop() }
        let db = test.database
        db.awaitedFinds = .onCallingThread
        let threads = StatementThreads()
        db.trace { _ in threads.record() }
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await CallingThreadNote.find(id, on: db)?.body
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(threads.take().isEmpty)
        db.trace(nil)
    }

    @Test("A zero connection-wait timeout still fails at once a call that must wait for a busy thread", arguments: TestEngine.all)
    func zeroConnectionWaitStillCounts(engine: TestEngine) async throws {
        // One thread for the call's lane: SQLite's writer, a PostgreSQL pool of one.
        let test: TestDatabase
        if engine == .postgres {
            guard let (made, _) = try postgresDatabase(connections: 1) else { return }
            test = made
        } else {
            test = try engine.makeDatabase(file: true)
        }
        defer { test.drop() }
        let db = test.database
        _ = try await CallingThreadNote.count(on: db)
        db.connectionWaitTimeout = .zero
        // The lane's one thread busy for 1 s once it has started (waited for: under load a fixed
        // pause may end before the busy block runs, and the given-up wait is noticed by a thread
        // that the load may delay); the next write must wait for it, past 0 ms, and fails.
        let entered = EnteredFlag()
        let busy = Task {
            try await db.write {
                entered.value.store(true, ordering: .releasing)
                Thread.sleep(forTimeInterval: 1.0)
            }
        }
        for _ in 0..<1_000 where !entered.value.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        let started = ContinuousClock.now
        do {
            try await db.write { _ = try CallingThreadNote.count() }
            Issue.record("the write waited for the busy thread instead of failing")
        } catch let error as ActiveRecordError {
            #expect(error.code == .busy)
            #expect(error.message.contains("waited 0 ms"))
        }
        #expect(ContinuousClock.now - started < .milliseconds(800))
        try await busy.value
    }
}

/// Set by a block once it runs, read by the task waiting for it.
private final class EnteredFlag: Sendable {
    let value = Atomic<Bool>(false)
}
