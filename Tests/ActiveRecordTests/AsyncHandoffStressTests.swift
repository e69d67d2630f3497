@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// The hand-over of an async call's outcome under contention (issue 35, point 8): many short
/// calls, some a little longer than a caller looks for its result, so that every way the
/// caller and the database's thread can meet happens many times — the caller finding the
/// result while it looks, the caller suspending just before or just after the result is
/// handed over, the thread resuming a caller that has not yet suspended — while other threads
/// compete for the cores. Run under the thread sanitizer (`make test-tsan`), a report here is a
/// race in the hand-over; in any build, every caller must get its own result, intact.

/// A result with a reference in it (a class instance and a heap string), so that a torn or
/// doubly-taken result shows as a wrong value, a crash or a leak.
private final class Payload: Sendable {
    static let alive = Atomic<Int>(0)
    let call: Int
    let text: String
    init(call: Int) {
        self.call = call
        text = "the result of call \(call), long enough to live on the heap"
        Self.alive.add(1, ordering: .relaxed)
    }
    deinit { Self.alive.subtract(1, ordering: .relaxed) }
}

/// Spins for about `nanoseconds` on the database's thread (a call of that length).
private func spin(nanoseconds: UInt64) {
    let start = DispatchTime.now().uptimeNanoseconds
    while DispatchTime.now().uptimeNanoseconds &- start < nanoseconds {}
}

/// Threads that compete for the cores while a test runs, so that a thread is often preempted
/// between two steps of the hand-over.
private final class CoreCompetitors: Sendable {
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)
    private let count: Int

    init(count: Int) {
        self.count = count
        for _ in 0..<count {
            Thread.detachNewThread { [self] in
                while running.load(ordering: .relaxed) {
                    spin(nanoseconds: 200_000)
                    sched_yield()
                }
                finished.signal()
            }
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        for _ in 0..<count { finished.wait() }
    }
}

@Suite("Async hand-over under contention", .serialized)
struct AsyncHandoffStressTests {
    @Test("Many short calls from many tasks, each caller gets its own result: looked for, or resumed", arguments: TestEngine.all)
    func manyShortCallsHandOverExactlyOnce(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let competitors = CoreCompetitors(count: 2)
        defer { competitors.stop() }
        let before = Payload.alive.load(ordering: .relaxed)
        let tasks = 16, calls = 400
        // Call lengths around the caller's look (15 µs): none, well inside, about it, past it.
        let lengths: [UInt64] = [0, 0, 2_000, 0, 12_000, 0, 18_000, 40_000]
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var mismatches = 0
                    for n in 0..<calls {
                        let call = task * calls + n
                        let length = lengths[(call &* 7 &+ task) % lengths.count]
                        if call % 3 == 0 {
                            // Reads: on a reader thread (SQLite) or a pooled connection.
                            let payload = try await db.read { () -> Payload in
                                spin(nanoseconds: length)
                                return Payload(call: call)
                            }
                            if payload.call != call || !payload.text.hasSuffix("call \(call), long enough to live on the heap") {
                                mismatches += 1
                            }
                        } else if call % 3 == 1 {
                            // A result in the inline storage (a word), on the write lane.
                            let value = try await db.write { () -> Int in
                                spin(nanoseconds: length)
                                return call &* 31
                            }
                            if value != call &* 31 { mismatches += 1 }
                        } else {
                            // An error handed over instead of a result.
                            struct Refused: Error { let call: Int }
                            do {
                                _ = try await db.read { () throws -> (Int, Int, Int, Int, Int) in
                                    spin(nanoseconds: length)
                                    throw Refused(call: call)
                                }
                                mismatches += 1
                            } catch let refused as Refused {
                                if refused.call != call { mismatches += 1 }
                            }
                        }
                    }
                    return mismatches
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        // Every result was taken once and released: none leaked, none released twice (a crash).
        #expect(Payload.alive.load(ordering: .relaxed) == before)
    }

    @Test("Short calls cancelled at random moments: each ends with its result or CancellationError", arguments: TestEngine.all)
    func shortCallsCancelledAtRandomMoments(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let competitors = CoreCompetitors(count: 1)
        defer { competitors.stop() }
        let before = Payload.alive.load(ordering: .relaxed)
        var outcomes = (results: 0, cancelled: 0)
        for round in 0..<300 {
            let task = Task { () -> Int in
                let payload = try await db.read { () -> Payload in
                    spin(nanoseconds: UInt64(round % 5) * 5_000)
                    return Payload(call: round)
                }
                return payload.call
            }
            // Cancel while it waits, runs, is being handed over, or after it ended.
            spin(nanoseconds: UInt64(round % 7) * 3_000)
            task.cancel()
            do {
                let call = try await task.value
                #expect(call == round)
                outcomes.results += 1
            } catch is CancellationError {
                outcomes.cancelled += 1
            }
        }
        #expect(outcomes.results + outcomes.cancelled == 300)
        #expect(Payload.alive.load(ordering: .relaxed) == before)
        // The database still serves calls.
        #expect(try await db.read { 7 } == 7)
    }
}
