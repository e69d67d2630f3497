import Foundation

/// The measurements and their table: per workload, instructions per unit on each side (with its
/// ratio to raw libpq), wall-clock medians (the same), and the verdict that the library costs less
/// than PostgresNIO and than Fluent.
struct Report {
    let shape: Shape
    let rounds: Int
    let serverVersion: String
    var instructions: [Workload: [String: Double]] = [:]
    var countedOps: [Workload: [String: Int]] = [:]
    var wall: [Workload: [String: Double]] = [:]

    private static let peers = [NIOSide.name, FluentSide.name]

    /// Where the library is not ahead of a peer: (workload, "measure: peer"). The verdict gates on
    /// instructions, which repeat from run to run; on wall-clock only when nothing was counted
    /// (`--no-count`): seconds on a shared machine move by tens of percent between rounds, so a
    /// wall-clock median behind a peer is shown in the row but does not fail the run by itself.
    func behind(_ workloads: [Workload]) -> [(Workload, String)] {
        behind(workloads, on: instructions.isEmpty ? "wall" : "instructions")
    }

    private func behind(_ workloads: [Workload], on measure: String) -> [(Workload, String)] {
        workloads.flatMap { workload -> [(Workload, String)] in
            guard let values = measure == "wall" ? wall[workload] : instructions[workload],
                  let library = values[LibrarySide.name] else { return [] }
            return Self.peers.compactMap { peer in
                guard let other = values[peer] else { return nil }
                return library < other ? nil : (workload, "\(measure): \(peer)")
            }
        }
    }

    private func cell(_ values: [String: Double]?, _ side: String, format: String) -> String {
        guard let value = values?[side] else { return "-" }
        guard side != LibPQSide.name, let raw = values?[LibPQSide.name] else { return String(format: format, value) }
        return String(format: format, value) + String(format: " (%.2f)", value / raw)
    }

    private func verdict(_ workload: Workload) -> String {
        let missed = behind([workload])
        let wallMissed = instructions.isEmpty ? [] : behind([workload], on: "wall")
        let note = wallMissed.isEmpty ? "" : " (" + wallMissed.map(\.1).joined(separator: ", ") + " behind)"
        guard missed.isEmpty else { return "BEHIND " + missed.map(\.1).joined(separator: ", ") + note }
        let leads = [instructions[workload], wall[workload]].compactMap { values -> String? in
            guard let values, let library = values[LibrarySide.name], let nio = values[NIOSide.name],
                  let fluent = values[FluentSide.name] else { return nil }
            return String(format: "%.1f×/%.0f×", nio / library, fluent / library)
        }
        return "ok: NIO/Fluent cost " + leads.joined(separator: ", wall ") + note
    }

    var header: [String] {
        [
            "Peers on PostgreSQL \(serverVersion) (one local server, Unix socket): \(shape.rows) rows in \(shape.groups) groups; "
                + "instructions per unit = client process, all threads, (callgrind total with the operations - without) / units; "
                + "wall = median of \(rounds) rounds, µs per unit; (x.xx) = ratio to raw libpq (binary, prepared once).",
            "Units: a row for inserts, fetch all, update and delete; a query for the age query and find; a group for the walks. "
                + "Verdict: the library must cost fewer instructions than PostgresNIO and than Fluent on every row (the run "
                + "exits non-zero otherwise); shown as NIO/library and Fluent/library, in instructions, then in wall-clock "
                + "(a wall median behind a peer is flagged, not gating: seconds here move by tens of percent).",
        ]
    }

    /// The operations each counted run did, per workload (`libpq/library/nio/fluent`).
    private func counts(_ workloads: [Workload]) -> String {
        let sides = [LibPQSide.name, LibrarySide.name, NIOSide.name, FluentSide.name]
        let entries = workloads.compactMap { workload -> String? in
            guard let ops = countedOps[workload] else { return nil }
            let numbers = sides.map { ops[$0].map(String.init) ?? "-" }
            return "\(workload.rawValue) " + (Set(numbers).count == 1 ? numbers[0] : numbers.joined(separator: "/"))
        }
        return entries.isEmpty ? "" : "Operations per counted run (libpq/library/NIO/Fluent when they differ): " + entries.joined(separator: ", ") + "."
    }

    private static let columns = [
        "workload", "libpq instr", "library", "PostgresNIO", "Fluent", "libpq µs", "library µs", "NIO µs", "Fluent µs", "verdict",
    ]

    private func row(_ workload: Workload) -> [String] {
        let counted = instructions[workload], timed = wall[workload]
        return [
            workload.title,
            cell(counted, LibPQSide.name, format: "%.0f"), cell(counted, LibrarySide.name, format: "%.0f"),
            cell(counted, NIOSide.name, format: "%.0f"), cell(counted, FluentSide.name, format: "%.0f"),
            cell(timed, LibPQSide.name, format: "%.2f"), cell(timed, LibrarySide.name, format: "%.2f"),
            cell(timed, NIOSide.name, format: "%.2f"), cell(timed, FluentSide.name, format: "%.2f"),
            verdict(workload),
        ]
    }

    /// The table as plain text.
    func lines(_ workloads: [Workload]) -> [String] {
        let rows = [Self.columns] + workloads.map(row)
        let widths = Self.columns.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        let table = rows.map { row in
            row.enumerated().map { column, text in
                column == 0 || column == row.count - 1
                    ? text.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - text.count) + text
            }.joined(separator: "  ")
        }
        let missed = behind(workloads)
        return header + [counts(workloads)].filter { !$0.isEmpty } + table + [missed.isEmpty
            ? "the library is ahead of PostgresNIO and Fluent on all \(workloads.count) rows (\(instructions.isEmpty ? "wall-clock" : "instructions"))"
            : "the library is BEHIND on \(missed.count) measure(s): " + missed.map { "\($0.0.title) \($0.1)" }.joined(separator: "; ")]
    }

    /// The table as Markdown (Benchmarks/peers-results.md).
    func markdown(_ workloads: [Workload]) -> [String] {
        let rows = workloads.map(row)
        let missed = behind(workloads)
        let behindList: String = missed.map { "\($0.0.title) (\($0.1))" }.joined(separator: "; ")
        let measure = instructions.isEmpty ? "wall-clock" : "instructions"
        let wallNote = instructions.isEmpty || wall.isEmpty ? ""
            : behind(workloads, on: "wall").isEmpty ? " It is ahead in every wall-clock median too."
            : " Not every wall-clock median: see the flags in the verdicts."
        let conclusion: String = missed.isEmpty
            ? "The library is ahead of PostgresNIO and Fluent on all \(workloads.count) rows in \(measure)." + wallNote
            : "The library is BEHIND on: " + behindList
        return ["# Peers on PostgreSQL (issue 35)", "", "Written by `make bench-peers` (Benchmarks/Peers).", ""]
            + (header + [counts(workloads)]).filter { !$0.isEmpty }.flatMap { [$0, ""] }
            + ["| " + Self.columns.joined(separator: " | ") + " |",
               "|" + Self.columns.indices.map { $0 == 0 || $0 == Self.columns.count - 1 ? " --- |" : " ---: |" }.joined()]
            + rows.map { "| " + $0.joined(separator: " | ") + " |" }
            + ["", conclusion]
    }
}
