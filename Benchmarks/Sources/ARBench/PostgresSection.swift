import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation

/// The PostgreSQL section: the same CRUD workloads through the library on PostgreSQL and
/// through raw libpq (prepared statements, the same rows, every result checked), on one
/// local server, each round in a fresh schema. Target: library/raw <= 1.3 on every
/// workload. The SQLite section's library times are shown beside, per row, for context.
/// The raw side is the best hand-written libpq code: statements prepared once, binary
/// parameters and binary results (``RawPostgresUserStore``).
///
/// It runs when `AR_BENCH_POSTGRES` (or `AR_TEST_POSTGRES`) holds a libpq `key=value`
/// connection string; `make bench` starts a throwaway server for it (scripts/with-postgres.sh).
struct PostgresSection {
    /// The workloads' target: library/raw libpq.
    static let target = 1.3
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
    /// The workloads to run (`ARBench postgres N --only W`: one).
    var workloads = Workload.allCases

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

    private func schemaConnection(_ schema: String) -> String { connection + " options='-csearch_path=\(schema)'" }

    /// Runs every workload and returns the section's table.
    func run(progress: (String) -> Void) throws -> [String] {
        let admin = try RawPostgres(connection)
        try admin.execute("SET client_min_messages = warning")  // no NOTICE per dropped table
        let settings = try ["server_version", "fsync", "synchronous_commit"].map { "\($0) \(try admin.text("SHOW \($0)"))" }
        let header = "PostgreSQL section: one local server (Unix socket), \(settings.joined(separator: ", ")); "
            + "\(rows.count) rows, best of \(rounds) rounds per side (fetch all: best of \(Self.fetchRepeats) per round); "
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
        var lines: [(workload: Workload, raw: Duration, library: Duration)] = []
        var poolingLines: [(workload: Workload, library: Duration, pooled: Duration, bouncer: Duration?)] = []
        var schemaNumber = 0
        for workload in workloads {
            var best: [String: Duration] = [:]
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
                    best[side.name] = min(best[side.name] ?? elapsed, elapsed)
                    line += " \(side.name) \(String(format: "%.4f", elapsed.seconds))s"
                }
                progress(line)
            }
            guard let rawBest = best["raw"], let libraryBest = best["library"] else {
                throw Check.Failure(description: "PostgreSQL \(workload.title): no time measured")
            }
            lines.append((workload, rawBest, libraryBest))
            poolingLines.append((workload, libraryBest, best["pooled"] ?? .zero, best["pgbouncer"]))
        }
        return [header] + report(lines) + poolingReport(poolingLines)
    }

    /// The library with `transactionPooling: true` beside its default, in seconds: on the same
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

    /// The table: per workload the best times, library/raw against the target, and the library's
    /// time per row on SQLite (the SQLite section) and on PostgreSQL.
    private func report(_ lines: [(workload: Workload, raw: Duration, library: Duration)]) -> [String] {
        let layout = TableLayout(titleWidth: 21, widths: [11, 11, 9, 9, 14, 14])
        let table = layout.lines(
            heading: ["PostgreSQL (\(rows.count) rows)", "libpq s", "library s", "lib/raw", "target", "SQLite µs/row",
                      "PG µs/row"],
            rows: lines.map { line in
                let ratio = line.library.seconds / line.raw.seconds
                let sqliteTime = sqlite.first { $0.workload == line.workload }?.library.seconds
                return (
                    [line.workload.title, String(format: "%.4f", line.raw.seconds), String(format: "%.4f", line.library.seconds),
                     String(format: "%.2f", ratio), String(format: "<= %.1f", Self.target),
                     sqliteTime.map { String(format: "%.2f", $0 * 1e6 / Double(sqliteRowCount)) } ?? "-",
                     String(format: "%.2f", line.library.seconds * 1e6 / Double(rows.count))],
                    ratio <= Self.target ? "ok" : "MISSED")
            })
        let missed = lines.filter { $0.library.seconds / $0.raw.seconds > Self.target }.count
        return table + [missed == 0
            ? "all \(lines.count) PostgreSQL workloads within target (lib/raw libpq)"
            : "\(missed) of \(lines.count) PostgreSQL workloads MISSED their target (lib/raw libpq)"]
    }

    /// After each round, through the admin connection: no rows after destroying, else exactly
    /// ids 1...N, each holding its row's values.
    private func checkTable(_ admin: RawPostgres, schema: String, after workload: Workload, side: String) throws {
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
