// ARBench: the library against the raw sqlite3 C API and GRDB.swift, workload
// by workload, in one process, on database files with the library's pragmas.
//
//   swift build -c release --product ARBench && .build/release/ARBench [N]
//
// N is the row count (default 100000). Exit status 1 when a side did the
// wrong thing (a check failed) or on bad usage; missed targets are reported
// in the table but do not fail the run.
import CSQLiteRaw
import Foundation

/// The row count: the only argument (underscores allowed: 100_000), or 100000.
func parseRowCount(_ arguments: ArraySlice<String>) -> Int? {
    guard let argument = arguments.first else { return 100_000 }
    guard arguments.count == 1, let count = Int(argument.replacingOccurrences(of: "_", with: "")), count >= 2
    else { return nil }
    return count
}

guard let rowCount = parseRowCount(CommandLine.arguments.dropFirst()) else {
    FileHandle.standardError.write(Data("usage: ARBench [N]   (N >= 2 rows, default 100000)\n".utf8))
    exit(1)
}

let rounds = 3
print("ARBench: raw sqlite3, swift-activerecord and GRDB.swift 7.10.0 (DatabaseQueue, Codable records); "
    + "\(rowCount) rows, best of \(rounds) rounds per side (rotating order), "
    + "SQLite \(String(cString: sqlite3_libversion())), database files with journal_mode=WAL, synchronous=NORMAL, foreign_keys=ON")

Check.begin()
let rows = RowValues.table(rowCount)
let harness = Harness(
    raw: RawSide(rows: rows), library: LibrarySide(rows: rows), grdb: GRDBSide(rows: rows), rows: rows, rounds: rounds)
var measurements: [Measurement] = []
do {
    for workload in Workload.allCases {
        measurements.append(try harness.measure(workload) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        })
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
