// ARBench: the library against the raw sqlite3 C API, workload by workload,
// in one process, on database files with the library's pragmas.
//
//   swift build -c release --product ARBench && .build/release/ARBench [N]
//
// N is the row count (default 100000). Exit status 1 when a side did the
// wrong thing (a check failed) or on bad usage; missed targets are reported
// in the table but do not fail the run.
import CSQLiteRaw
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count <= 1, let rowCount = arguments.first.map({ Int($0.replacingOccurrences(of: "_", with: "")) }) ?? 100_000,
      rowCount >= 2
else {
    FileHandle.standardError.write(Data("usage: ARBench [N]   (N >= 2 rows, default 100000)\n".utf8))
    exit(1)
}

let rounds = 3
print("ARBench: \(rowCount) rows, best of \(rounds) rounds per side (alternating order), "
    + "SQLite \(String(cString: sqlite3_libversion())), database files with journal_mode=WAL, synchronous=NORMAL, foreign_keys=ON")

let rows = RowValues.table(rowCount)
let harness = Harness(raw: RawSide(rows: rows), library: LibrarySide(rows: rows), rows: rows, rounds: rounds)
var measurements: [Measurement] = []
do {
    for workload in Workload.allCases {
        measurements.append(try harness.measure(workload) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        })
    }
} catch {
    print("FAILED: \(error)")
    exit(1)
}

let report = Report(measurements: measurements)
print("")
for line in report.lines { print(line) }
print("")
print(report.missedCount == 0
    ? "all \(measurements.count) workloads within target"
    : "\(report.missedCount) of \(measurements.count) workloads MISSED their target")
