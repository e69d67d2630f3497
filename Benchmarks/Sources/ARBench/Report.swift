import Foundation

/// The results table: one line per workload, with the three sides' best
/// times, the ratios library/raw (the one the target applies to), GRDB/raw
/// and library/GRDB, the target and whether it was met.
struct Report {
    let measurements: [Measurement]

    /// The table as printed, heading first.
    var lines: [String] {
        Report.layout.lines(
            heading: ["workload"] + timeHeadings + ["target"],
            rows: measurements.map { measurement in
                (
                    [measurement.workload.title] + measurement.timeCells
                        + [String(format: "<= %.2f", measurement.workload.target)],
                    measurement.metTarget ? "ok" : "MISSED"
                )
            })
    }

    /// How many workloads missed their target.
    var missedCount: Int { measurements.filter { !$0.metTarget }.count }

    /// How many workloads the library ran faster than GRDB.
    var fasterThanGRDBCount: Int { measurements.filter { $0.libraryOverGRDB < 1 }.count }

    /// The closing lines: targets met or missed, then the comparison with GRDB.
    var summary: [String] {
        let total = measurements.count
        return [
            missedCount == 0
                ? "all \(total) workloads within target (lib/raw)"
                : "\(missedCount) of \(total) workloads MISSED their target (lib/raw)",
            "library faster than GRDB on \(fasterThanGRDBCount) of \(total) workloads (lib/GRDB < 1.00)",
        ]
    }

    /// The workload's column (left-aligned), then the others'.
    private static let layout = TableLayout(titleWidth: 21, widths: [10, 11, 9, 9, 10, 10, 9])
}

/// The headings of the columns ``SideTimes/timeCells`` fill.
let timeHeadings = ["raw s", "library s", "GRDB s", "lib/raw", "GRDB/raw", "lib/GRDB"]

/// The three sides' best times on one line of a results table, and the
/// ratios printed beside them.
protocol SideTimes {
    var raw: Duration { get }
    var library: Duration { get }
    var grdb: Duration { get }
}

extension SideTimes {
    /// Library time over raw time: the ratio targets apply to.
    var ratio: Double { library.seconds / raw.seconds }
    /// GRDB time over raw time.
    var grdbRatio: Double { grdb.seconds / raw.seconds }
    /// Library time over GRDB time: below 1 when the library is faster.
    var libraryOverGRDB: Double { library.seconds / grdb.seconds }

    /// The cells under ``timeHeadings``: the times, then the ratios.
    var timeCells: [String] {
        [
            String(format: "%.4f", raw.seconds), String(format: "%.4f", library.seconds),
            String(format: "%.4f", grdb.seconds), String(format: "%.2f", ratio),
            String(format: "%.2f", grdbRatio), String(format: "%.2f", libraryOverGRDB),
        ]
    }
}

/// One line of the query or relation table: a library form's best time
/// against raw's and GRDB's, how many queries one run of it makes, and its
/// target, the largest acceptable library/raw ratio (`nil`: reported only).
struct SectionLine: SideTimes {
    let title: String
    let queryCount: Int
    let raw: Duration
    let library: Duration
    let grdb: Duration
    let target: Double?

    /// Whether the ratio is within the target (always, without one).
    var metTarget: Bool { target.map { ratio <= $0 } ?? true }

    /// The line of the sides keyed `raw`, `library` and `grdb` in `best`
    /// (best times by side key); a missing time throws, the message starting
    /// with `context`.
    init(
        _ title: String, queryCount: Int, best: [String: Duration], raw: String, library: String, grdb: String,
        target: Double?, context: String = ""
    ) throws {
        func time(_ key: String) throws -> Duration {
            guard let time = best[key] else { throw Check.Failure(description: "\(context)no time for \(key)") }
            return time
        }
        self.title = title
        self.queryCount = queryCount
        self.raw = try time(raw)
        self.library = try time(library)
        self.grdb = try time(grdb)
        self.target = target
    }

    /// The table of `lines`, heading first; `title` and `count` head the
    /// first two columns.
    static func table(_ lines: [SectionLine], title: String, count: String, layout: TableLayout) -> [String] {
        layout.lines(
            heading: [title, count] + timeHeadings + ["target"],
            rows: lines.map { line in
                (
                    [line.title, String(line.queryCount)] + line.timeCells
                        + [line.target.map { String(format: "<= %.1f", $0) } ?? "-"],
                    line.target == nil ? "" : line.metTarget ? "ok" : "MISSED"
                )
            })
    }
}

/// A results table's column widths: the first column left-aligned, the
/// others right-aligned, then the result (when there is one) after two spaces.
struct TableLayout {
    /// The first column's width.
    let titleWidth: Int
    /// The widths of the columns after the first.
    let widths: [Int]

    /// The heading, a rule as wide as it, then the rows.
    func lines(heading: [String], rows: [(cells: [String], result: String)]) -> [String] {
        let headingLine = row(heading, "result")
        return [headingLine, String(repeating: "-", count: headingLine.count)] + rows.map { row($0.cells, $0.result) }
    }

    /// One line of `cells`, then `result` unless it is empty.
    func row(_ cells: [String], _ result: String) -> String {
        var text = pad(cells[0], titleWidth, left: true)
        for (cell, width) in zip(cells.dropFirst(), widths) { text += pad(cell, width) }
        return result.isEmpty ? text : text + "  " + result
    }
}

/// `text` padded with spaces to `width`: right-aligned, or left-aligned when `left`.
func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, width - text.count))
    return left ? text + fill : fill + text
}
