import Foundation

/// The relation section of the output: fills a ``RelationTable`` (untimed),
/// runs every ``RelationSide`` once untimed, then for several rounds
/// (rotating which side goes first, as ``Harness`` does), checking every run's
/// digest and SELECT count, and prints each walk's best times; target:
/// library eager ≤ 2.0 × raw eager.
struct RelationSection {
    let groupCount: Int
    let membersPerGroup: Int
    let rounds: Int

    /// Members per group in a default run (N / 100 groups of them, for N rows).
    static let membersPerGroup = 100

    /// The largest acceptable library/raw ratio, by walk (`nil`: reported only).
    static func target(_ walk: RelationWalk) -> Double? {
        walk == .eager ? 2.0 : nil
    }

    /// The best times of one walk's three sides.
    private struct Line {
        let walk: RelationWalk
        let queries: Int
        let raw: Duration
        let library: Duration
        let grdb: Duration

        var ratio: Double { library.seconds / raw.seconds }
        var target: Double? { RelationSection.target(walk) }
        var metTarget: Bool { target.map { ratio <= $0 } ?? true }
    }

    /// Runs the benchmark; returns the lines to print and how many targets were missed.
    func run(progress: (String) -> Void) throws -> (lines: [String], missed: Int) {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (fillTime, table) = try measure {
            try RelationTable.fill(
                groupCount: groupCount, membersPerGroup: membersPerGroup, path: directory.path + "/relations.sqlite")
        }
        progress(String(format: "relations: filled %d groups and %d members in %.2fs", groupCount, table.memberCount,
                        fillTime.seconds))
        let sides = try RelationConnections(table).sides
        let expected = table.expectedDigest
        /// Runs `side` once and checks what it read and how many SELECTs it ran.
        func checkedRun(_ side: RelationSide) throws -> Duration {
            let context = "relations: \(side.name) \(side.walk.rawValue)"
            let (elapsed, (digest, selects)) = try measure(side.run)
            try Check.count(digest.groups.rowCount, table.groupCount, "\(context): groups read")
            try Check.count(digest.members.rowCount, table.memberCount, "\(context): members read")
            try Check.count(digest.ageSum, expected.ageSum, "\(context): sum of the members' ages")
            try Check.require(
                digest == expected,
                "\(context): read groups \(digest.groups.hash), members \(digest.members.hash), expected "
                    + "\(expected.groups.hash), \(expected.members.hash) (a record out of order or in the wrong group)")
            let expectedSelects = side.walk == .eager ? table.eagerQueryCount : 1 + table.groupCount
            try Check.count(selects, expectedSelects, "\(context): SELECT statements run")
            return elapsed
        }
        for side in sides { _ = try checkedRun(side) }  // untimed: warms every cache, checks every side

        var best: [String: Duration] = [:]
        for round in 1...rounds {
            let shift = (round - 1) % sides.count
            var line = "relations round \(round):"
            for side in sides[shift...] + sides[..<shift] {
                let elapsed = try checkedRun(side)
                let key = "\(side.name) \(side.walk.rawValue)"
                best[key] = min(best[key] ?? elapsed, elapsed)
                line += " \(key) \(String(format: "%.4f", elapsed.seconds))s"
            }
            progress(line)
        }
        func time(_ side: String, _ walk: RelationWalk) throws -> Duration {
            guard let time = best["\(side) \(walk.rawValue)"] else {
                throw Check.Failure(description: "relations: no time for \(side) \(walk.rawValue)")
            }
            return time
        }
        let lines = try RelationWalk.allCases.map { walk in
            Line(
                walk: walk, queries: walk == .eager ? table.eagerQueryCount : 1 + table.groupCount,
                raw: try time("raw", walk), library: try time("library", walk), grdb: try time("GRDB", walk))
        }
        func speedup(_ keyPath: KeyPath<Line, Duration>) -> String {
            String(format: "%.2f", lines[0][keyPath: keyPath].seconds / lines[1][keyPath: keyPath].seconds)
        }
        return (
            [
                "Relations: \(groupCount) groups x \(membersPerGroup) members (\(table.memberCount) members, "
                    + "group g's are ids g, g + \(groupCount), ...), every member read (id, name, age) and checked; "
                    + "best of \(rounds) rounds per side (rotating order); every run's SELECTs counted and checked "
                    + "(library and GRDB through their tracers)",
            ] + tableLines(lines) + [
                "",
                "eager speedup over lazy (lazy s / eager s, below 1.00: eager slower): raw \(speedup(\.raw)), "
                    + "library \(speedup(\.library)), GRDB \(speedup(\.grdb))",
            ],
            lines.filter { !$0.metTarget }.count
        )
    }

    /// The column widths after the walk's (which is left-aligned).
    private static let widths = [9, 10, 11, 9, 9, 10, 10, 9]

    /// The table, heading first.
    private func tableLines(_ lines: [Line]) -> [String] {
        let heading = row(["walk", "queries", "raw s", "library s", "GRDB s", "lib/raw", "GRDB/raw", "lib/GRDB", "target"], "result")
        return [heading, String(repeating: "-", count: heading.count)] + lines.map { line in
            row(
                [
                    line.walk == .lazy ? "lazy: group.members.fetch()" : "eager: includes(\\.members)",
                    String(line.queries),
                    String(format: "%.4f", line.raw.seconds), String(format: "%.4f", line.library.seconds),
                    String(format: "%.4f", line.grdb.seconds), String(format: "%.2f", line.ratio),
                    String(format: "%.2f", line.grdb.seconds / line.raw.seconds),
                    String(format: "%.2f", line.library.seconds / line.grdb.seconds),
                    line.target.map { String(format: "<= %.1f", $0) } ?? "-",
                ],
                line.target == nil ? "" : line.metTarget ? "ok" : "MISSED")
        }
    }

    /// One line: the walk left-aligned, the numbers right-aligned, then the result.
    private func row(_ cells: [String], _ result: String) -> String {
        var text = pad(cells[0], 28, left: true)
        for (cell, width) in zip(cells.dropFirst(), RelationSection.widths) { text += pad(cell, width) }
        return result.isEmpty ? text : text + "  " + result
    }
}
