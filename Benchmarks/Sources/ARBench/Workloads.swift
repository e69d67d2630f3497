import Foundation

/// The measured workloads, in report order, each with its target: the
/// largest acceptable ratio of library time to raw time (GRDB's time is
/// reported beside them, with no target).
enum Workload: CaseIterable {
    /// Insert N records in one transaction.
    case insert
    /// Insert N records with one batch call (the library's `insertAll`; raw sqlite3 and
    /// GRDB insert as they do for ``insert``).
    case insertAll
    /// Fetch all N records into objects, in id order.
    case fetchAll
    /// Find each of ids 1...N, one query each.
    case find
    /// Change one column (score) of N loaded records and save each, in one transaction.
    case updateScore
    /// Delete N loaded records by id, in one transaction.
    case destroy
    /// Delete ids 1...N without loading them, in one transaction (`Model.delete(id:)`).
    case deleteByID

    /// A short name for the report and for check failures.
    var title: String {
        switch self {
        case .insert: "insert (1 tx)"
        case .insertAll: "insertAll (batch)"
        case .fetchAll: "fetch all"
        case .find: "find by id"
        case .updateScore: "update score (1 tx)"
        case .destroy: "destroy by id (1 tx)"
        case .deleteByID: "delete by id (1 tx)"
        }
    }

    /// Whether the workload inserts the rows itself (the others start from a filled table).
    var inserts: Bool { self == .insert || self == .insertAll }

    /// Whether the workload deletes every row.
    var deletes: Bool { self == .destroy || self == .deleteByID }

    /// The largest acceptable library/raw ratio.
    var target: Double {
        switch self {
        case .insert: 2.0
        case .insertAll: 1.15
        case .fetchAll: 2.5
        case .find: 3.0
        case .updateScore: 2.5
        case .destroy: 2.0
        case .deleteByID: 1.5
        }
    }
}

/// One side of the comparison (raw sqlite3, the library or GRDB.swift).
protocol BenchSide {
    /// `raw`, `library` or `grdb`: the progress label and the database file's name.
    var name: String { get }
    /// Runs one round of `workload` on a new database file at `path`: untimed
    /// setup, the timed part, then checks of the objects it produced.
    /// - Returns: the duration of the timed part only.
    func run(_ workload: Workload, path: String) throws -> Duration
}

/// Times `body` with `ContinuousClock`, returning the duration and the result.
///
/// - Parameter side: the side whose work `body` is ("raw", "library", "library string",
///   "library eager"…). When it is the one `ARBENCH_COUNT` names, `body` runs inside
///   ``countedSide(_:)``, where `make bench-instructions` has callgrind count instructions.
func measure<T>(side: String? = nil, _ body: () throws -> T) throws -> (Duration, T) {
    var result: T?
    let clock = ContinuousClock()
    let start = clock.now
    if let side, side == countedSideName {
        try withoutActuallyEscaping({ result = try body() }) { try countedSide(CountedWork($0)) }
    } else {
        result = try body()
    }
    let elapsed = clock.now - start
    return (elapsed, result!)
}

/// The side whose measured work callgrind counts (`ARBENCH_COUNT`), if any.
let countedSideName = ProcessInfo.processInfo.environment["ARBENCH_COUNT"]

/// Where callgrind counts instructions (`scripts/bench-instructions.sh` collects inside this
/// function only): never inlined, and given its work in an object so that the optimiser
/// makes no specialised copies of it (callgrind's toggle would switch off again on entering
/// a second matching copy).
@inline(never)
func countedSide(_ work: CountedWork) throws { try work.body() }

/// The measured work, boxed for ``countedSide(_:)``.
final class CountedWork {
    let body: () throws -> Void
    init(_ body: @escaping () throws -> Void) { self.body = body }
}

/// The best times of the three sides for one workload (the ratios come
/// with ``SideTimes``).
struct Measurement: SideTimes {
    let workload: Workload
    let raw: Duration
    let library: Duration
    let grdb: Duration

    /// Whether the ratio is within the workload's target.
    var metTarget: Bool { ratio <= workload.target }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// Runs each workload for several rounds per side, on fresh database files,
/// rotating which side goes first, and keeps each side's best time.
struct Harness {
    let raw: any BenchSide
    let library: any BenchSide
    let grdb: any BenchSide
    let rows: [RowValues]
    let rounds: Int

    /// The sides in round 1's order; each later round starts one further along.
    private var sides: [any BenchSide] { [raw, library, grdb] }

    /// Measures `workload`, checking each side's database file after every round.
    /// - Parameter progress: called with a line after each round.
    func measure(_ workload: Workload, progress: (String) -> Void) throws -> Measurement {
        var best: [String: Duration] = [:]
        for round in 1...rounds {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let shift = (round - 1) % sides.count
            let order = Array(sides[shift...] + sides[..<shift])
            var line = "\(workload.title) round \(round):"
            for side in order {
                let path = directory.path + "/\(side.name).sqlite"
                let elapsed = try side.run(workload, path: path)
                try Check.database(at: path, after: workload, rows: rows, side: side.name)
                best[side.name] = min(best[side.name] ?? elapsed, elapsed)
                line += " \(side.name) \(String(format: "%.4f", elapsed.seconds))s"
            }
            progress(line)
        }
        guard let rawBest = best[raw.name], let libraryBest = best[library.name], let grdbBest = best[grdb.name] else {
            throw Check.Failure(description: "\(workload.title): no time was measured")
        }
        return Measurement(workload: workload, raw: rawBest, library: libraryBest, grdb: grdbBest)
    }
}

/// A new, empty directory under the system's temporary directory.
struct TemporaryDirectory {
    let path: String

    /// Creates the directory.
    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("arbench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Deletes the directory and the database files in it.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
