import ActiveRecord
import Foundation
import Synchronization

/// A small seeded generator (SplitMix64): each reader thread draws its own
/// reproducible ids, cheaply and without sharing state.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What one thread of a concurrent run did in its timed loop.
struct ThreadResult: Sendable {
    /// What a thread does in its loop.
    enum Role: String, Sendable {
        /// `SmallItem.find(random id)`, each result checked.
        case reader
        /// `SmallItem.create(...)`, each insert its own autocommit transaction.
        case writer
    }

    let role: Role
    /// Operations completed before the stop flag was seen.
    let count: Int
    /// From the thread's start signal to its last operation's end.
    let elapsed: Duration

    /// Operations per second.
    var rate: Double { Double(count) / elapsed.seconds }
}

/// What the threads of one run share: the start and stop signals, and (in
/// mutexes) each thread's result and any error.
final class ConcurrentRun: Sendable {
    /// Set by the main thread when the window ends, or by a thread that failed.
    let stop = Atomic<Bool>(false)
    let results = Mutex<[ThreadResult]>([])
    let errors = Mutex<[String]>([])
    /// Signalled by each thread once warmed up (or failed).
    let ready = DispatchSemaphore(value: 0)
    /// Signalled by the main thread, once per thread, to start the timed loops.
    let go = DispatchSemaphore(value: 0)
    /// Left by each thread when it ends.
    let done = DispatchGroup()
}

/// The concurrency section of the output: fills a `SmallItem` table of
/// `rowCount` rows (untimed), then on one `Database` measures reads per second
/// of (i) one reader thread alone and (ii) two reader threads while one writer
/// thread inserts, each run about `window` long; a read is `SmallItem.find`
/// of a random id in 1...rowCount. Every thread calls `database.use` itself
/// and makes its own records. Checks: no error on any thread, every read found
/// its row, every thread did some work, and the final row count is
/// `rowCount` plus the writes counted.
struct ConcurrencySection {
    let rowCount: Int
    let window: Duration

    /// The table size of a default run.
    static let defaultRowCount = 10_000

    /// Runs both measurements; returns the lines to print.
    func run(progress: (String) -> Void) throws -> [String] {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/concurrency.sqlite"
        let raw = try TableFile.fill(path: path) {
            for i in 1...rowCount { try SmallItem.create(["name": "item\(i)", "value": i]) }
        }
        try Check.count(Int(try raw.integer(#"SELECT count(*) FROM "SmallItem""#)), rowCount, "concurrency: rows filled")
        let database = try Database(.file(path))

        let alone = try measureRun(readers: 1, writer: false, on: database)
        progress(String(format: "concurrency: 1 reader alone %.0f reads/s", alone.readRate))
        let mixed = try measureRun(readers: 2, writer: true, on: database)
        progress(String(format: "concurrency: 2 readers %.0f reads/s, 1 writer %.0f writes/s", mixed.readRate,
                        mixed.writeRate))

        let context = "concurrency: after 2 readers + 1 writer"
        let expected = rowCount + mixed.writes
        try Check.count(try database.use { try SmallItem.count() }, expected, "\(context): SmallItem.count()")
        try Check.count(Int(try raw.integer(#"SELECT count(*) FROM "SmallItem""#)), expected, "\(context): rows (raw)")
        try Check.count(
            Int(try raw.integer(#"SELECT max("id") FROM "SmallItem""#)), expected, "\(context): highest id (raw)")

        let layout = TableLayout(titleWidth: 30, widths: [8, 9, 10, 10, 8, 10])
        let heading = layout.row(["run", "threads", "seconds", "reads", "reads/s", "writes", "writes/s"], "")
        func row(_ title: String, _ run: RunSummary) -> String {
            layout.row(
                [title, String(run.threads), String(format: "%.2f", run.seconds), String(run.reads),
                 String(format: "%.0f", run.readRate), run.writerRan ? String(run.writes) : "-",
                 run.writerRan ? String(format: "%.0f", run.writeRate) : "-"], "")
        }
        return [
            "Concurrent reads: \(rowCount) rows; a read = SmallItem.find(random id in 1...\(rowCount)), each checked; "
                + "each insert its own autocommit transaction; every thread in its own db.use; "
                + String(format: "about %.0f s per run; ", window.seconds)
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores: indicative",
            heading, String(repeating: "-", count: heading.count),
            row("(i) 1 reader alone", alone),
            row("(ii) 2 readers + 1 writer", mixed),
            "",
            String(format: "readers while the writer inserts: %.2f of one reader alone's reads/s", mixed.readRate / alone.readRate)
                + " (per reader: \(mixed.readerRates.map { String(format: "%.0f", $0) }.joined(separator: ", "))); "
                + "rows after: \(expected) = \(rowCount) + \(mixed.writes) writes",
        ]
    }

    /// The totals of one run.
    private struct RunSummary {
        let threads: Int
        let writerRan: Bool
        let results: [ThreadResult]

        private func of(_ role: ThreadResult.Role) -> [ThreadResult] { results.filter { $0.role == role } }
        var reads: Int { of(.reader).reduce(0) { $0 + $1.count } }
        var writes: Int { of(.writer).reduce(0) { $0 + $1.count } }
        /// Each reader's reads per second.
        var readerRates: [Double] { of(.reader).map(\.rate) }
        /// The readers' reads per second, summed.
        var readRate: Double { readerRates.reduce(0, +) }
        var writeRate: Double { of(.writer).reduce(0) { $0 + $1.rate } }
        /// The longest thread's loop, in seconds.
        var seconds: Double { results.map(\.elapsed.seconds).max() ?? 0 }
    }

    /// Starts the threads, lets them run for ``window`` once all are warmed
    /// up, stops and joins them; throws any thread's error.
    private func measureRun(readers: Int, writer: Bool, on database: Database) throws -> RunSummary {
        let run = ConcurrentRun()
        let roles = Array(repeating: ThreadResult.Role.reader, count: readers) + (writer ? [.writer] : [])
        for (index, role) in roles.enumerated() {
            start(role, seed: UInt64(index + 1), on: database, run)
        }
        for _ in roles { run.ready.wait() }
        for _ in roles { run.go.signal() }
        Thread.sleep(forTimeInterval: window.seconds)
        run.stop.store(true, ordering: .relaxed)
        run.done.wait()
        let context = "concurrency: \(readers) readers\(writer ? " + 1 writer" : "")"
        let errors = run.errors.withLock { $0 }
        try Check.require(errors.isEmpty, "\(context): \(errors.joined(separator: "; "))")
        let results = run.results.withLock { $0 }
        try Check.count(results.count, roles.count, "\(context): threads that finished")
        try Check.require(results.allSatisfy { $0.count > 0 }, "\(context): a thread did nothing: \(results)")
        return RunSummary(threads: roles.count, writerRan: writer, results: results)
    }

    /// Starts one thread in `role`: it makes `database` current with `use`,
    /// warms up (a reader reads once), signals ready, waits for go, then
    /// loops until the stop flag, recording its count, or the first error.
    private func start(_ role: ThreadResult.Role, seed: UInt64, on database: Database, _ run: ConcurrentRun) {
        let rowCount = self.rowCount
        run.done.enter()
        let thread = Thread {
            defer { run.done.leave() }
            var waiting = true
            do {
                try database.use {
                    var generator = SplitMix64(seed: seed)
                    func read() throws {
                        let id = Int64.random(in: 1...Int64(rowCount), using: &generator)
                        guard let item = try SmallItem.find(id), item.id == id, item.value == Int(id) else {
                            throw Check.Failure(description: "find(\(id)) did not return row \(id)")
                        }
                    }
                    if role == .reader { try read() }
                    run.ready.signal()
                    waiting = false
                    run.go.wait()
                    let clock = ContinuousClock()
                    let start = clock.now
                    var count = 0
                    while !run.stop.load(ordering: .relaxed) {
                        switch role {
                        case .reader: try read()
                        case .writer:
                            try SmallItem.create(["name": "written\(count + 1)", "value": rowCount + count + 1])
                        }
                        count += 1
                    }
                    let result = ThreadResult(role: role, count: count, elapsed: clock.now - start)
                    run.results.withLock { $0.append(result) }
                }
            } catch {
                run.errors.withLock { $0.append("\(role) thread: \(error)") }
                run.stop.store(true, ordering: .relaxed)
                if waiting { run.ready.signal() }
            }
        }
        thread.start()
    }
}
