import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Synchronization
import Testing

/// A row of the cross-process observation tests (the stress child declares the same class).
final class Sighting: Model {
    @Column var note: String = ""
}

/// What an observation of `Sighting` delivered (each delivery: the notes, sorted). ``all``
/// counts a delivery the same as the one before once: a fetch may run again without a change
/// in between (the listener's reconnection, a notification landing while a fetch runs) and
/// tell the same rows; what most tests here check is that every change is delivered and
/// nothing else is. ``raw`` has every delivery.
private final class Sightings: Sendable {
    private let values = Mutex<[[String]]>([])

    func record(_ result: Result<[Sighting], any Error>) {
        if case .success(let rows) = result { values.withLock { $0.append(rows.map(\.note).sorted()) } }
    }

    var raw: [[String]] { values.withLock { $0 } }

    var all: [[String]] { Self.distinct(raw) }

    /// `deliveries` without a delivery the same as the one before.
    private static func distinct(_ deliveries: [[String]]) -> [[String]] {
        deliveries.reduce(into: []) { kept, delivery in if kept.last != delivery { kept.append(delivery) } }
    }

    /// Waits (up to 5 s) until `condition` holds for the deliveries (``all``; ``raw`` with `raw`).
    @discardableResult
    func wait(raw: Bool = false, _ condition: ([[String]]) -> Bool) -> Bool {
        for _ in 0..<500 {
            if condition(raw ? self.raw : all) { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition(raw ? self.raw : all)
    }

    /// Lets an observation that should not deliver again have the time to do it wrongly:
    /// several of SQLite's polls, and far more than a notification takes on PostgreSQL.
    func settle() { Thread.sleep(forTimeInterval: 0.25) }
}

/// Runs `body` with a fresh location (a file, or a PostgreSQL schema) and the location with an
/// `application_name` of its own on PostgreSQL (so that the test finds its listener), and the
/// stress child's argument for it.
private func withObservedLocation(
    _ engine: TestEngine, _ body: (_ location: DatabaseLocation, _ name: String, _ argument: String) throws -> Void
) throws {
    try withDatabaseLocation(engine) { place in
        let name = "obs_" + UUID().uuidString.prefix(8).lowercased()
        guard place.argument.hasPrefix("postgres:") else { return try body(place.location, name, place.argument) }
        let connection = String(place.argument.dropFirst("postgres:".count)) + " application_name=\(name)"
        try body(.postgres(connection), name, place.argument)
    }
}

/// A database observing `Sighting` (a row "before" saved by another database on `location`,
/// and delivered): the observing database, the other one, what was delivered, the observation.
private func observeSightings(_ location: DatabaseLocation) throws -> (Database, Database, Sightings, DatabaseObservation) {
    let observing = try Database(location)
    let other = try Database(location)
    try other.use { try Sighting.create(["note": "before"]) }
    let seen = Sightings()
    let observation = observing.observe(Sighting.query()) { seen.record($0) }
    #expect(seen.wait { $0 == [["before"]] })
    return (observing, other, seen, observation)
}

@Suite("Observation across processes: other Database values, other processes, a listener that reconnects")
struct CrossProcessObservationTests {
    /// Another `Database` on the same file or server (another app instance, to the engine)
    /// commits: each commit is delivered once; its rolled-back work never; the observing
    /// database's own commit once (not again through the engine).
    @Test(arguments: TestEngine.all) func commitsOfAnotherDatabaseAreDeliveredOncePerCommit(engine: TestEngine) throws {
        try withObservedLocation(engine) { location, _, _ in
            let (observing, other, seen, observation) = try observeSightings(location)
            defer { observation.cancel() }
            // One commit of the other database: one delivery, with it.
            try other.use { try Sighting.create(["note": "one"]) }
            #expect(seen.wait { $0.count == 2 })
            seen.settle()
            #expect(seen.all == [["before"], ["before", "one"]])
            // A transaction of two writes: one delivery.
            try other.use {
                try other.transaction {
                    try Sighting.create(["note": "two"])
                    try Sighting.create(["note": "three"])
                }
            }
            #expect(seen.wait { $0.count == 3 })
            seen.settle()
            #expect(seen.all.count == 3)
            #expect(seen.all.last == ["before", "one", "three", "two"])
            // Rolled back: nothing.
            struct Undo: Error {}
            try other.use {
                do {
                    try other.transaction {
                        try Sighting.create(["note": "ghost"])
                        throw Undo()
                    }
                } catch is Undo {}
            }
            seen.settle()
            #expect(seen.all.count == 3)
            // Raw SQL of another connection (a program that is not the library): heard too.
            try other.execute(#"UPDATE "Sighting" SET "note" = ? WHERE "note" = ?"#, [.text("uno"), .text("one")])
            #expect(seen.wait { $0.count == 4 })
            seen.settle()
            #expect(seen.all.count == 4)
            #expect(seen.all.last == ["before", "three", "two", "uno"])
            // The observing database's own commit: once, not again when the engine reports it.
            try observing.use { try Sighting.create(["note": "mine"]) }
            #expect(seen.wait { $0.count == 5 })
            seen.settle()
            #expect(seen.all.count == 5)
            #expect(seen.all.last == ["before", "mine", "three", "two", "uno"])
        }
    }

    /// Another process commits (the stress child): its rolled-back transaction is not
    /// delivered, its commit is, once.
    @Test(arguments: TestEngine.all) func aCommitOfAnotherProcessIsDeliveredAndItsRollbackIsNot(engine: TestEngine) throws {
        try withObservedLocation(engine) { location, _, argument in
            let observing = try Database(location)
            try observing.use { try Sighting.create(["note": "before"]) }
            let seen = Sightings()
            let observation = observing.observe(Sighting.query()) { seen.record($0) }
            defer { observation.cancel() }
            #expect(seen.wait { $0 == [["before"]] })
            let results = try runStressChildren([["observed-commits", argument, "from the child"]])
            #expect(results.map(\.status) == [0])
            #expect(results.first?.output == "committed\n")
            #expect(seen.wait { $0.count == 2 })
            seen.settle()
            #expect(seen.all == [["before"], ["before", "from the child"]])
        }
    }

    /// PostgreSQL: the listener's server process is terminated, and another database commits
    /// before it has reconnected (in the very transaction that terminates it). That commit's
    /// notification was sent to nobody: the listener, once back, has every observer fetch
    /// again, and it hears the next commits as before.
    @Test func theListenerReconnectsAndObserversFetchWhatItMissed() throws {
        guard TestEngine.all.contains(.postgres) else { return }
        try withObservedLocation(.postgres) { location, name, _ in
            let (_, other, seen, observation) = try observeSightings(location)
            defer { observation.cancel() }
            let listener = try other.rows(
                "SELECT pid FROM pg_stat_activity WHERE application_name = ?", [.text(name + " listener")])
            try #require(listener.count == 1)
            // A row saved, the listener terminated (waiting until its process has exited), and
            // the commit at once: its notification goes out while nobody listens (the listener
            // waits 100 ms before it reconnects).
            try other.use {
                try other.transaction {
                    try Sighting.create(["note": "while away"])
                    _ = try other.rows("SELECT pg_terminate_backend(?, 5000)", [listener[0][0]])
                }
            }
            #expect(seen.wait { $0.count == 2 })
            seen.settle()
            #expect(seen.all == [["before"], ["before", "while away"]])
            // Back, with a new server process, and listening.
            let back = try other.rows(
                "SELECT pid FROM pg_stat_activity WHERE application_name = ?", [.text(name + " listener")])
            #expect(back.count == 1 && back.first != listener.first)
            try other.use { try Sighting.create(["note": "after"]) }
            #expect(seen.wait { $0.count == 3 })
            seen.settle()
            #expect(seen.all.last == ["after", "before", "while away"])
            #expect(seen.all.count == 3)
        }
    }

    /// PostgreSQL: a table observed before it exists (its first fetch makes it) gets its
    /// trigger within about a second of being made, its observers fetch again then, and
    /// another database's commits to it are heard from then on.
    @Test func aTableObservedBeforeItExistsIsHeardOnceItIsMade() throws {
        guard TestEngine.all.contains(.postgres) else { return }
        try withObservedLocation(.postgres) { location, _, _ in
            let observing = try Database(location)
            let seen = Sightings()
            let observation = observing.observe(Sighting.query()) { seen.record($0) }
            defer { observation.cancel() }
            // The first fetch, which makes the table; then the fetch once it has its trigger.
            #expect(seen.wait(raw: true) { $0.count >= 2 && $0.allSatisfy(\.isEmpty) })
            let other = try Database(location)
            try other.use { try Sighting.create(["note": "heard"]) }
            #expect(seen.wait { $0.last == ["heard"] })
            seen.settle()
            #expect(seen.all == [[], ["heard"]])
        }
    }

    /// The listener (PostgreSQL) or the poll (SQLite) runs only while there are observers:
    /// started with the first, stopped with the last.
    @Test(arguments: TestEngine.all) func theWatchStopsWithTheLastObserver(engine: TestEngine) throws {
        try withObservedLocation(engine) { location, name, _ in
            let observing = try Database(location)
            let other = try Database(location)
            let seen = Sightings()
            let observation = observing.observe(Sighting.query()) { seen.record($0) }
            #expect(seen.wait { $0 == [[]] })
            func listeners() throws -> Int {
                try other.rows("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", [.text(name + " listener")])
                    .first?.first.flatMap { if case .integer(let n) = $0 { Int(n) } else { nil } } ?? -1
            }
            if engine == .postgres { #expect(try listeners() == 1) }
            observation.cancel()
            try other.use { try Sighting.create(["note": "unobserved"]) }
            seen.settle()
            #expect(seen.all == [[]])
            if engine == .postgres { #expect(try listeners() == 0) }
        }
    }
}
