import Foundation

/// The results table: one line per workload, with both sides' best times,
/// their ratio, the target and whether it was met.
struct Report {
    let measurements: [Measurement]

    /// The table as printed, heading first.
    var lines: [String] {
        let heading = row("workload", "raw s", "library s", "ratio", "target", "result")
        let rule = String(repeating: "-", count: heading.count)
        return [heading, rule] + measurements.map { measurement in
            row(
                measurement.workload.title,
                String(format: "%.4f", measurement.raw.seconds),
                String(format: "%.4f", measurement.library.seconds),
                String(format: "%.2f", measurement.ratio),
                String(format: "<= %.1f", measurement.workload.target),
                measurement.metTarget ? "ok" : "MISSED")
        }
    }

    /// How many workloads missed their target.
    var missedCount: Int { measurements.filter { !$0.metTarget }.count }

    /// One line: the workload left-aligned, the numbers right-aligned.
    private func row(_ workload: String, _ raw: String, _ library: String, _ ratio: String, _ target: String, _ result: String) -> String {
        pad(workload, 21, left: true) + pad(raw, 10) + pad(library, 11) + pad(ratio, 8) + pad(target, 9) + "  " + result
    }

    private func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - text.count))
        return left ? text + fill : fill + text
    }
}
