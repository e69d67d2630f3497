import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Synchronization

/// The async path (issue 35, point 8): an awaited `BenchUser.find(id, on: db)` (on the calling
/// thread or one of the database's executor threads, as `db.awaitedFinds` decides) against the same
/// synchronous `BenchUser.find(id)` inside `db.use`, on SQLite and on PostgreSQL, on a table of
/// N rows, every found record checked.
///
/// - Wall clock (``wallClock(rowCount:progress:)``): pairs of batches, one synchronous and one
///   awaited, alternating which goes first; per side the median µs per call, and the median of
///   the pairs' differences against the target (≤ 2 µs per call).
/// - Instructions (`ARBench async N --engine E --count sync|async K`, for
///   `scripts/bench-instructions.sh`): one run fills the table, warms both paths up, then makes
///   K finds of one kind. The awaited work runs on the executor's threads, so callgrind counts
///   the whole process, every thread; (run with K − run with 0) / K is one call's cost.
enum AsyncSection {
    /// Rows in the table (ids found cycle through them).
    static let defaultRowCount = 1_000
    /// Pairs of batches, and finds per batch.
    static let pairs = 21
    static let batch = 1_000
    /// The largest acceptable median difference, µs per call.
    static let target = 2.0
    /// Finds of each kind made, and checked in full, before anything is measured or counted.
    static let warmUp = 100

    enum Engine: String, CaseIterable {
        /// SQLite and PostgreSQL with the default `awaitedFinds` (`.automatic`).
        case sqlite, postgres
        /// PostgreSQL with `awaitedFinds = .onCallingThread`: every find on the calling thread
        /// with a connection idle (no one-at-a-time or speed conditions).
        case postgresCallingThread = "postgres-calling-thread"
        /// PostgreSQL with `awaitedFinds = .onExecutor`: every find hops to the database's thread.
        case postgresExecutor = "postgres-executor"

        var isPostgres: Bool { self != .sqlite }
    }

    /// The engines to measure: SQLite, and PostgreSQL (both ways) when a server is given.
    static var engines: [Engine] {
        PostgresSection.configuredConnection == nil ? [.sqlite] : [.sqlite, .postgres, .postgresCallingThread, .postgresExecutor]
    }

    /// `ARBench async [N] [--engine sqlite|postgres|postgres-calling-thread|postgres-executor] [--count sync|async K]`;
    /// returns the exit status.
    static func main(_ arguments: ArraySlice<String>) -> Int32 {
        let usage = "usage: ARBench async [N] [--engine sqlite|postgres|postgres-calling-thread|postgres-executor] [--count sync|async K]"
        var arguments = arguments
        var rowCount = defaultRowCount
        var chosen: [Engine]?
        var count: (awaited: Bool, calls: Int)?
        while let argument = arguments.popFirst() {
            switch argument {
            case "--engine":
                guard let engine = arguments.popFirst().flatMap(Engine.init(rawValue:)) else { return fail(usage) }
                chosen = [engine]
            case "--count":
                guard let kind = arguments.popFirst(), kind == "sync" || kind == "async",
                      let calls = arguments.popFirst().flatMap(Int.init), calls >= 0 else { return fail(usage) }
                count = (kind == "async", calls)
            default:
                guard let number = Int(argument.replacingOccurrences(of: "_", with: "")), number >= 1 else { return fail(usage) }
                rowCount = number
            }
        }
        let engines = chosen ?? engines
        if engines.contains(where: \.isPostgres), PostgresSection.configuredConnection == nil {
            return fail("ARBench async: set AR_BENCH_POSTGRES to a libpq connection string")
        }
        Check.begin()
        do {
            if let count {
                guard engines.count == 1 else { return fail("ARBench async --count: name one --engine") }
                let table = try AsyncTable(engines[0], rowCount: rowCount, counted: true)
                defer { table.remove() }
                _ = count.awaited
                    ? try awaitedFinds(table, calls: 0..<count.calls) : try synchronousFinds(table, calls: 0..<count.calls)
                print("\(count.calls) \(count.awaited ? "awaited" : "synchronous") finds on \(engines[0].rawValue)")
            } else {
                for line in try wallClock(rowCount: rowCount, engines: engines, progress: progress) { print(line) }
            }
            return 0
        } catch {
            return fail("FAILED: \(error)")
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        return 1
    }

    /// The wall-clock measurement on each engine; returns the lines to print.
    static func wallClock(rowCount: Int, engines: [Engine] = engines, progress: (String) -> Void) throws -> [String] {
        let layout = TableLayout(titleWidth: 24, widths: [15, 19, 16, 9])
        var rows: [(cells: [String], result: String)] = []
        for engine in engines {
            let table = try AsyncTable(engine, rowCount: rowCount)
            defer { table.remove() }
            var synchronous: [Double] = [], awaited: [Double] = [], differences: [Double] = []
            for pair in 0..<pairs {
                let calls = (pair * batch)..<((pair + 1) * batch)
                var times: (synchronous: Duration, awaited: Duration) = (.zero, .zero)
                if pair % 2 == 0 {
                    times.synchronous = try synchronousFinds(table, calls: calls)
                    times.awaited = try awaitedFinds(table, calls: calls)
                } else {
                    times.awaited = try awaitedFinds(table, calls: calls)
                    times.synchronous = try synchronousFinds(table, calls: calls)
                }
                synchronous.append(times.synchronous.seconds * 1e6 / Double(batch))
                awaited.append(times.awaited.seconds * 1e6 / Double(batch))
                differences.append(awaited.last! - synchronous.last!)
            }
            progress("async \(engine.rawValue): synchronous µs/call \(synchronous.map { String(format: "%.2f", $0) }), "
                + "awaited \(awaited.map { String(format: "%.2f", $0) })")
            let difference = middle(differences)
            rows.append((
                [engine.rawValue, String(format: "%.2f", middle(synchronous)), String(format: "%.2f", middle(awaited)),
                 String(format: "%+.2f", difference), String(format: "<= %.1f", target)],
                difference <= target ? "ok" : "MISSED"))
        }
        return [
            "Async path: awaited BenchUser.find(id, on: db) against synchronous BenchUser.find(id) inside db.use, "
                + "\(rowCount)-row table; median of \(pairs) pairs of batches of \(batch) finds (alternating which goes "
                + "first); every record checked",
        ] + layout.lines(heading: ["engine", "sync µs/call", "awaited µs/call", "difference µs", "target"], rows: rows)
            + ["(instructions per call, all threads: make bench-instructions, the async rows)"]
    }

    /// The median of `values` (of an even count, the mean of the middle two).
    private static func middle(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
    }

    /// Finds the ids of `calls` (call `c` finds id `c % N + 1`) synchronously, inside `use`,
    /// checking each record; returns the time of the loop.
    static func synchronousFinds(_ table: AsyncTable, calls: Range<Int>) throws -> Duration {
        let clock = ContinuousClock()
        let rowCount = table.rowCount
        return try table.database.use {
            let start = clock.now
            for call in calls {
                let id = Int64(call % rowCount + 1)
                try check(try BenchUser.find(id), id)
            }
            return clock.now - start
        }
    }

    /// The same finds, awaited one after another in a task (the caller's thread waits for the
    /// task); returns the time of the task's loop.
    static func awaitedFinds(_ table: AsyncTable, calls: Range<Int>) throws -> Duration {
        let database = table.database, rowCount = table.rowCount
        return try waiting {
            let clock = ContinuousClock()
            let start = clock.now
            for call in calls {
                let id = Int64(call % rowCount + 1)
                try check(try await BenchUser.find(id, on: database), id)
            }
            return clock.now - start
        }
    }

    /// A found record's id and age (a few instructions: both sides pay them per call).
    private static func check(_ user: BenchUser?, _ id: Int64) throws {
        guard let user, user.id == id, user.age == Int(id % 90) else {
            throw Check.Failure(description: "async: find(\(id)) returned \(user.map { "\($0.snapshot)" } ?? "nil")")
        }
    }

    /// Runs `body` in a task and waits for it on this thread.
    static func waiting<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Outcome<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let value = try await body()
                outcome.result.withLock { $0 = .success(value) }
            } catch {
                outcome.result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        return try outcome.result.withLock { $0! }.get()
    }

    /// A task's result, handed to the waiting thread.
    private final class Outcome<T: Sendable>: Sendable {
        let result = Mutex<Result<T, any Error>?>(nil)
    }
}

/// The `BenchUser` table of the async measurement: N rows through the library (untimed), on a
/// file database in a temporary directory or in a schema of its own on the server; both find
/// paths warmed up and their records checked in full.
struct AsyncTable {
    let database: Database
    let rowCount: Int
    /// Deletes the file or drops the schema.
    let remove: () -> Void

    /// `counted`: the run is counted under callgrind (`--count`).
    init(_ engine: AsyncSection.Engine, rowCount: Int, counted: Bool = false) throws {
        self.rowCount = rowCount
        switch engine {
        case .sqlite:
            let directory = try TemporaryDirectory()
            database = try Database(.file(directory.path + "/async.sqlite"))
            remove = { directory.remove() }
        case .postgres, .postgresCallingThread, .postgresExecutor:
            let connection = PostgresSection.configuredConnection ?? ""
            let admin = try RawPostgres(connection)
            try admin.execute("SET client_min_messages = warning")  // no NOTICE for the dropped table
            let schema = "arbench_\(getpid())_async"
            try admin.execute("CREATE SCHEMA \(schema)")
            database = try Database(.postgres(connection + " options='-csearch_path=\(schema)'"))
            remove = { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
            switch engine {
            case .postgresCallingThread: database.awaitedFinds = .onCallingThread
            case .postgresExecutor: database.awaitedFinds = .onExecutor
            default:
                // Counted under callgrind (`--count`), the client runs 20–50× slower and a find
                // on the same machine takes ~700 µs, which `.automatic` reads as a far server:
                // the limit is scaled by the same factor, so that the count is of the path the
                // default takes at native speed (checked: the wall-clock rows keep 75 µs).
                if counted { database.awaitedFindRoundTripLimit = .milliseconds(5) }
            }
        }
        let rows = RowValues.table(rowCount)
        try database.use {
            try database.transaction {
                for row in rows { try LibrarySide.makeUser(row).save() }
            }
        }
        let checked = Array(rows.prefix(AsyncSection.warmUp))
        let found = try database.use { try (1...Int64(checked.count)).map { try BenchUser.find($0)?.snapshot } }
        try Check.found(found, rows: checked, side: "async \(engine.rawValue) synchronous")
        let opened = database
        let awaited = try AsyncSection.waiting {
            var found: [UserSnapshot?] = []
            for id in 1...Int64(checked.count) { found.append(try await BenchUser.find(id, on: opened)?.snapshot) }
            return found
        }
        try Check.found(awaited, rows: checked, side: "async \(engine.rawValue) awaited")
    }
}
