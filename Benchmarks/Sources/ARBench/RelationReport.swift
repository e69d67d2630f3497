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
        /// - Parameter warmUp: a run before the rounds (not counted under `make bench-instructions`).
        func checkedRun(_ side: RelationSide, warmUp: Bool = false) throws -> Duration {
            let context = "relations: \(side.name) \(side.walk.rawValue)"
            let (elapsed, (digest, selects)) = try measure(side: warmUp ? nil : "\(side.name) \(side.walk.rawValue)", side.run)
            try table.check(digest, expected: expected, selects: selects, walk: side.walk, context)
            return elapsed
        }
        for side in sides { _ = try checkedRun(side, warmUp: true) }  // untimed: warms every cache, checks every side

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
        let lines = try RelationWalk.allCases.map { walk in
            try SectionLine(
                walk == .lazy ? "lazy: group.members.fetch()" : "eager: includes(\\.members)",
                queryCount: walk == .eager ? table.eagerQueryCount : 1 + table.groupCount, best: best,
                raw: "raw \(walk.rawValue)", library: "library \(walk.rawValue)", grdb: "GRDB \(walk.rawValue)",
                target: RelationSection.target(walk), context: "relations: ")
        }
        func speedup(_ keyPath: KeyPath<SectionLine, Duration>) -> String {
            String(format: "%.2f", lines[0][keyPath: keyPath].seconds / lines[1][keyPath: keyPath].seconds)
        }
        return (
            [
                "Relations: \(groupCount) groups x \(membersPerGroup) members (\(table.memberCount) members, "
                    + "group g's are ids g, g + \(groupCount), ...), every member read (id, name, age) and checked; "
                    + "best of \(rounds) rounds per side (rotating order); every run's SELECTs counted and checked "
                    + "(library and GRDB through their tracers)",
            ] + SectionLine.table(lines, title: "walk", count: "queries", layout: RelationSection.layout) + [
                "",
                "eager speedup over lazy (lazy s / eager s, below 1.00: eager slower): raw \(speedup(\.raw)), "
                    + "library \(speedup(\.library)), GRDB \(speedup(\.grdb))",
            ],
            lines.filter { !$0.metTarget }.count
        )
    }

    /// The walk's column (left-aligned), then the others'.
    private static let layout = TableLayout(titleWidth: 28, widths: [9, 10, 11, 9, 9, 10, 10, 9])
}
