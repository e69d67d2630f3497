@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// The async path hands a call's outcome to its caller through the job itself (issue 35, point
/// 8): the result kept inline when it fits in four words, in a buffer of its own otherwise; the
/// caller takes it without suspending when the call was short, or is resumed when it was not.

final class HandoffNote: Model {
    @Column var body: String = ""
}

/// Counts its instances alive, to show that a result handed over is released exactly once.
private final class Tracked: Sendable {
    static let alive = Atomic<Int>(0)
    let value: Int
    init(_ value: Int) {
        self.value = value
        Self.alive.add(1, ordering: .relaxed)
    }
    deinit { Self.alive.subtract(1, ordering: .relaxed) }
}

/// Whether a call's body ran.
private final class RanFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// Five words: more than the inline storage holds.
private struct Wide: Equatable {
    var a, b, c, d, e: Int64
}

/// Aligned to 16 bytes: more than the inline storage's alignment.
private struct Aligned16 {
    var vector: SIMD4<Float>
    var label: String
}

@Suite("Async calls hand their outcome back", .serialized)
struct AsyncHandoffTests {
    @Test("Results of every size and alignment come back intact, and are released once", arguments: TestEngine.all)
    func resultsOfEverySizeComeBack(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let note = try await HandoffNote.create(["body": "kept"], on: db)
        let id = try #require(note.id)

        #expect(try await db.read { 42 } == 42)
        #expect(try await db.read { "a string longer than fifteen bytes, on the heap" } == "a string longer than fifteen bytes, on the heap")
        #expect(try await db.read { Optional<Int>.none } == nil)
        let four = try await db.read { (Int64(1), Int64(2), Int64(3), Int64(4)) }
        #expect(four == (1, 2, 3, 4))
        #expect(try await db.read { Wide(a: 1, b: 2, c: 3, d: 4, e: 5) } == Wide(a: 1, b: 2, c: 3, d: 4, e: 5))
        let aligned = try await db.read { Aligned16(vector: SIMD4(1, 2, 3, 4), label: "sixteen") }
        #expect(aligned.vector == SIMD4(1, 2, 3, 4) && aligned.label == "sixteen")
        #expect(try await HandoffNote.find(id, on: db)?.body == "kept")
        #expect(try await db.read { try HandoffNote.all().map(\.body) } == ["kept"])

        // Objects inside a result, inline and in a buffer: alive while the caller holds them, gone after.
        let before = Tracked.alive.load(ordering: .relaxed)
        do {
            let one = try await db.read { Tracked(7) }
            let wide = try await db.read { (Tracked(1), Tracked(2), Tracked(3), Tracked(4), Tracked(5)) }
            #expect(one.value == 7 && wide.4.value == 5)
            #expect(Tracked.alive.load(ordering: .relaxed) == before + 6)
        }
        #expect(Tracked.alive.load(ordering: .relaxed) == before)

        // An error comes back as thrown, whatever the result type's size.
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await db.read { () throws -> Wide in throw Refused() } }
        await #expect(throws: Refused.self) { try await db.write { () throws -> Int in throw Refused() } }
    }

    @Test("Short and long calls in turn: each caller gets its own result", arguments: TestEngine.all)
    func shortAndLongCallsInTurn(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        var ids: [Int64] = []
        for n in 0..<20 { ids.append(try #require(try await HandoffNote.create(["body": "note \(n)"], on: db).id)) }
        for round in 0..<3 {
            // Short calls: their callers may take the result without suspending.
            for (n, id) in ids.enumerated() { #expect(try await HandoffNote.find(id, on: db)?.body == "note \(n)") }
            // A call longer than a caller looks for: its caller suspends and is resumed.
            let slow = try await db.read { () -> Int in
                usleep(20_000)
                return round
            }
            #expect(slow == round)
            #expect(try await HandoffNote.count(on: db) == 20)
        }
        // Many tasks at once, each with its own ids.
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for (n, id) in ids.enumerated() {
                group.addTask { try await HandoffNote.find(id, on: db)?.body == "note \(n)" }
            }
            for try await matched in group { #expect(matched) }
        }
    }

    @Test("A call from a task already cancelled throws CancellationError and runs nothing", arguments: TestEngine.all)
    func aCallFromACancelledTaskRunsNothing(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let ran = RanFlag()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await db.write { () -> Int in
                ran.value.store(true, ordering: .relaxed)
                return try HandoffNote.create(["body": "never"]).id.map(Int.init) ?? 0
            }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        let didRun = ran.value.load(ordering: .relaxed)
        #expect(!didRun)
        #expect(try await HandoffNote.count(on: db) == 0)
    }
}
