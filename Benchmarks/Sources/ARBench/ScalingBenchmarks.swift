import ActiveRecord
import Foundation

/// Which part of the scaling benchmark a child process runs.
enum ScalingPart: String {
    /// Inserts the rows (one transaction) into a new file, timed; the file stays.
    case insert
    /// Fetches every record of a file `insert` filled, timed, with its peak memory growth.
    case fetch
}

/// The child process: `ARBench scaling <insert|fetch> <raw|library> <rows> <file>`. Each part
/// runs in a process of its own, so that a fetch's memory starts from a fresh heap (memory the
/// insert freed would otherwise be reused, and its growth hidden). Prints one line of
/// `key=value` fields: `seconds`, and for a fetch `growthKB` (VmHWM after, minus VmRSS just
/// before, the connection open, the table checked and the peak reset to it).
enum ScalingChild {
    static let usage = "usage: ARBench scaling <insert|fetch> <raw|library> <rows> <database file>"

    /// Runs the child; the process's exit status.
    static func main(_ arguments: ArraySlice<String>) -> Int32 {
        let arguments = Array(arguments)
        guard arguments.count == 4, let part = ScalingPart(rawValue: arguments[0]),
              ["raw", "library"].contains(arguments[1]), let rowCount = Int(arguments[2]), rowCount >= 1
        else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 1
        }
        let side = arguments[1], path = arguments[3]
        do {
            switch part {
            case .insert:
                let rows = RowValues.table(rowCount)
                let bench: any BenchSide = side == "raw" ? RawSide(rows: rows) : LibrarySide(rows: rows)
                let elapsed = try bench.run(.insert, path: path)
                print("part=insert side=\(side) rows=\(rowCount) seconds=\(elapsed.seconds)")
            case .fetch:
                let (elapsed, growth, peak, reset, snapshots) = try fetch(side, path: path)
                // The expected rows are made after the peak is read, so they are not counted.
                try Check.records(
                    snapshots, rows: RowValues.table(rowCount), scoreIncrement: 0, side: side, workload: .fetchAll)
                print("part=fetch side=\(side) rows=\(rowCount) seconds=\(elapsed.seconds) growthKB=\(growth) "
                    + "peakKB=\(peak) peakReset=\(reset ? "yes" : "no")")
            }
            return 0
        } catch {
            FileHandle.standardError.write(Data("scaling \(part) \(side) FAILED: \(error)\n".utf8))
            return 1
        }
    }

    /// Fetches every record of `path` on `side`: the time, the peak growth (kB), the process's
    /// peak resident memory (VmHWM, kB), whether the peak was reset, and the records' values
    /// (taken after the peak is read).
    private static func fetch(_ side: String, path: String) throws -> (Duration, Int, Int, Bool, [UserSnapshot]) {
        func baseline() throws -> (Int, Bool) {
            let reset = ResidentMemory.resetPeak()
            return (try ResidentMemory.kilobytes("VmRSS"), reset)
        }
        if side == "raw" {
            let store = try RawUserStore(try RawDatabase(path: path))
            let (rss, reset) = try baseline()
            let (elapsed, users) = try measure { try store.fetchAll() }
            let peak = try ResidentMemory.kilobytes("VmHWM")
            return (elapsed, peak - rss, peak, reset, users.map(\.snapshot))
        }
        let database = try Database(.file(path))
        return try database.use {
            _ = try BenchUser.find(1)  // reflect the model, check the table, open the reader
            let (rss, reset) = try baseline()
            let (elapsed, users) = try measure { try BenchUser.all() }
            let peak = try ResidentMemory.kilobytes("VmHWM")
            return (elapsed, peak - rss, peak, reset, users.map(\.snapshot))
        }
    }
}

/// The scaling section (`ARBench --only scaling`): insert (one transaction) and fetch all of
/// the 11-column `BenchUser` at each row count, raw sqlite3 and the library, every part in a
/// child process of its own (best of `rounds` below 1,000,000 rows, one run at 1,000,000): the
/// time per row, the ratio, and fetch-all's peak memory growth with the bytes per record.
struct ScalingSection {
    let rowCounts: [Int]
    let rounds: Int

    static let defaultRowCounts = [1_000, 10_000, 100_000, 1_000_000]

    /// One row count's best results per side.
    private struct Result {
        var insert: [String: Double] = [:]
        var fetch: [String: Double] = [:]
        var growthKB: [String: Int] = [:]
        var peakKB: [String: Int] = [:]
    }

    /// The target at the largest row count: the library's fetch-all peak resident memory at
    /// most this multiple of raw's (an array of plain objects with the same fields).
    static let peakTarget = 1.1

    /// Runs every child; returns the lines to print.
    func run(progress: (String) -> Void) throws -> [String] {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var results: [Int: Result] = [:]
        var resetRefused = false
        for rows in rowCounts {
            var result = Result()
            for round in 1...(rows >= 1_000_000 ? 1 : rounds) {
                for side in round % 2 == 1 ? ["raw", "library"] : ["library", "raw"] {
                    let directory = try TemporaryDirectory()
                    defer { directory.remove() }
                    let path = directory.path + "/scaling-\(side).sqlite"
                    let inserted = try childFields(executable, ["scaling", "insert", side, String(rows), path])
                    let fetched = try childFields(executable, ["scaling", "fetch", side, String(rows), path])
                    guard let insertSeconds = inserted["seconds"].flatMap(Double.init),
                          let fetchSeconds = fetched["seconds"].flatMap(Double.init),
                          let growth = fetched["growthKB"].flatMap(Int.init),
                          let peak = fetched["peakKB"].flatMap(Int.init)
                    else { throw Check.Failure(description: "scaling \(side) \(rows): \(inserted) \(fetched)") }
                    resetRefused = resetRefused || fetched["peakReset"] != "yes"
                    result.insert[side] = min(result.insert[side] ?? insertSeconds, insertSeconds)
                    result.fetch[side] = min(result.fetch[side] ?? fetchSeconds, fetchSeconds)
                    result.growthKB[side] = min(result.growthKB[side] ?? growth, growth)
                    result.peakKB[side] = min(result.peakKB[side] ?? peak, peak)
                    progress(String(format: "scaling %d rows, round %d, %@: insert %.4f s, fetch %.4f s, growth %d kB",
                                    rows, round, side, insertSeconds, fetchSeconds, growth))
                }
            }
            results[rows] = result
        }
        let layout = TableLayout(titleWidth: 10, widths: [13, 13, 7, 15, 15, 7, 13, 13, 11, 11])
        let heading = layout.row(
            ["rows", "insert raw", "insert lib", "ratio", "fetch raw", "fetch lib", "ratio", "fetch raw", "fetch lib",
             "raw", "lib"], "")
        let units = layout.row(["", "µs/row", "µs/row", "", "µs/row", "µs/row", "", "MiB", "MiB", "B/record",
                                "B/record"], "")
        var lines = [
            "Scaling: the 11-column BenchUser, insert (one transaction) and fetch all, raw sqlite3 and the library, "
                + "each part in a child process of its own (best of \(rounds) below 1,000,000 rows, one run at "
                + "1,000,000); fetch memory = peak resident growth while fetching (VmHWM after minus VmRSS before)",
            heading, units, String(repeating: "-", count: units.count),
        ]
        for rows in rowCounts {
            guard let result = results[rows], let rawInsert = result.insert["raw"], let libInsert = result.insert["library"],
                  let rawFetch = result.fetch["raw"], let libFetch = result.fetch["library"],
                  let rawGrowth = result.growthKB["raw"], let libGrowth = result.growthKB["library"] else { continue }
            let perRow = { (seconds: Double) in String(format: "%.3f", seconds / Double(rows) * 1e6) }
            let bytes = { (kilobytes: Int) in String(format: "%.0f", Double(kilobytes) * 1024 / Double(rows)) }
            lines.append(layout.row(
                [String(rows), perRow(rawInsert), perRow(libInsert), String(format: "%.2f", libInsert / rawInsert),
                 perRow(rawFetch), perRow(libFetch), String(format: "%.2f", libFetch / rawFetch),
                 String(format: "%.1f", Double(rawGrowth) / 1024), String(format: "%.1f", Double(libGrowth) / 1024),
                 bytes(rawGrowth), bytes(libGrowth)], ""))
        }
        if resetRefused { lines.append("(the kernel refused to reset VmHWM: peaks count from each child's start)") }
        return lines + peakVerdict(results)
    }

    /// The row of the target: at the largest row count, each side's fetch-all peak resident
    /// memory (the child process's VmHWM: the program, the open connection and the records),
    /// the ratio, and the growth's ratio beside it.
    private func peakVerdict(_ results: [Int: Result]) -> [String] {
        guard let rows = rowCounts.max(), let result = results[rows], let raw = result.peakKB["raw"],
              let library = result.peakKB["library"], let rawGrowth = result.growthKB["raw"],
              let libraryGrowth = result.growthKB["library"] else { return [] }
        let ratio = Double(library) / Double(raw)
        return [
            "",
            String(format: "fetch all of %d rows, peak resident memory (the child's VmHWM): raw %.1f MiB "
                   + "(an array of plain objects), library %.1f MiB: %.2f (target <= %.2f) %@; "
                   + "growth while fetching %.1f vs %.1f MiB: %.2f",
                   rows, Double(raw) / 1024, Double(library) / 1024, ratio, Self.peakTarget,
                   ratio <= Self.peakTarget ? "ok" : "MISSED", Double(rawGrowth) / 1024, Double(libraryGrowth) / 1024,
                   Double(libraryGrowth) / Double(rawGrowth)),
        ]
    }
}
