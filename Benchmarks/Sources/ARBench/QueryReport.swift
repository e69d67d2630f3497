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

        let lines = [
            try SectionLine(
                "indexed: age=? order by name limit 10", queryCount: indexedQueryCount, best: indexed,
                raw: "raw", library: "library", grdb: "GRDB", target: IndexedQuery.target),
            try SectionLine(
                "age=? and score>=? limit 1, string", queryCount: predicateQueryCount, best: predicate,
                raw: "raw", library: "library string", grdb: "GRDB", target: nil),
            try SectionLine(
                "age=? and score>=? limit 1, fields", queryCount: predicateQueryCount, best: predicate,
                raw: "raw", library: "library fields", grdb: "GRDB", target: nil),
        ]
        let string = lines[1].library.seconds, fields = lines[2].library.seconds
        let perQuery = (string - fields) / Double(predicateQueryCount) * 1e6
        return (
            [
                "Queries: \(rowCount) rows, index on age, ages 0...89 in turn; best of \(rounds) rounds per side "
                    + "(rotating order); library times include building each query; GRDB runs each loop in one read",
            ] + SectionLine.table(lines, title: "query", count: "count", layout: QuerySection.layout) + [
                "",
                String(format: "predicate string over field conditions: %.2f (%+.2f µs per query)", string / fields, perQuery),
            ],
            lines.filter { !$0.metTarget }.count
        )
    }

    /// The query's column (left-aligned), then the others'.
    private static let layout = TableLayout(titleWidth: 38, widths: [8, 9, 11, 9, 9, 10, 10, 9])
}
