import ActiveRecord
import CSQLiteRaw
import Foundation

/// The small model of the transaction and concurrency benchmarks: two
/// declared columns plus the built-in `id`, `createdAt` and `updatedAt`.
/// Row `i` (1-based) of a filled table has name `item<i>` and value `i`.
final class SmallItem: Model {
    @Column var name: String = ""
    @Column var value: Int = 0
}

/// The raw side's plain object for one `SmallItem` row.
final class RawSmallItem {
    var id: Int64 = 0
    let name: String
    let value: Int
    /// Seconds since 1970, as the library stores dates.
    var createdAt: Double = 0
    var updatedAt: Double = 0

    /// Makes an object with no id and no timestamps until inserted.
    init(name: String, value: Int) {
        self.name = name
        self.value = value
    }
}

/// How the transaction benchmark commits its inserts.
enum CommitMode: String, CaseIterable {
    /// Each insert is its own (autocommit) transaction.
    case autocommit
    /// Every insert inside one transaction (`BEGIN IMMEDIATE` … `COMMIT`).
    case oneTransaction = "one-transaction"

    /// The mode's line in the table.
    var title: String {
        switch self {
        case .autocommit: "(a) autocommit, each insert"
        case .oneTransaction: "(b) one transaction"
        }
    }
}

/// The transaction section of the output: `rowCount` inserts of a
/// ``SmallItem``, each its own autocommit transaction, then all in one
/// transaction, through the library and through raw sqlite3 (insert statement
/// prepared once and reused), every run on a fresh file of its own; best of
/// `rounds` rounds per side and mode, each file's rows checked.
struct TransactionSection {
    let rowCount: Int
    let rounds: Int

    /// The insert count of a default run (the seeds' iActiveRecord story: 2,000 inserts).
    static let defaultRowCount = 2_000

    /// The raw side's table, as the library creates `SmallItem`'s.
    static let rawCreateTableSQL = """
        CREATE TABLE "SmallItem" ("id" INTEGER PRIMARY KEY, "createdAt" REAL, "updatedAt" REAL, \
        "name" TEXT NOT NULL DEFAULT '', "value" INTEGER NOT NULL DEFAULT 0)
        """

    /// Runs every round; returns the lines to print.
    func run(progress: (String) -> Void) throws -> [String] {
        let names = (1...rowCount).map { "item\($0)" }  // made before any timing
        var best: [String: Duration] = [:]
        for round in 1...rounds {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let sides = round % 2 == 1 ? ["raw", "library"] : ["library", "raw"]
            var line = "transactions round \(round):"
            for mode in CommitMode.allCases {
                for side in sides {
                    let path = directory.path + "/\(side)-\(mode.rawValue).sqlite"
                    let elapsed = side == "raw"
                        ? try runRaw(mode, names: names, path: path) : try runLibrary(mode, names: names, path: path)
                    try checkFile(at: path, context: "transactions: \(side) \(mode.rawValue)")
                    let key = "\(side) \(mode.rawValue)"
                    best[key] = min(best[key] ?? elapsed, elapsed)
                    line += " \(key) \(String(format: "%.4f", elapsed.seconds))s"
                }
            }
            progress(line)
        }
        func time(_ side: String, _ mode: CommitMode) throws -> Double {
            guard let time = best["\(side) \(mode.rawValue)"] else {
                throw Check.Failure(description: "transactions: no time for \(side) \(mode.rawValue)")
            }
            return time.seconds
        }
        let layout = TableLayout(titleWidth: 34, widths: [7, 10, 11, 9])
        let heading = layout.row(["mode", "rows", "raw s", "library s", "lib/raw"], "")
        var lines = [
            "Transactions: \(rowCount) inserts of a 2-column model (name, value), each side on a fresh file per "
                + "mode and round (WAL, synchronous=NORMAL); raw: one prepared INSERT reused, BEGIN IMMEDIATE/COMMIT "
                + "around (b); best of \(rounds) rounds per side; every file's rows checked",
            heading, String(repeating: "-", count: heading.count),
        ]
        for mode in CommitMode.allCases {
            let raw = try time("raw", mode), library = try time("library", mode)
            lines.append(layout.row(
                [mode.title, String(rowCount), String(format: "%.4f", raw), String(format: "%.4f", library),
                 String(format: "%.2f", library / raw)], ""))
        }
        let rawSpeedup = try time("raw", .autocommit) / time("raw", .oneTransaction)
        let librarySpeedup = try time("library", .autocommit) / time("library", .oneTransaction)
        lines.append(layout.row(
            ["speedup of (b): (a) s / (b) s", "", String(format: "%.2f", rawSpeedup),
             String(format: "%.2f", librarySpeedup)], ""))
        /// What committing each insert alone adds per insert, in µs.
        func perCommit(_ side: String) throws -> Double {
            (try time(side, .autocommit) - time(side, .oneTransaction)) / Double(rowCount) * 1e6
        }
        lines += [
            "",
            String(format: "a commit per insert adds %.1f µs per insert (raw), %.1f µs (library): in WAL with "
                + "synchronous=NORMAL a commit appends to the WAL without fsync", try perCommit("raw"),
                   try perCommit("library")),
        ]
        return lines
    }

    /// The library side: a fresh `Database` on `path`, its table created
    /// untimed, then the timed inserts; checks each record's id.
    private func runLibrary(_ mode: CommitMode, names: [String], path: String) throws -> Duration {
        let database = try Database(.file(path))
        return try database.use {
            let context = "transactions: library \(mode.rawValue)"
            try Check.count(try SmallItem.count(), 0, "\(context): a fresh table")
            let (elapsed, items) = try measure { () throws -> [SmallItem] in
                var items: [SmallItem] = []
                items.reserveCapacity(names.count)
                func insertAll() throws {
                    for (offset, name) in names.enumerated() {
                        let item = SmallItem()
                        item.name = name
                        item.value = offset + 1
                        try item.save()
                        items.append(item)
                    }
                }
                if mode == .oneTransaction { try database.transaction(insertAll) } else { try insertAll() }
                return items
            }
            try checkIDs(items.map { $0.id ?? -1 }, context)
            try Check.count(try SmallItem.count(), rowCount, "\(context): SmallItem.count()")
            return elapsed
        }
    }

    /// The raw side: a raw connection on `path`, the table created and the
    /// INSERT prepared untimed, then the timed inserts into plain objects.
    private func runRaw(_ mode: CommitMode, names: [String], path: String) throws -> Duration {
        let database = try RawDatabase(path: path)
        try database.execute(TransactionSection.rawCreateTableSQL)
        let statement = try database.prepare(
            #"INSERT INTO "SmallItem" ("createdAt", "updatedAt", "name", "value") VALUES (?, ?, ?, ?)"#)
        let handle = statement.handle
        let (elapsed, items) = try measure { () throws -> [RawSmallItem] in
            var items: [RawSmallItem] = []
            items.reserveCapacity(names.count)
            func insertAll() throws {
                for (offset, name) in names.enumerated() {
                    let item = RawSmallItem(name: name, value: offset + 1)
                    let now = Date().timeIntervalSince1970
                    defer { statement.reset() }
                    let code = sqlite3_bind_double(handle, 1, now) | sqlite3_bind_double(handle, 2, now)
                        | sqlite3_bind_int64(handle, 4, Int64(item.value))
                    try statement.bind(item.name, at: 3)
                    guard code == SQLITE_OK else { throw database.error(code, "bind to INSERT") }
                    _ = try statement.step()
                    item.id = database.lastInsertedRowID
                    item.createdAt = now
                    item.updatedAt = now
                    items.append(item)
                }
            }
            if mode == .oneTransaction { try database.transaction(insertAll) } else { try insertAll() }
            return items
        }
        try checkIDs(items.map(\.id), "transactions: raw \(mode.rawValue)")
        return elapsed
    }

    /// Checks that the inserted objects got ids 1...rowCount, in order.
    private func checkIDs(_ ids: [Int64], _ context: String) throws {
        try Check.count(ids.count, rowCount, "\(context): objects inserted")
        try Check.require(ids == Array(1...Int64(rowCount)), "\(context): ids are not 1...\(rowCount) in order")
    }

    /// Checks a file through a separate raw connection: WAL mode, `rowCount`
    /// rows, each with its name, value and timestamps from this run.
    private func checkFile(at path: String, context: String) throws {
        let database = try RawDatabase(path: path, pragmas: false)
        let journalMode = try database.text("PRAGMA journal_mode")
        try Check.require(journalMode == "wal", "\(context): journal_mode is \(journalMode ?? "nil"), expected wal")
        try Check.count(
            Int(try database.integer(#"SELECT count(*) FROM "SmallItem""#)), rowCount, "\(context): rows in the file")
        let matching = try database.integer("""
            SELECT count(*) FROM "SmallItem" WHERE "id" BETWEEN 1 AND ?1 AND "name" = 'item' || "id" \
            AND "value" = "id" AND "createdAt" BETWEEN ?2 AND ?3 AND "updatedAt" = "createdAt"
            """, [Double(rowCount), Check.startedAt, Date().timeIntervalSince1970])
        try Check.count(Int(matching), rowCount, "\(context): rows with the expected values")
    }
}
