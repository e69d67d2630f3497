import ActiveRecord
import CSQLiteRaw
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
    /// The processor time the thread used over the same span (`CLOCK_THREAD_CPUTIME_ID`): on
    /// two cores shared by three threads, what the scheduler gave it.
    let cpu: Duration
    /// Times the thread gave up its core over the same span: waiting (a lock, a futex, a
    /// system call that sleeps), and preempted by the scheduler.
    let voluntarySwitches: Int, involuntarySwitches: Int

    /// Operations per second.
    var rate: Double { Double(count) / elapsed.seconds }
    /// Operations per second of the thread's processor time.
    var ratePerCPU: Double { Double(count) / max(cpu.seconds, 1e-9) }
}

/// The calling thread's voluntary and involuntary context switches so far.
func threadSwitches() -> (voluntary: Int, involuntary: Int) {
    var usage = rusage()
    getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD (Linux), which Glibc does not import
    return (usage.ru_nvcsw, usage.ru_nivcsw)
}

/// The calling thread's processor time so far.
func threadCPUTime() -> Duration {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
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

/// Who does a run's reads and writes: the library on one shared `Database`,
/// or raw sqlite3 with a connection of its own per thread (the control: how
/// far SQLite itself lets reads scale on this machine).
enum ConcurrentSide {
    case library(Database)
    case raw(path: String)

    var name: String {
        switch self {
        case .library: "library"
        case .raw: "raw sqlite3"
        }
    }
}

/// How a reader thread groups its finds into read transactions.
enum ReadGrouping: Equatable {
    /// Each find its own autocommit read transaction.
    case autocommit
    /// `count` finds per read transaction: the library's `db.read { … }`; raw: `BEGIN`, the
    /// selects, `COMMIT` (its `read`).
    case scoped(Int)

    /// How a run's title says it: nothing for autocommit.
    var titleSuffix: String {
        switch self {
        case .autocommit: ""
        case .scoped(let count): ", \(count) per transaction"
        }
    }

    /// The reads one call of a reader's loop does.
    var readsPerCall: Int {
        switch self {
        case .autocommit: 1
        case .scoped(let count): count
        }
    }
}

/// The concurrency section of the output: fills a `SmallItem` table of
/// `rowCount` rows (untimed), then measures reads per second, each run about
/// `window` long, of one reader thread alone and then of two, on both sides (raw sqlite3 with
/// a connection per thread; the library on one `Database` per run, which the run's threads
/// share), in turns for `rounds + 2` rounds with each find its own autocommit read transaction
/// (each round also two readers while one writer thread inserts: the side's own writer, and
/// the other side's as a diagnostic), then `rounds + 2` rounds of ``scopedReads`` finds per
/// read transaction. A read is a find of a random id in 1...rowCount (the library's
/// `SmallItem.find`; raw: one prepared `SELECT` per thread, the same five columns read). The
/// table shows each run's best; a ratio to one reader is the median of its rounds' ratios,
/// each to its round's one-reader run. Every library thread calls `database.use` itself and
/// makes its own records. Checks: no error on any
/// thread, every read found its row, every thread did some work, and the final
/// row count is `rowCount` plus the writes counted.
struct ConcurrencySection {
    let rowCount: Int
    let window: Duration
    /// How many times each reader run is measured (in turns); its best counts.
    let rounds: Int

    /// The table size of a default run.
    static let defaultRowCount = 10_000
    /// The target: the library's two-reader/one-reader ratio within this of raw's.
    static let scalingTolerance = 0.05
    /// Finds per read transaction in the scoped runs.
    static let scopedReads = 1_000
    /// The target beside a writer: the library's two-reader/one-reader ratio at least this
    /// fraction of raw's.
    static let writerScalingTarget = 0.9

    /// Runs the measurements; returns the lines to print.
    func run(progress: (String) -> Void) throws -> [String] {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/concurrency.sqlite"
        let raw = try TableFile.fill(path: path) {
            for i in 1...rowCount { try SmallItem.create(["name": "item\(i)", "value": i]) }
        }
        try Check.count(Int(try raw.integer(#"SELECT count(*) FROM "SmallItem""#)), rowCount, "concurrency: rows filled")
        let database = try Database(.file(path))  // the checks' (idle during the runs)

        // Reader runs in turns, each kept at its best of the rounds for the table (the machine is shared).
        var best: [String: RunSummary] = [:]
        var titles: [String] = []
        var writes: [String: Int] = [:]  // by the writer's side, over every run
        var runs: [String: [RunSummary]] = [:]  // every round's, by title
        func measure(
            _ title: String, readers: Int, writer: ConcurrentSide? = nil, _ side: ConcurrentSide,
            _ grouping: ReadGrouping = .autocommit
        ) throws -> RunSummary {
            let summary = try measureRun(readers: readers, writer: writer, side: side, grouping: grouping)
            if let writer { writes[writer.name, default: 0] += summary.writes }
            progress(String(format: "concurrency: %@ %.0f reads/s", title, summary.readRate))
            if best[title] == nil { titles.append(title) }
            runs[title, default: []].append(summary)
            if best[title].map({ $0.readRate < summary.readRate }) ?? true { best[title] = summary }
            return summary
        }
        let rawSide = ConcurrentSide.raw(path: path)
        // Each library run on a Database of its own, as each raw thread opens its connection: the
        // run's threads open its readers, whose memory (the connection's, SQLite's, a reader's
        // prepared statements) then lies among their own allocations. A reader opened by a
        // thread that has ended can lie among another thread's (glibc hands the ended thread's
        // malloc arena to the next thread), and two readers then read up to ~20% less (README:
        // concurrent reads). They stay open to the end: closing one races the next run's opening.
        var opened: [Database] = []
        func librarySide() throws -> ConcurrentSide {
            opened.append(try Database(.file(path)))
            return .library(opened.last!)
        }
        // Each round's two-reader/one-reader ratio per side and grouping, of two runs a second
        // apart: a slow spell of the shared machine then moves both runs of a ratio.
        var ratios: [String: [Double]] = [:]
        /// One reader, then two; in autocommit also two beside a writer of each side (the
        /// reader's own first: the target's run), each ratio to the round's one reader.
        func measureScaling(_ name: String, _ side: () throws -> ConcurrentSide, _ grouping: ReadGrouping) throws {
            let suffix = grouping.titleSuffix
            let one = try measure("\(name): 1 reader" + suffix, readers: 1, try side(), grouping)
            let two = try measure("\(name): 2 readers" + suffix, readers: 2, try side(), grouping)
            ratios[name + suffix, default: []].append(two.readRate / one.readRate)
            guard grouping == .autocommit else { return }
            let other = name == "raw" ? "library" : "raw"
            for writerName in [name, other] {
                let readers = try side()
                let writer = writerName == name ? readers : (writerName == "raw" ? rawSide : try librarySide())
                let key = "\(name) readers + \(writerName) writer"
                let mixed = try measure(
                    "\(name): 2 readers + 1 writer" + (writerName == name ? "" : " (\(writerName))"),
                    readers: 2, writer: writer, readers)
                ratios[key, default: []].append(mixed.readRate / one.readRate)
            }
        }
        func scaling(_ key: String) -> Double {
            let sorted = ratios[key]!.sorted()
            return (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2  // the median
        }
        let scoped = ReadGrouping.scoped(Self.scopedReads)
        // Each round in turns, raw then the library; `rounds + 2` rounds of each grouping.
        for _ in 1...(rounds + 2) {
            try measureScaling("raw", { rawSide }, .autocommit)
            try measureScaling("library", librarySide, .autocommit)
        }
        for _ in 1...(rounds + 2) {
            try measureScaling("raw", { rawSide }, scoped)
            try measureScaling("library", librarySide, scoped)
        }
        let rawAlone = best["raw: 1 reader"]!, rawPair = best["raw: 2 readers"]!
        let alone = best["library: 1 reader"]!, pair = best["library: 2 readers"]!
        let perScope = scoped.titleSuffix
        let rawScaling = scaling("raw"), libraryScaling = scaling("library")
        let rawScopedScaling = scaling("raw" + perScope), scopedScaling = scaling("library" + perScope)
        let rawMixed = scaling("raw readers + raw writer"), mixed = scaling("library readers + library writer")

        let context = "concurrency: after the runs beside a writer"
        let expected = rowCount + writes.values.reduce(0, +)
        try Check.count(try database.use { try SmallItem.count() }, expected, "\(context): SmallItem.count()")
        try Check.count(Int(try raw.integer(#"SELECT count(*) FROM "SmallItem""#)), expected, "\(context): rows (raw)")
        try Check.count(
            Int(try raw.integer(#"SELECT max("id") FROM "SmallItem""#)), expected, "\(context): highest id (raw)")

        let layout = TableLayout(titleWidth: 48, widths: [8, 9, 10, 10, 8, 10])
        let heading = layout.row(["run", "threads", "seconds", "reads", "reads/s", "writes", "writes/s"], "")
        func row(_ title: String, _ run: RunSummary) -> String {
            layout.row(
                [title, String(run.threads), String(format: "%.2f", run.seconds), String(run.reads),
                 String(format: "%.0f", run.readRate), run.writerRan ? String(run.writes) : "-",
                 run.writerRan ? String(format: "%.0f", run.writeRate) : "-"], "")
        }
        func verdict(raw: Double, library: Double) -> String {
            raw - library <= Self.scalingTolerance ? "ok" : "MISSED"
        }
        /// The median over the rounds' runs of `title` of `value`.
        func median(_ title: String, _ value: (RunSummary) -> Double) -> Double {
            let sorted = runs[title]!.map(value).sorted()
            return (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
        }
        /// Where a run's threads spent the cores (medians of the rounds).
        func cpuLine(_ key: String) -> String {
            String(format: "  %@: readers %.2f cores, %.0f reads per reader-CPU-second; writer %.2f cores, "
                   + "%.0f writes per writer-CPU-second; reads/s per reader %.0f; waits (voluntary switches) "
                   + "per 1,000 reads %.1f, per 1,000 writes %.0f",
                   key, median(key) { $0.cpu(.reader) / $0.seconds }, median(key) { $0.readsPerCPU },
                   median(key) { $0.cpu(.writer) / $0.seconds }, median(key) { $0.writesPerCPU },
                   median(key) { $0.readRate / 2 }, median(key) { $0.waits(.reader) }, median(key) { $0.waits(.writer) })
        }
        let mixedRatio = mixed / rawMixed
        /// The median over the rounds of (reads per reader-CPU-second beside the writer) / (one
        /// reader's): the scaling with the scheduler's share of the cores taken out.
        func cpuScaling(_ name: String) -> Double {
            let sorted = zip(runs["\(name): 2 readers + 1 writer"]!, runs["\(name): 1 reader"]!)
                .map { $0.readsPerCPU / $1.readsPerCPU }.sorted()
            return (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
        }
        let rawCPUScaling = cpuScaling("raw"), libraryCPUScaling = cpuScaling("library")
        return [
            "Concurrent reads: \(rowCount) rows; a read = a find of a random id in 1...\(rowCount), each checked "
                + "(library: SmallItem.find on one Database per run, opened for it, every thread in its own db.use; "
                + "raw: a connection and a prepared SELECT of the same columns per thread); each read and each insert its own "
                + "autocommit transaction, except in the runs of \(Self.scopedReads) reads per read transaction "
                + "(library: db.read { finds }; raw: BEGIN, selects, COMMIT); "
                + String(format: "about %.0f s per run, ", window.seconds)
                + "reader runs in turns, \(rounds + 2) rounds of each grouping, "
                + "the best of each below; "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores: indicative",
            heading, String(repeating: "-", count: heading.count),
        ] + titles.map { row($0, best[$0]!) } + [
            "",
            String(format: "single reader: library %.2f of raw's reads/s; two readers: library %.2f of raw's; "
                   + "%d reads per read transaction: %.2f and %.2f",
                   alone.readRate / rawAlone.readRate, pair.readRate / rawPair.readRate, Self.scopedReads,
                   best["library: 1 reader" + perScope]!.readRate / best["raw: 1 reader" + perScope]!.readRate,
                   best["library: 2 readers" + perScope]!.readRate / best["raw: 2 readers" + perScope]!.readRate),
            // Above 2 on two cores: a lone reader pays lock calls that overlapping readers skip,
            // so this ratio grows as the per-read cost shrinks (README: concurrent reads).
            "x readers / one reader: the median of each round's ratio (to the round's one-reader run)",
            String(format: "two readers / one reader, each read its own transaction: raw %.2f, library %.2f "
                   + "(within %.2f of raw's: %@; set by each side's per-read cost, not by contention)",
                   rawScaling, libraryScaling, Self.scalingTolerance,
                   verdict(raw: rawScaling, library: libraryScaling)),
            String(format: "two readers / one reader, %d reads per read transaction: raw %.2f, library %.2f "
                   + "(target: within %.2f of raw's) %@",
                   Self.scopedReads, rawScopedScaling, scopedScaling, Self.scalingTolerance,
                   verdict(raw: rawScopedScaling, library: scopedScaling)),
            String(format: "two readers while one writer inserts / one reader alone: raw %.2f, library %.2f: "
                   + "library/raw %.2f (target >= %.2f) %@",
                   rawMixed, mixed, mixedRatio, Self.writerScalingTarget, mixedRatio >= Self.writerScalingTarget ? "ok" : "MISSED"),
            String(format: "  per processor second (reads per reader-CPU-second beside the writer / one reader's; "
                   + "the scheduler's share taken out, steadier under load): raw %.2f, library %.2f: library/raw %.2f",
                   rawCPUScaling, libraryCPUScaling, libraryCPUScaling / rawCPUScaling),
            String(format: "  the other side's writer (diagnostic): raw readers + library writer %.2f, "
                   + "library readers + raw writer %.2f",
                   scaling("raw readers + library writer"), scaling("library readers + raw writer")),
            "  processor time (medians of the rounds; beside the writer, 3 threads on "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores):",
            cpuLine("raw: 1 reader"), cpuLine("raw: 2 readers"), cpuLine("raw: 2 readers + 1 writer"),
            cpuLine("library: 1 reader"), cpuLine("library: 2 readers"), cpuLine("library: 2 readers + 1 writer"),
            "rows after: \(expected) = \(rowCount) + \(writes["raw sqlite3"] ?? 0) raw + \(writes["library"] ?? 0) library writes",
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
        /// The processor seconds the threads of `role` used.
        func cpu(_ role: ThreadResult.Role) -> Double { of(role).reduce(0) { $0 + $1.cpu.seconds } }
        /// Reads per second of the readers' processor time.
        var readsPerCPU: Double { Double(reads) / max(cpu(.reader), 1e-9) }
        /// Voluntary context switches of the threads of `role` per 1,000 of their operations.
        func waits(_ role: ThreadResult.Role) -> Double {
            1000 * Double(of(role).reduce(0) { $0 + $1.voluntarySwitches }) / Double(max(of(role).reduce(0) { $0 + $1.count }, 1))
        }
        /// Writes per second of the writer's processor time.
        var writesPerCPU: Double { Double(writes) / max(cpu(.writer), 1e-9) }
        /// The longest thread's loop, in seconds.
        var seconds: Double { results.map(\.elapsed.seconds).max() ?? 0 }
    }

    /// Starts the threads, lets them run for ``window`` once all are warmed
    /// up, stops and joins them; throws any thread's error.
    private func measureRun(
        readers: Int, writer: ConcurrentSide?, side: ConcurrentSide, grouping: ReadGrouping
    ) throws -> RunSummary {
        let run = ConcurrentRun()
        let roles = Array(repeating: ThreadResult.Role.reader, count: readers) + (writer == nil ? [] : [.writer])
        for (index, role) in roles.enumerated() {
            start(role, seed: UInt64(index + 1), side: role == .writer ? writer! : side, grouping: grouping, run)
        }
        for _ in roles { run.ready.wait() }
        for _ in roles { run.go.signal() }
        Thread.sleep(forTimeInterval: window.seconds)
        run.stop.store(true, ordering: .relaxed)
        run.done.wait()
        let context = "concurrency (\(side.name)): \(readers) readers" + (writer.map { " + 1 writer (\($0.name))" } ?? "")
        let errors = run.errors.withLock { $0 }
        try Check.require(errors.isEmpty, "\(context): \(errors.joined(separator: "; "))")
        let results = run.results.withLock { $0 }
        try Check.count(results.count, roles.count, "\(context): threads that finished")
        try Check.require(results.allSatisfy { $0.count > 0 }, "\(context): a thread did nothing: \(results)")
        return RunSummary(threads: roles.count, writerRan: writer != nil, results: results)
    }

    /// Starts one thread in `role` on `side`: it warms up (a reader reads
    /// once, in `grouping`), signals ready, waits for go, then loops until the stop flag,
    /// recording its count, or the first error.
    private func start(
        _ role: ThreadResult.Role, seed: UInt64, side: ConcurrentSide, grouping: ReadGrouping, _ run: ConcurrentRun
    ) {
        let rowCount = self.rowCount
        run.done.enter()
        let thread = Thread {
            defer { run.done.leave() }
            var waiting = true
            do {
                var generator = SplitMix64(seed: seed)
                // `read` does `grouping.readsPerCall` finds.
                func loop(read: () throws -> Void, write: (Int) throws -> Void) throws {
                    if role == .reader { try read() }
                    run.ready.signal()
                    waiting = false
                    run.go.wait()
                    let clock = ContinuousClock()
                    let start = clock.now, cpuStart = threadCPUTime(), switchesStart = threadSwitches()
                    var count = 0
                    while !run.stop.load(ordering: .relaxed) {
                        switch role {
                        case .reader:
                            try read()
                            count += grouping.readsPerCall
                        case .writer:
                            try write(count)
                            count += 1
                        }
                    }
                    let elapsed = clock.now - start, cpu = threadCPUTime() - cpuStart, switches = threadSwitches()
                    let result = ThreadResult(
                        role: role, count: count, elapsed: elapsed, cpu: cpu,
                        voluntarySwitches: switches.voluntary - switchesStart.voluntary,
                        involuntarySwitches: switches.involuntary - switchesStart.involuntary)
                    run.results.withLock { $0.append(result) }
                }
                func nextID() -> Int64 { Int64.random(in: 1...Int64(rowCount), using: &generator) }
                func notFound(_ id: Int64) -> Check.Failure {
                    Check.Failure(description: "find(\(id)) did not return row \(id)")
                }
                switch side {
                case .library(let database):
                    func find() throws {
                        let id = nextID()
                        guard let item = try SmallItem.find(id), item.id == id, item.value == Int(id) else {
                            throw notFound(id)
                        }
                    }
                    try database.use {
                        try loop(
                            read: {
                                switch grouping {
                                case .autocommit: try find()
                                case .scoped(let count): try database.read { for _ in 0..<count { try find() } }
                                }
                            },
                            write: { count in
                                try SmallItem.create(["name": "written\(count + 1)", "value": rowCount + count + 1])
                            })
                    }
                case .raw(let path):
                    let connection = try RawDatabase(path: path)
                    sqlite3_busy_timeout(connection.handle, 10_000)  // as the library's connections
                    // The row as the library's record holds it: the id, both timestamps, the columns.
                    let select = try connection.prepare(
                        #"SELECT "id", "createdAt", "updatedAt", "name", "value" FROM "SmallItem" WHERE "id" = ?"#)
                    let insert = role == .writer
                        ? try connection.prepare(
                            #"INSERT INTO "SmallItem" ("createdAt", "updatedAt", "name", "value") VALUES (?, ?, ?, ?)"#)
                        : nil
                    func find() throws {
                        let id = nextID()
                        sqlite3_bind_int64(select.handle, 1, id)
                        defer { select.reset() }
                        guard try select.step(), sqlite3_column_int64(select.handle, 0) == id,
                              sqlite3_column_double(select.handle, 1) > 0, sqlite3_column_double(select.handle, 2) > 0,
                              !select.text(3).isEmpty, sqlite3_column_int64(select.handle, 4) == id
                        else { throw notFound(id) }
                    }
                    try loop(
                        read: {
                            switch grouping {
                            case .autocommit:
                                try find()
                            case .scoped(let count):
                                try connection.read { for _ in 0..<count { try find() } }
                            }
                        },
                        write: { count in
                            // As the library's create: timestamps, the name, the value; autocommit.
                            guard let insert else { return }
                            let now = Date().timeIntervalSince1970
                            defer { insert.reset() }
                            sqlite3_bind_double(insert.handle, 1, now)
                            sqlite3_bind_double(insert.handle, 2, now)
                            try insert.bind("written\(count + 1)", at: 3)
                            sqlite3_bind_int64(insert.handle, 4, Int64(rowCount + count + 1))
                            guard try !insert.step() else { throw Check.Failure(description: "the raw INSERT returned a row") }
                        })
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
