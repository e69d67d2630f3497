import Foundation

/// The results table: one line per workload, with the three sides' best
/// times, the ratios library/raw (the one the target applies to), GRDB/raw
/// and library/GRDB, the target and whether it was met.
struct Report {
    let measurements: [Measurement]

    /// The table as printed, heading first.
    var lines: [String] {
        let heading = row(["workload", "raw s", "library s", "GRDB s", "lib/raw", "GRDB/raw", "lib/GRDB", "target"], "result")
        let rule = String(repeating: "-", count: heading.count)
        return [heading, rule] + measurements.map { measurement in
            row(
                [
                    measurement.workload.title,
                    String(format: "%.4f", measurement.raw.seconds),
                    String(format: "%.4f", measurement.library.seconds),
                    String(format: "%.4f", measurement.grdb.seconds),
                    String(format: "%.2f", measurement.ratio),
                    String(format: "%.2f", measurement.grdbRatio),
                    String(format: "%.2f", measurement.libraryOverGRDB),
                    String(format: "<= %.1f", measurement.workload.target),
                ],
                measurement.metTarget ? "ok" : "MISSED")
        }
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

    /// The column widths after the workload's (which is left-aligned).
    private static let widths = [10, 11, 9, 9, 10, 10, 9]

    /// One line: the workload left-aligned, the numbers right-aligned, then the result.
    private func row(_ cells: [String], _ result: String) -> String {
        var line = pad(cells[0], 21, left: true)
        for (cell, width) in zip(cells.dropFirst(), Report.widths) { line += pad(cell, width) }
        return line + "  " + result
    }
}

/// `text` padded with spaces to `width`: right-aligned, or left-aligned when `left`.
func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, width - text.count))
    return left ? text + fill : fill + text
}
