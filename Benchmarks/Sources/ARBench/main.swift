// ARBench: the library against the raw sqlite3 C API and GRDB.swift, workload
// by workload, in one process, on database files with the library's pragmas.
//
//   swift build -c release --product ARBench && .build/release/ARBench [N] [--indexed Q] [--predicate P]
//
// N is the row count (default 100000). After the workloads' table come the
// query benchmarks on a table of N rows (Q indexed queries, default N / 200;
// P predicate queries, default N / 5: the defaults keep a full run near a
// minute) and the memory benchmark (2N and N / 2 rows, each mode in a child
// process: `ARBench memory <cursor|fetch|raw> <rows> <database>`), then the
// relation benchmark (N / 100 groups of 100 members each, walked lazily and
// eagerly), then the transaction benchmark (2,000 inserts, each autocommit,
// then all in one transaction), the concurrent-read benchmark (10,000 rows:
// one reader, then two, on raw sqlite3 with a connection per thread and on the
// library, then the library's two readers beside a writer, about 1 s each) and
// the scaling benchmark (insert and fetch all at 1,000 to 1,000,000 rows, raw
// and library, each part in a child process: `ARBench scaling …`); these
// three do not depend on N. With a PostgreSQL server (AR_BENCH_POSTGRES or
// AR_TEST_POSTGRES), the CRUD workloads again on N / 10 rows, then inserts in autocommit, the
// age query and the relation walks, through the library on PostgreSQL against binary raw libpq;
// last the async path (`ARBench async`: awaited find against sync find). Exit status 1 when a side did the wrong thing (a
// check failed) or on bad usage; missed targets are reported in the tables
// but do not fail the run.
import ActiveRecord
import CSQLiteRaw
import Foundation

// Both sides run in one process, on one SQLite, configured as the library configures it
// before either side opens a connection (a library connection opened first): memory
// statistics off unless ARBENCH_MEMSTATUS=1, and the library's adaptive mutexes unless
// ARBENCH_SQLITE_MUTEXES=1 (SQLite's own).
let memoryStatistics = ProcessInfo.processInfo.environment["ARBENCH_MEMSTATUS"] == "1"
let sqliteMutexes = ProcessInfo.processInfo.environment["ARBENCH_SQLITE_MUTEXES"] == "1"
if memoryStatistics { Database.keepSQLiteMemoryStatistics() }
if sqliteMutexes { Database.keepSQLiteMutexes() }
_ = try Database(.inMemory)

if CommandLine.arguments.dropFirst().first == "memory" {
    exit(MemoryChild.main(CommandLine.arguments.dropFirst(2)))
}
// `ARBench async [N] [--engine sqlite|postgres] [--count sync|async K]`: the async path's cost.
if CommandLine.arguments.dropFirst().first == "async" {
    exit(AsyncSection.main(CommandLine.arguments.dropFirst(2)))
}
// `ARBench scaling <insert|fetch> <raw|library> <rows> <file>`: a child of the scaling section.
if CommandLine.arguments.dropFirst().first == "scaling" {
    exit(ScalingChild.main(CommandLine.arguments.dropFirst(2)))
}

// `ARBench postgres-bulk [N] [--rounds R] [--fetch A,B]`: issue 35's bulk insert and large
// fetch on PostgreSQL (PostgresBulk.swift); `postgres-bulk-fetch …` is its child.
if CommandLine.arguments.dropFirst().first == "postgres-bulk" {
    exit(PostgresBulk.main(CommandLine.arguments.dropFirst(2)))
}
if CommandLine.arguments.dropFirst().first == "postgres-bulk-fetch" {
    exit(PostgresBulkFetchChild.main(CommandLine.arguments.dropFirst(2)))
}

// `ARBench postgres [N] [--only WORKLOAD] [--rounds R]`: the PostgreSQL section alone, on N
// rows (default 10000), every row or one (a CRUD workload, or insertAutocommit, ageQuery, lazy,
// eager), R rounds per side (default 5).
if CommandLine.arguments.dropFirst().first == "postgres" {
    guard let connection = PostgresSection.configuredConnection else {
        FileHandle.standardError.write(Data("ARBench postgres: set AR_BENCH_POSTGRES to a libpq connection string\n".utf8))
        exit(1)
    }
    var arguments = CommandLine.arguments.dropFirst(2)
    // `--only` naming one of the PostgreSQL-only rows: taken out before the common options.
    var onlyRow: PostgresRow?
    if let index = arguments.firstIndex(of: "--only"), index + 1 < arguments.endIndex,
       let row = PostgresRow(rawValue: arguments[index + 1]) {
        onlyRow = row
        arguments.removeSubrange(index...(index + 1))
    }
    guard let options = Options(arguments), options.only.map({ if case .workload = $0 { true } else { false } }) ?? true else {
        let names: [String] = Workload.allCases.map { "\($0)" } + PostgresRow.allCases.map(\.rawValue)
        let usage = "usage: ARBench postgres [N] [--only WORKLOAD] [--rounds R]   (WORKLOAD: \(names.joined(separator: ", ")))\n"
        FileHandle.standardError.write(Data(usage.utf8))
        exit(1)
    }
    let count = arguments.first.flatMap { Int($0.replacingOccurrences(of: "_", with: "")) } ?? 10_000
    Check.begin()
    do {
        var section = PostgresSection(
            connection: connection, rows: RowValues.table(max(2, count)),
            rounds: arguments.contains("--rounds") ? options.rounds : PostgresSection.rounds, sqlite: [], sqliteRowCount: 1)
        if case .workload(let workload)? = options.only {
            section.workloads = [workload]
            section.extraRows = []
        }
        if let onlyRow {
            section.workloads = []
            section.extraRows = [onlyRow]
        }
        let lines = try section.run { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        for line in lines { print(line) }
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("FAILED: \(error)\n".utf8))
        exit(1)
    }
}

/// The command line's sizes; numbers may have underscores (100_000).
struct Options {
    static let usage = "usage: ARBench [N] [--indexed Q] [--predicate P] [--only WORKLOAD] [--rounds R]   "
        + "(N >= 2 rows, default 100000; Q indexed queries, default N / 200; P predicate queries, default N / 5; "
        + "--only runs one CRUD workload (\(Workload.allCases.map { "\($0)" }.joined(separator: ", "))), "
        + "or the queries, relations, concurrency or scaling section (1,000 to 1,000,000 rows), and nothing else; "
        + "R rounds per side, default 3)"

    /// The row count of the workloads and of the query table.
    var rowCount = 100_000
    /// What `--only` runs, skipping everything else.
    enum Only {
        case workload(Workload)
        case queries
        case relations
        case concurrency
        case scaling
    }

    /// What to run alone (`--only`); `nil`: everything.
    var only: Only?
    /// Rounds per side; each side's best counts.
    var rounds = 3
    private var indexed: Int?
    private var predicate: Int?

    /// How many indexed queries each side runs per round.
    var indexedQueries: Int { indexed ?? max(1, rowCount / 200) }
    /// How many predicate queries each side runs per round.
    var predicateQueries: Int { predicate ?? max(1, rowCount / 5) }

    /// Parses the arguments after the program name; `nil` on bad usage.
    init?(_ arguments: ArraySlice<String>) {
        func number(_ text: String, minimum: Int) -> Int? {
            Int(text.replacingOccurrences(of: "_", with: "")).flatMap { $0 >= minimum ? $0 : nil }
        }
        var arguments = arguments
        var positional = false
        while let argument = arguments.popFirst() {
            switch argument {
            case "--only":
                switch arguments.popFirst() {
                case "queries": only = .queries
                case "relations": only = .relations
                case "concurrency": only = .concurrency
                case "scaling": only = .scaling
                case let name?:
                    guard let workload = Workload.allCases.first(where: { "\($0)" == name }) else { return nil }
                    only = .workload(workload)
                case nil: return nil
                }
            case "--rounds":
                guard let value = arguments.popFirst().flatMap({ number($0, minimum: 1) }) else { return nil }
                rounds = value
            case "--indexed", "--predicate":
                guard let value = arguments.popFirst().flatMap({ number($0, minimum: 1) }) else { return nil }
                if argument == "--indexed" { indexed = value } else { predicate = value }
            default:
                guard !positional, let count = number(argument, minimum: 2) else { return nil }
                rowCount = count
                positional = true
            }
        }
    }
}

guard let options = Options(CommandLine.arguments.dropFirst()) else {
    FileHandle.standardError.write(Data((Options.usage + "\n").utf8))
    exit(1)
}
let rowCount = options.rowCount

let rounds = options.rounds
print("ARBench: raw sqlite3, swift-activerecord and GRDB.swift 7.10.0 (DatabaseQueue, Codable records); "
    + "\(rowCount) rows, best of \(rounds) rounds per side (rotating order), "
    + "SQLite \(String(cString: sqlite3_libversion())), database files with journal_mode=WAL, synchronous=NORMAL, foreign_keys=ON, "
    + "SQLite memory statistics \(memoryStatistics ? "on (ARBENCH_MEMSTATUS=1)" : "off (as the library sets them)"), "
    + "SQLite mutexes \(sqliteMutexes ? "SQLite's own (ARBENCH_SQLITE_MUTEXES=1)" : "adaptive (as the library sets them)")")

Check.begin()
let rows = RowValues.table(rowCount)
let harness = Harness(
    raw: RawSide(rows: rows), library: LibrarySide(rows: rows), grdb: GRDBSide(rows: rows), rows: rows, rounds: rounds)
/// Writes a progress line to standard error.
func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Builds and runs the relation section.
func relationSection() throws -> (lines: [String], missed: Int) {
    try RelationSection(
        groupCount: max(1, rowCount / RelationSection.membersPerGroup), membersPerGroup: RelationSection.membersPerGroup,
        rounds: rounds
    ).run(progress: progress)
}

/// Builds and runs the query section.
func querySection() throws -> (lines: [String], missed: Int) {
    try QuerySection(
        rowCount: rowCount, indexedQueryCount: options.indexedQueries, predicateQueryCount: options.predicateQueries,
        rounds: rounds
    ).run(progress: progress)
}

/// Builds and runs the concurrency section.
func concurrencySection() throws -> [String] {
    try ConcurrencySection(rowCount: ConcurrencySection.defaultRowCount, window: .seconds(1), rounds: rounds).run(progress: progress)
}

/// Builds and runs the scaling section.
func scalingSection() throws -> [String] {
    try ScalingSection(rowCounts: ScalingSection.defaultRowCounts, rounds: rounds).run(progress: progress)
}

/// Prints one section's lines and exits: `--only` with a section.
func runAlone(_ section: () throws -> [String]) -> Never {
    do {
        let lines = try section()
        print("")
        for line in lines { print(line) }
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("FAILED: \(error)\n".utf8))
        exit(1)
    }
}

switch options.only {
case .queries?: runAlone { try querySection().lines }
case .relations?: runAlone { try relationSection().lines }
case .concurrency?: runAlone(concurrencySection)
case .scaling?: runAlone(scalingSection)
case .workload?, nil:
    break
}

var measurements: [Measurement] = []
do {
    let workloads: [Workload]
    if case .workload(let workload)? = options.only { workloads = [workload] } else { workloads = Workload.allCases }
    for workload in workloads {
        measurements.append(try harness.measure(workload, progress: progress))
    }
} catch {
    FileHandle.standardError.write(Data("FAILED: \(error)\n".utf8))
    exit(1)
}

let report = Report(measurements: measurements)
print("")
for line in report.lines { print(line) }
print("")
for line in report.summary { print(line) }
if options.only != nil { exit(0) }

do {
    let queries = try querySection()
    print("")
    for line in queries.lines { print(line) }
    let memory = try MemorySection(rowCounts: [2 * rowCount, max(2, rowCount / 2)]).run(progress: progress)
    print("")
    for line in memory { print(line) }
    let relations = try relationSection()
    print("")
    for line in relations.lines { print(line) }
    let transactions = try TransactionSection(rowCount: TransactionSection.defaultRowCount, rounds: rounds)
        .run(progress: progress)
    print("")
    for line in transactions { print(line) }
    let concurrency = try concurrencySection()
    print("")
    for line in concurrency { print(line) }
    let scaling = try scalingSection()
    print("")
    for line in scaling { print(line) }
    if let connection = PostgresSection.configuredConnection {
        let postgres = try PostgresSection(
            connection: connection, rows: RowValues.table(max(2, rowCount / 10)), rounds: PostgresSection.rounds, sqlite: measurements,
            sqliteRowCount: rowCount
        ).run(progress: progress)
        print("")
        for line in postgres { print(line) }
    } else {
        print("")
        print("PostgreSQL section skipped: no server (make bench starts one; or set AR_BENCH_POSTGRES to a libpq connection string)")
    }
    let async = try AsyncSection.wallClock(rowCount: AsyncSection.defaultRowCount, progress: progress)
    print("")
    for line in async { print(line) }
} catch {
    FileHandle.standardError.write(Data("FAILED: \(error)\n".utf8))
    exit(1)
}
