import Foundation

/// The query section of the output: fills a `QueryTable` of `rowCount` rows
/// (untimed), runs the indexed-query and predicate benchmarks on it and
/// prints their table, then the predicate string's cost over field conditions.
struct QuerySection {
    let rowCount: Int
    /// How many indexed queries each side runs per round.
    let indexedQueryCount: Int
    /// How many predicate queries each side runs per round.
    let predicateQueryCount: Int
    let rounds: Int

    /// One line of the table: a library form against raw and GRDB.
    private struct Line {
        let title: String
        let queryCount: Int
        let raw: Duration
        let library: Duration
        let grdb: Duration
        let target: Double?

        var ratio: Double { library.seconds / raw.seconds }
        var metTarget: Bool { target.map { ratio <= $0 } ?? true }
    }

    /// Runs both benchmarks; returns the lines to print and how many targets were missed.
    func run(progress: (String) -> Void) throws -> (lines: [String], missed: Int) {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let table = try QueryTable.fill(rowCount: rowCount, path: directory.path + "/query.sqlite")
        let connections = try QueryConnections(table)
        let ages = 0..<QueryTable.ageCount

        let indexed = try QueryRunner(
            title: "indexed query", sides: try IndexedQuery.sides(connections),
            expectedIDs: ages.map { table.idsByName(age: $0, limit: IndexedQuery.limit) },
            queryCount: indexedQueryCount, rounds: rounds
        ).run(progress: progress)
        let predicate = try QueryRunner(
            title: "predicate query", sides: try PredicateQuery.sides(connections),
            expectedIDs: ages.map { Array(table.ids(age: $0).prefix(1)) },
            queryCount: predicateQueryCount, rounds: rounds
        ).run(progress: progress)

        func best(_ times: [String: Duration], _ side: String) throws -> Duration {
            guard let time = times[side] else { throw Check.Failure(description: "no time for \(side)") }
            return time
        }
        let lines = [
            Line(
                title: "indexed: age=? order by name limit 10", queryCount: indexedQueryCount,
                raw: try best(indexed, "raw"), library: try best(indexed, "library"), grdb: try best(indexed, "GRDB"),
                target: IndexedQuery.target),
            Line(
                title: "age=? and score>=? limit 1, string", queryCount: predicateQueryCount,
                raw: try best(predicate, "raw"), library: try best(predicate, "library string"),
                grdb: try best(predicate, "GRDB"), target: nil),
            Line(
                title: "age=? and score>=? limit 1, fields", queryCount: predicateQueryCount,
                raw: try best(predicate, "raw"), library: try best(predicate, "library fields"),
                grdb: try best(predicate, "GRDB"), target: nil),
        ]
        let string = lines[1].library.seconds, fields = lines[2].library.seconds
        let perQuery = (string - fields) / Double(predicateQueryCount) * 1e6
        return (
            [
                "Queries: \(rowCount) rows, index on age, ages 0...89 in turn; best of \(rounds) rounds per side "
                    + "(rotating order); library times include building each query; GRDB runs each loop in one read",
            ] + tableLines(lines) + [
                "",
                String(format: "predicate string over field conditions: %.2f (%+.2f µs per query)", string / fields, perQuery),
            ],
            lines.filter { !$0.metTarget }.count
        )
    }

    /// The column widths after the title's (which is left-aligned).
    private static let widths = [8, 9, 11, 9, 9, 10, 10, 9]

    /// The table, heading first.
    private func tableLines(_ lines: [Line]) -> [String] {
        let heading = row(["query", "count", "raw s", "library s", "GRDB s", "lib/raw", "GRDB/raw", "lib/GRDB", "target"], "result")
        return [heading, String(repeating: "-", count: heading.count)] + lines.map { line in
            row(
                [
                    line.title, String(line.queryCount),
                    String(format: "%.4f", line.raw.seconds), String(format: "%.4f", line.library.seconds),
                    String(format: "%.4f", line.grdb.seconds), String(format: "%.2f", line.ratio),
                    String(format: "%.2f", line.grdb.seconds / line.raw.seconds),
                    String(format: "%.2f", line.library.seconds / line.grdb.seconds),
                    line.target.map { String(format: "<= %.1f", $0) } ?? "-",
                ],
                line.target == nil ? "" : line.metTarget ? "ok" : "MISSED")
        }
    }

    /// One line: the title left-aligned, the numbers right-aligned, then the result.
    private func row(_ cells: [String], _ result: String) -> String {
        var text = pad(cells[0], 38, left: true)
        for (cell, width) in zip(cells.dropFirst(), QuerySection.widths) { text += pad(cell, width) }
        return result.isEmpty ? text : text + "  " + result
    }
}
