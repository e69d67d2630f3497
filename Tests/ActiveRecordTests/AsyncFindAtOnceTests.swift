@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// An awaited find on SQLite runs at once on the caller's thread when a reader is idle
/// (issue 35, point 8: a hop to another thread cost more than the find), and goes to the
/// database's own threads otherwise; a task cancelled before it reads nothing.

final class AtOnceNote: Model {
    @Column var body: String = ""
}

/// The threads the database's statements ran on, as its tracer saw them (also used by
/// AsyncFindsOnCallingThreadTests).
final class StatementThreads: Sendable {
    private let threads = Mutex<[UInt]>([])
    func record() { threads.withLock { $0.append(currentThreadNumber) } }
    func take() -> [UInt] { threads.withLock { threads in defer { threads = [] }; return threads } }
}

/// A thread outside Swift concurrency holding a reader in a read block, until released.
private final class HeldReader: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(_ db: Database) {
        Thread.detachNewThread { [self] in
            _ = try? db.read {
                _ = try AtOnceNote.count()
                entered.signal()
                release.wait()
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

@Suite("An awaited find runs at once when it can", .serialized)
struct AsyncFindAtOnceTests {
    @Test("On SQLite with an idle reader: the find runs on the caller's thread and returns the record")
    func findRunsOnTheCallersThread() async throws {
        let test = try TestEngine.sqlite.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let id = try #require(try await AtOnceNote.create(["body": "kept"], on: db).id)
        _ = try await AtOnceNote.find(id, on: db)  // the table checked, a reader opened
        let threads = StatementThreads()
        db.trace { _ in threads.record() }
        for _ in 0..<20 {
            let caller = currentThreadNumber
            let found = try await AtOnceNote.find(id, on: db)
            #expect(found?.body == "kept")
            let ran = threads.take()
            #expect(ran == [caller])
        }
        #expect(try await AtOnceNote.find(id + 1, on: db) == nil)
        db.trace(nil)
    }

    @Test("On SQLite with every reader busy: the find goes to the database's threads, and waits for a reader or the writer")
    func findWithEveryReaderBusyGoesToTheExecutor() async throws {
        let test = try TestEngine.sqlite.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let id = try #require(try await AtOnceNote.create(["body": "kept"], on: db).id)
        _ = try await AtOnceNote.find(id, on: db)
        // Every reader held by a synchronous read block on a thread of its own.
        var held: [HeldReader] = []
        for _ in 0..<4 { held.append(HeldReader(db)) }
        defer { for reader in held { reader.end() } }
        let threads = StatementThreads()
        db.trace { _ in threads.record() }
        let caller = currentThreadNumber
        #expect(try await AtOnceNote.find(id, on: db)?.body == "kept")
        let ran = threads.take()
        #expect(!ran.isEmpty && !ran.contains(caller))
        db.trace(nil)
    }

    @Test("A find from a task already cancelled throws CancellationError and reads nothing", arguments: TestEngine.all)
    func findFromACancelledTaskReadsNothing(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let id = try #require(try await AtOnceNote.create(["body": "kept"], on: db).id)
        _ = try await AtOnceNote.find(id, on: db)
        let threads = StatementThreads()
        db.trace { _ in threads.record() }
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await AtOnceNote.find(id, on: db)?.body
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(threads.take().isEmpty)
        db.trace(nil)
    }
}
