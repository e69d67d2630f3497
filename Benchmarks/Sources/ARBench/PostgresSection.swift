import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation

/// The PostgreSQL section: the same CRUD workloads through the library on PostgreSQL and
/// through raw libpq (prepared statements, the same rows, every result checked), on one
/// local server, each round in a fresh schema; then the ``PostgresRow``s (inserts each in
/// its own transaction, the age query, the lazy and eager relation walks). Median seconds per
/// side, against issue 35's targets (which `make bench-instructions` checks in instructions:
/// here the round trips dominate). The SQLite section's library times are shown beside, per
/// row, for context. The raw side is the best hand-written libpq code: statements prepared
/// once, binary parameters and binary results (``RawPostgresUserStore``,
/// ``RawPostgresQueryStore``, ``RawPostgresRelationStore``).
///
/// It runs when `AR_BENCH_POSTGRES` (or `AR_TEST_POSTGRES`) holds a libpq `key=value`
/// connection string; `make bench` starts a throwaway server for it (scripts/with-postgres.sh).
struct PostgresSection {
    /// A CRUD workload's target, library/raw libpq: 1.1 on find and delete by id, 1.2 elsewhere.
    static func target(_ workload: Workload) -> Double { workload == .find || workload == .deleteByID ? 1.1 : 1.2 }
    /// The target of the rows beyond the CRUD workloads.
    static let rowTarget = 1.2
    /// Rounds per side and workload: a shared server's round trips vary, more than SQLite's calls.
    static let rounds = 5
    /// Fetching the whole table takes milliseconds: each round fetches it this many times
    /// (on both sides) and keeps the best.
    static let fetchRepeats = 5

    let connection: String
    let rows: [RowValues]
    let rounds: Int
    /// The SQLite section's measurements and row count, for the per-row comparison.
    let sqlite: [Measurement]
    let sqliteRowCount: Int
    /// The workloads to run (`ARBench postgres N --only W`: one, and no ``extraRows``).
    var workloads = Workload.allCases
    /// The rows beyond the CRUD workloads to run, after them.
    var extraRows = PostgresRow.allCases

    /// pgbouncer in transaction pooling mode in front of the same database, when one is given
    /// (`AR_BENCH_PGBOUNCER`; `make bench-pgbouncer`): a library side runs through it too. pgbouncer
    /// passes no `search_path`, so that side's schema is named after the connection's user
    /// (PostgreSQL's default `search_path` begins with `"$user"`).
    static var bouncerConnection: String? {
        ProcessInfo.processInfo.environment["AR_BENCH_PGBOUNCER"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The user a `key=value` connection string names.
    static func user(of connection: String) -> String? {
        connection.split(separator: " ").first { $0.hasPrefix("user=") }.map { String($0.dropFirst(5)) }
    }

    /// The server's connection string, when one is given.
    static var configuredConnection: String? {
        let environment = ProcessInfo.processInfo.environment
        return [environment["AR_BENCH_POSTGRES"], environment["AR_TEST_POSTGRES"]].compactMap { $0 }.first { !$0.isEmpty }
    }

    func schemaConnection(_ schema: String) -> String { connection + " options='-csearch_path=\(schema)'" }

    /// Runs every workload and returns the section's table.
    func run(progress: (String) -> Void) throws -> [String] {
        let admin = try RawPostgres(connection)
        try admin.execute("SET client_min_messages = warning")  // no NOTICE per dropped table
        let settings = try ["server_version", "fsync", "synchronous_commit"].map { "\($0) \(try admin.text("SHOW \($0)"))" }
        let header = "PostgreSQL section: one local server (Unix socket), \(settings.joined(separator: ", ")); "
            + "\(rows.count) rows, median of \(rounds) rounds per side (fetch all: best of \(Self.fetchRepeats) per round); "
            + "raw libpq: prepared once, binary parameters and results"
        var library = LibrarySide(rows: rows)
        library.location = { [connection] schema in .postgres(connection + " options='-csearch_path=\(schema)'") }
        library.fetchRepeats = Self.fetchRepeats
        var raw = RawPostgresSide(rows: rows, connection: schemaConnection)
        raw.fetchRepeats = Self.fetchRepeats
        // The library as behind a transaction pooler, on the same server, straight (`pooled`),
        // and through pgbouncer when one is given (`pgbouncer`).
        var pooled = library
        pooled.name = "pooled"
        pooled.location = { [connection] schema in
            .postgres(connection + " options='-csearch_path=\(schema)'", transactionPooling: true)
        }
        var sides: [any BenchSide] = [raw, library, pooled]
        var bouncerSchema: String?
        if let bouncer = Self.bouncerConnection {
            var throughBouncer = library
            throughBouncer.name = "pgbouncer"
            throughBouncer.location = { _ in .postgres(bouncer, transactionPooling: true) }
            sides.append(throughBouncer)
            bouncerSchema = Self.user(of: bouncer) ?? "postgres"
        }
        var lines: [Line] = []
        var poolingLines: [(workload: Workload, library: Duration, pooled: Duration, bouncer: Duration?)] = []
        var schemaNumber = 0
        for workload in workloads {
            var times: [String: [Duration]] = [:]
            for round in 1...rounds {
                let shift = (round - 1) % sides.count
                var line = "PostgreSQL \(workload.title) round \(round):"
                for side in Array(sides[shift...] + sides[..<shift]) {
                    schemaNumber += 1
                    let schema = side.name == "pgbouncer" ? bouncerSchema ?? "" : "arbench_\(getpid())_\(schemaNumber)"
                    try admin.execute("CREATE SCHEMA \(schema)")
                    defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
                    let elapsed = try side.run(workload, path: schema)
                    try checkTable(admin, schema: schema, after: workload, side: side.name)
                    times[side.name, default: []].append(elapsed)
                    line += " \(side.name) \(String(format: "%.4f", elapsed.seconds))s"
                }
                progress(line)
            }
            let line = try Line(
                title: workload.title, times: times, target: Self.target(workload), operations: rows.count,
                sqlite: sqlite.first { $0.workload == workload }.map { $0.library.seconds * 1e6 / Double(sqliteRowCount) })
            lines.append(line)
            poolingLines.append((workload, line.library, times["pooled"].map(median) ?? .zero, times["pgbouncer"].map(median)))
        }
        for row in extraRows {
            let times = try run(row, admin: admin, progress: progress)
            lines.append(try Line(
                title: row.title, times: times, target: Self.rowTarget, operations: row.operations(rowCount: rows.count),
                sqlite: nil, operation: row.operation))
        }
        return [header] + report(lines) + (poolingLines.isEmpty ? [] : poolingReport(poolingLines))
    }

    /// One line of the table: the sides' median times, the target, and what one operation is.
    struct Line {
        let title: String
        let raw: Duration
        let library: Duration
        let target: Double
        /// How many operations one run made, and what one is.
        let operations: Int
        let operation: String
        /// The SQLite section's library µs per row, when it ran the workload.
        let sqlite: Double?

        init(title: String, times: [String: [Duration]], target: Double, operations: Int, sqlite: Double?, operation: String = "row") throws {
            guard let raw = times["raw"], let library = times["library"] else {
                throw Check.Failure(description: "PostgreSQL \(title): no time measured")
            }
            self.title = title
            self.raw = median(raw)
            self.library = median(library)
            self.target = target
            self.operations = operations
            self.operation = operation
            self.sqlite = sqlite
        }

        var ratio: Double { library.seconds / raw.seconds }
    }

    /// The library with `transactionPooling: true` beside its default, in median seconds: on the same
    /// server straight (unnamed statements: the server parses and plans each), and through
    /// pgbouncer when one is given.
    private func poolingReport(_ lines: [(workload: Workload, library: Duration, pooled: Duration, bouncer: Duration?)]) -> [String] {
        let layout = TableLayout(titleWidth: 21, widths: [11, 11, 9, 13, 9])
        return [""] + layout.lines(
            heading: ["transaction pooling", "default s", "pooled s", "/default", "pgbouncer s", "/default"],
            rows: lines.map { line in
                (
                    [line.workload.title, String(format: "%.4f", line.library.seconds), String(format: "%.4f", line.pooled.seconds),
                     String(format: "%.2f", line.pooled.seconds / line.library.seconds),
                     line.bouncer.map { String(format: "%.4f", $0.seconds) } ?? "-",
                     line.bouncer.map { String(format: "%.2f", $0.seconds / line.library.seconds) } ?? "-"],
                    "")
            })
    }

    /// The table: per row the median times, library/raw against the target, and the library's
    /// time per operation on PostgreSQL (and per row on SQLite, the SQLite section's).
    private func report(_ lines: [Line]) -> [String] {
        let layout = TableLayout(titleWidth: 21, widths: [11, 11, 9, 9, 14, 19])
        let table = layout.lines(
            heading: ["PostgreSQL (\(rows.count) rows)", "libpq s", "library s", "lib/raw", "target", "SQLite µs/row",
                      "PG µs/op"],
            rows: lines.map { line in
                (
                    [line.title, String(format: "%.4f", line.raw.seconds), String(format: "%.4f", line.library.seconds),
                     String(format: "%.2f", line.ratio), String(format: "<= %.1f", line.target),
                     line.sqlite.map { String(format: "%.2f", $0) } ?? "-",
                     String(format: "%.2f", line.library.seconds * 1e6 / Double(line.operations)) + " / \(line.operation)"],
                    line.ratio <= line.target + 0.005 ? "ok" : "MISSED")
            })
        let missed = lines.filter { $0.ratio > $0.target + 0.005 }.count
        return table + [
            missed == 0
                ? "all \(lines.count) PostgreSQL rows within target (lib/raw libpq, median seconds)"
                : "\(missed) of \(lines.count) PostgreSQL rows MISSED their target (lib/raw libpq, median seconds)",
            "(the targets are issue 35's, in client instructions: make bench-instructions counts them; seconds here are "
                + "mostly the round trips)",
        ]
    }

    /// After each round, through the admin connection: no rows after destroying, else exactly
    /// ids 1...N, each holding its row's values.
    func checkTable(_ admin: RawPostgres, schema: String, after workload: Workload, side: String) throws {
        let context = "PostgreSQL \(side) \(workload.title): table"
        let table = "\(schema).\"BenchUser\""
        let total = Int(try admin.integer("SELECT count(*) FROM \(table)"))
        guard !workload.deletes else { return try Check.count(total, 0, "\(context): rows left") }
        try Check.count(total, rows.count, "\(context): rows")
        let increment = workload == .updateScore ? RowValues.scoreIncrement : 0
        let matching = try admin.integer("""
            SELECT count(*) FROM \(table) WHERE "id" BETWEEN 1 AND $4 \
            AND "name" = 'user' || "id" AND "email" = 'user' || "id" || '@example.com' \
            AND "age" = "id" % 90 AND "score" = "id" * 0.5 + CAST($1 AS DOUBLE PRECISION) AND "active" = ("id" % 2 = 0) \
            AND "groupId" = "id" % 100 AND length("payload") = 16 \
            AND CASE WHEN "id" % 2 = 0 THEN "note" IS NULL ELSE "note" = 'note ' || "id" END \
            AND "createdAt" BETWEEN $2 AND $3 AND "updatedAt" \(workload == .updateScore ? ">" : "=") "createdAt"
            """, ["\(increment)", "\(Check.startedAt)", "\(Date().timeIntervalSince1970)", "\(rows.count)"])
        try Check.count(Int(matching), rows.count, "\(context): rows with the expected values")
    }
}

/// The median of `times` (of an even count, the mean of the middle two).
func median(_ times: [Duration]) -> Duration {
    let sorted = times.sorted()
    return (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
}
