import ActiveRecord
import Foundation

/// How the memory benchmark reads every row of a `QueryTable`, in id order.
enum MemoryMode: String, CaseIterable {
    /// The library's `cursor()`, one record alive at a time.
    case cursor
    /// The library's `fetch()`: the whole array of records.
    case fetch
    /// Raw sqlite3 stepping, each row read into a `RawQueryUser` and dropped.
    case raw
}

/// The process's resident memory, from `/proc/self/status` (Linux only).
enum ResidentMemory {
    /// A field of `/proc/self/status` in kB: `VmRSS` (now) or `VmHWM` (peak).
    static func kilobytes(_ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            let words = line.dropFirst(field.count + 1).split(whereSeparator: \.isWhitespace)
            if words.count == 2, words[1] == "kB", let value = Int(words[0]) { return value }
        }
        throw Check.Failure(description: "/proc/self/status has no \(field) in kB")
    }

    /// Resets `VmHWM` to the current `VmRSS` (writing 5 to `/proc/self/clear_refs`,
    /// Linux 4.0 and later); `false` when the kernel refuses, the peak then
    /// counting from the start of the process.
    static func resetPeak() -> Bool {
        guard let file = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? file.close() }
        return (try? file.write(contentsOf: Data("5".utf8))) != nil
    }
}

/// The child process: `ARBench memory <cursor|fetch|raw> <rows> <database>`,
/// on a database that holds a filled `QueryTable` of `rows` rows. Opens it,
/// runs one small query (so the model, connection and statement cache exist),
/// takes the baseline (VmRSS, the peak reset to it), reads every row in the
/// mode's way, touching each name, then prints one line of `key=value` fields.
enum MemoryChild {
    static let usage = "usage: ARBench memory <cursor|fetch|raw> <rows> <database file holding the rows>"

    /// Runs the child; the process's exit status.
    static func main(_ arguments: ArraySlice<String>) -> Int32 {
        let arguments = Array(arguments)
        guard arguments.count == 3, let mode = MemoryMode(rawValue: arguments[0]), let rows = Int(arguments[1]) else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 1
        }
        do {
            let (baseline, reset, records, nameBytes) = try iterate(mode, path: arguments[2])
            let peak = try ResidentMemory.kilobytes("VmHWM")
            try Check.count(records, rows, "memory \(mode): records read")
            print(
                "mode=\(mode) rows=\(rows) records=\(records) nameBytes=\(nameBytes) baselineKB=\(baseline) "
                    + "peakKB=\(peak) growthKB=\(peak - baseline) peakReset=\(reset ? "yes" : "no")")
            return 0
        } catch {
            FileHandle.standardError.write(Data("memory \(mode) FAILED: \(error)\n".utf8))
            return 1
        }
    }

    /// Reads every row; the baseline RSS (kB), whether the peak was reset to it, records and name bytes read.
    private static func iterate(_ mode: MemoryMode, path: String) throws -> (Int, Bool, Int, Int) {
        var records = 0, nameBytes = 0
        func baseline() throws -> (Int, Bool) {
            let reset = ResidentMemory.resetPeak()
            return (try ResidentMemory.kilobytes("VmRSS"), reset)
        }
        switch mode {
        case .raw:
            let database = try RawDatabase(path: path)
            let statement = try database.prepare(#"SELECT \#(QueryTable.rawSelectList) FROM "QueryUser" ORDER BY "id""#)
            let (rss, reset) = try baseline()
            while try statement.step() {
                let user = RawQueryUser(statement)
                records += 1
                nameBytes += user.name.utf8.count
            }
            return (rss, reset, records, nameBytes)
        case .cursor, .fetch:
            let database = try Database(.file(path))
            return try database.use {
                try Check.count(try QueryUser.query().where("id", .equal(1)).fetch().count, 1, "memory \(mode): row 1")
                let (rss, reset) = try baseline()
                if mode == .cursor {
                    let cursor = try QueryUser.query().order(by: "id").cursor()
                    while let user = try cursor.next() {
                        records += 1
                        nameBytes += user.name.utf8.count
                    }
                } else {
                    for user in try QueryUser.query().order(by: "id").fetch() {
                        records += 1
                        nameBytes += user.name.utf8.count
                    }
                }
                return (rss, reset, records, nameBytes)
            }
        }
    }
}

/// The memory section of the output: for each row count, fills a
/// `QueryTable` (in this process), then measures each mode in a child process
/// of this executable, so that every peak starts from a fresh heap.
struct MemorySection {
    /// The row counts, largest first; every mode runs on each.
    let rowCounts: [Int]

    /// One child's result.
    private struct Result {
        let growthKB: Int
        let peakReset: Bool
        var megabytes: String { String(format: "%.2f MiB", Double(growthKB) / 1024) }
    }

    /// Runs every child; returns the lines to print.
    func run(progress: (String) -> Void) throws -> [String] {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var results: [Int: [MemoryMode: Result]] = [:]
        for rows in rowCounts {
            let table = try QueryTable.fill(rowCount: rows, path: directory.path + "/memory-\(rows).sqlite")
            let nameBytes = (1...rows).reduce(0) { $0 + "user\($1)".utf8.count }
            for mode in MemoryMode.allCases {
                let fields = try childFields(executable, ["memory", mode.rawValue, String(rows), table.path])
                try Check.require(
                    fields["records"] == String(rows) && fields["nameBytes"] == String(nameBytes),
                    "memory \(mode) \(rows): read \(fields), expected \(rows) records and \(nameBytes) name bytes")
                guard let growth = fields["growthKB"].flatMap({ Int($0) }) else {
                    throw Check.Failure(description: "memory \(mode) \(rows): no growthKB in \(fields)")
                }
                results[rows, default: [:]][mode] = Result(growthKB: growth, peakReset: fields["peakReset"] == "yes")
                progress("memory \(mode) \(rows) rows: growth \(growth) kB (baseline \(fields["baselineKB"] ?? "?") kB, "
                    + "peak \(fields["peakKB"] ?? "?") kB)")
            }
        }
        let heading = pad("rows", 8) + MemoryMode.allCases.map { pad($0 == .fetch ? "fetch()" : $0.rawValue, 13) }.joined()
        var lines = [
            "Cursor memory: peak resident growth while reading every row in id order, one child process each "
                + "(VmHWM after, minus VmRSS before, the table already filled and the connection open)",
            heading, String(repeating: "-", count: heading.count),
        ]
        for rows in rowCounts {
            guard let byMode = results[rows] else { continue }
            lines.append(pad(String(rows), 8) + MemoryMode.allCases.map { pad(byMode[$0]?.megabytes ?? "-", 13) }.joined())
        }
        if results.values.flatMap(\.values).contains(where: { !$0.peakReset }) {
            lines.append("(the kernel refused to reset VmHWM: peaks count from each child's start)")
        }
        return lines + verdict(results)
    }

    /// Whether the cursor's growth is bounded: at the largest row count at most
    /// 1 MiB above raw stepping's, and at most 1 MiB above its own at the smallest.
    private func verdict(_ results: [Int: [MemoryMode: Result]]) -> [String] {
        guard let largest = rowCounts.first, let smallest = rowCounts.last,
              let cursor = results[largest]?[.cursor]?.growthKB, let fetch = results[largest]?[.fetch]?.growthKB,
              let raw = results[largest]?[.raw]?.growthKB, let small = results[smallest]?[.cursor]?.growthKB
        else { return [] }
        let bounded = cursor - raw <= 1024 && cursor - small <= 1024
        return [
            "",
            String(
                format: "cursor at %d rows: %.1f%% of fetch()'s growth, %+.2f MiB over raw's, %+.2f MiB over its own at %d rows: ",
                largest, 100 * Double(cursor) / Double(max(fetch, 1)), Double(cursor - raw) / 1024,
                Double(cursor - small) / 1024, smallest) + (bounded ? "bounded" : "NOT BOUNDED"),
        ]
    }
}

/// Runs `executable <arguments>` (a child mode of ARBench: `memory …`, `scaling …`) and
/// returns the `key=value` fields of its output; throws when it fails.
func childFields(_ executable: String, _ arguments: [String]) throws -> [String: String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment[Check.startedAtVariable] = String(Check.startedAt)
    process.environment = environment
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else {
        throw Check.Failure(description: "ARBench \(arguments.joined(separator: " ")) exited "
            + "with status \(process.terminationStatus): \(text)")
    }
    var fields: [String: String] = [:]
    for token in text.split(whereSeparator: \.isWhitespace) {
        let parts = token.split(separator: "=", maxSplits: 1)
        if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
    }
    return fields
}
