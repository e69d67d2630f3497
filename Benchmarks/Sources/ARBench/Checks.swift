import Foundation

/// Sanity checks, run after each timed part and never timed: a side that did
/// the wrong thing stops the benchmark (exit 1) instead of reporting a time.
enum Check {
    /// A failed check, saying which side, workload and value was wrong.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// When the benchmark started, in seconds since 1970: every timestamp must
    /// be later. Set on first use: ``begin()`` makes that the start.
    static let startedAt = ProcessInfo.processInfo.environment[startedAtVariable].flatMap(Double.init)
        ?? Date().timeIntervalSince1970
    /// Hands a child process its parent's ``startedAt``: the child checks records the parent
    /// or an earlier child made.
    static let startedAtVariable = "ARBENCH_STARTED_AT"

    /// Fixes ``startedAt`` to now; call before any workload runs.
    static func begin() { _ = startedAt }

    /// Throws `message` unless `condition` holds.
    static func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw Failure(description: message()) }
    }

    /// Checks a count.
    static func count(_ actual: Int, _ expected: Int, _ what: String) throws {
        try require(actual == expected, "\(what): \(actual), expected \(expected)")
    }

    /// Checks that SQLite's plan for `sql` on `database` uses `index`;
    /// `query` names the query in the failure.
    static func plan(of sql: String, on database: RawDatabase, uses index: String, _ query: String) throws {
        let plan = try database.prepare("EXPLAIN QUERY PLAN \(sql)")
        var details: [String] = []
        while try plan.step() { details.append(plan.text(3)) }
        try require(
            details.contains { $0.contains("USING INDEX \(index)") }, "\(query) does not use \(index): \(details)")
    }

    /// Checks records a side inserted or loaded: one per row, in id order, each with its row's values.
    /// - Parameter scoreIncrement: what the update workload added to each score (0 before it).
    static func records(
        _ records: [UserSnapshot], rows: [RowValues], scoreIncrement: Double, side: String, workload: Workload
    ) throws {
        let context = "\(side) \(workload.title)"
        try count(records.count, rows.count, "\(context): records")
        for (offset, record) in records.enumerated() {
            try expect(record, isRow: offset + 1, of: rows, scoreIncrement: scoreIncrement, context)
        }
    }

    /// Checks the results of finding ids 1...N: each found, with its row's values.
    static func found(_ records: [UserSnapshot?], rows: [RowValues], side: String) throws {
        let context = "\(side) \(Workload.find.title)"
        try count(records.count, rows.count, "\(context): finds")
        for (offset, record) in records.enumerated() {
            guard let record else { throw Failure(description: "\(context): id \(offset + 1) was not found") }
            try expect(record, isRow: offset + 1, of: rows, scoreIncrement: 0, context)
        }
    }

    /// Checks that `record` holds row `i`'s values (with the score moved by
    /// `scoreIncrement`) and plausible timestamps: equal when only inserted,
    /// `updatedAt` later once updated.
    static func expect(
        _ record: UserSnapshot, isRow i: Int, of rows: [RowValues], scoreIncrement: Double, _ context: String
    ) throws {
        let row = rows[i - 1]
        let expected = UserSnapshot(
            id: Int64(i), name: row.name, email: row.email, age: row.age, score: row.score + scoreIncrement,
            active: row.active, note: row.note, groupId: row.groupId, payload: row.payload,
            createdAt: record.createdAt, updatedAt: record.updatedAt)
        try require(record == expected, "\(context): got \(record), expected \(expected)")
        guard let created = record.createdAt, let updated = record.updatedAt else {
            throw Failure(description: "\(context): record \(i) has no timestamps: \(record)")
        }
        try require(
            created >= startedAt && created <= Date().timeIntervalSince1970,
            "\(context): record \(i) has createdAt \(created), not during this run")
        try require(
            scoreIncrement == 0 ? updated == created : updated > created,
            "\(context): record \(i) has createdAt \(created) and updatedAt \(updated)")
    }

    /// Checks a side's database file after `workload`, through a separate raw
    /// connection: WAL mode, then no rows after destroying, else exactly ids
    /// 1...N, each with its row's values (by SQL), and a few rows read in full.
    static func database(at path: String, after workload: Workload, rows: [RowValues], side: String) throws {
        let context = "\(side) \(workload.title): database file"
        let database = try RawDatabase(path: path, pragmas: false)
        let journalMode = try database.text("PRAGMA journal_mode")
        try require(journalMode == "wal", "\(context): journal_mode is \(journalMode ?? "nil"), expected wal")
        let total = Int(try database.integer(#"SELECT count(*) FROM "BenchUser""#))
        guard !workload.deletes else {
            return try count(total, 0, "\(context): rows left")
        }
        try count(total, rows.count, "\(context): rows")
        let increment = workload == .updateScore ? RowValues.scoreIncrement : 0
        let matching = try database.integer(
            matchingRowsSQL(updated: workload == .updateScore),
            [increment, startedAt, Date().timeIntervalSince1970, Double(rows.count)])
        try count(Int(matching), rows.count, "\(context): rows with the expected values")
        let store = try RawUserStore(database)
        for id in Set([1, 2, rows.count / 2, rows.count].filter { $0 >= 1 }).sorted() {
            guard let user = try store.find(Int64(id)) else { throw Failure(description: "\(context): id \(id) missing") }
            try expect(user.snapshot, isRow: id, of: rows, scoreIncrement: increment, context)
        }
    }

    /// Counts the rows holding their expected values; parameters: score
    /// increment, earliest and latest createdAt, N.
    private static func matchingRowsSQL(updated: Bool) -> String {
        """
        SELECT count(*) FROM "BenchUser" WHERE "id" BETWEEN 1 AND ?4 \
        AND "name" = 'user' || "id" AND "email" = 'user' || "id" || '@example.com' \
        AND "age" = "id" % 90 AND "score" = "id" * 0.5 + ?1 AND "active" = ("id" % 2 = 0) \
        AND "groupId" = "id" % 100 AND typeof("payload") = 'blob' AND length("payload") = 16 \
        AND CASE WHEN "id" % 2 = 0 THEN "note" IS NULL ELSE "note" = 'note ' || "id" END \
        AND "createdAt" BETWEEN ?2 AND ?3 AND "updatedAt" \(updated ? ">" : "=") "createdAt"
        """
    }
}
