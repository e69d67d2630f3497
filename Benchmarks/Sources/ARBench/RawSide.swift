import CSQLiteRaw
import Foundation

/// The raw side's table, equivalent to what the library creates for `BenchUser`.
let rawCreateTableSQL = """
    CREATE TABLE "BenchUser" ("id" INTEGER PRIMARY KEY, "createdAt" REAL, "updatedAt" REAL, \
    "name" TEXT NOT NULL DEFAULT '', "email" TEXT NOT NULL DEFAULT '', "age" INTEGER NOT NULL DEFAULT 0, \
    "score" REAL NOT NULL DEFAULT 0, "active" INTEGER NOT NULL DEFAULT 0, "note" TEXT, \
    "groupId" INTEGER NOT NULL DEFAULT 0, "payload" BLOB NOT NULL DEFAULT X'')
    """

/// Every result column, in the library's order: id, createdAt, updatedAt, then the declared columns.
let rawSelectList = """
    "id", "createdAt", "updatedAt", "name", "email", "age", "score", "active", "note", "groupId", "payload"
    """

/// Hand-written sqlite3 access to `RawUser` rows: each statement is prepared
/// once and reused for every row, with values bound and read directly.
final class RawUserStore {
    let database: RawDatabase
    private let insertStatement: RawStatement
    private let selectAllStatement: RawStatement
    private let findStatement: RawStatement
    private let updateScoreStatement: RawStatement
    private let deleteStatement: RawStatement

    /// Prepares every statement on `database`, whose table must exist.
    init(_ database: RawDatabase) throws {
        self.database = database
        insertStatement = try database.prepare("""
            INSERT INTO "BenchUser" ("createdAt", "updatedAt", "name", "email", "age", "score", "active", \
            "note", "groupId", "payload") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        selectAllStatement = try database.prepare(#"SELECT \#(rawSelectList) FROM "BenchUser" ORDER BY "id""#)
        findStatement = try database.prepare(#"SELECT \#(rawSelectList) FROM "BenchUser" WHERE "id" = ?"#)
        updateScoreStatement = try database.prepare(
            #"UPDATE "BenchUser" SET "score" = ?, "updatedAt" = ? WHERE "id" = ?"#)
        deleteStatement = try database.prepare(#"DELETE FROM "BenchUser" WHERE "id" = ?"#)
    }

    /// Inserts `user` and gives it its id and timestamps, as the library's first save does.
    func insert(_ user: RawUser) throws {
        let now = Date().timeIntervalSince1970
        let statement = insertStatement
        let handle = statement.handle
        defer { statement.reset() }
        // SQLITE_OK is 0: or-ing the codes keeps any failure.
        var code = sqlite3_bind_double(handle, 1, now) | sqlite3_bind_double(handle, 2, now)
        try statement.bind(user.name, at: 3)
        try statement.bind(user.email, at: 4)
        code |= sqlite3_bind_int64(handle, 5, Int64(user.age))
        code |= sqlite3_bind_double(handle, 6, user.score)
        code |= sqlite3_bind_int64(handle, 7, user.active ? 1 : 0)
        if let note = user.note { try statement.bind(note, at: 8) } else { code |= sqlite3_bind_null(handle, 8) }
        code |= sqlite3_bind_int64(handle, 9, user.groupId)
        try statement.bind(user.payload, at: 10)
        guard code == SQLITE_OK else { throw database.error(code, "bind to INSERT") }
        _ = try statement.step()
        user.id = database.lastInsertedRowID
        user.createdAt = now
        user.updatedAt = now
    }

    /// Every row, in id order.
    func fetchAll() throws -> [RawUser] {
        let statement = selectAllStatement
        defer { statement.reset() }
        var users: [RawUser] = []
        while try statement.step() {
            users.append(decode(statement))
        }
        return users
    }

    /// The row with this id, or `nil`.
    func find(_ id: Int64) throws -> RawUser? {
        let statement = findStatement
        defer { statement.reset() }
        let code = sqlite3_bind_int64(statement.handle, 1, id)
        guard code == SQLITE_OK else { throw database.error(code, "bind to SELECT") }
        return try statement.step() ? decode(statement) : nil
    }

    /// Writes the score and a new `updatedAt`, as the library's save of a changed score does.
    func updateScore(_ user: RawUser) throws {
        let now = Date().timeIntervalSince1970
        let statement = updateScoreStatement
        let handle = statement.handle
        defer { statement.reset() }
        let code = sqlite3_bind_double(handle, 1, user.score) | sqlite3_bind_double(handle, 2, now)
            | sqlite3_bind_int64(handle, 3, user.id)
        guard code == SQLITE_OK else { throw database.error(code, "bind to UPDATE") }
        _ = try statement.step()
        guard database.changedRowCount > 0 else { throw RawSQLiteError(description: "UPDATE: no row with id \(user.id)") }
        user.updatedAt = now
    }

    /// Deletes the user's row.
    func delete(_ user: RawUser) throws { try delete(id: user.id) }

    func delete(id: Int64) throws {
        let statement = deleteStatement
        defer { statement.reset() }
        let code = sqlite3_bind_int64(statement.handle, 1, id)
        guard code == SQLITE_OK else { throw database.error(code, "bind to DELETE") }
        _ = try statement.step()
        guard database.changedRowCount > 0 else { throw RawSQLiteError(description: "DELETE: no row with id \(id)") }
    }

    /// Reads the current row (selected with ``rawSelectList``) into a new object.
    @inline(__always)
    private func decode(_ statement: RawStatement) -> RawUser {
        let handle = statement.handle
        return RawUser(
            id: sqlite3_column_int64(handle, 0),
            name: statement.text(3),
            email: statement.text(4),
            age: Int(sqlite3_column_int64(handle, 5)),
            score: sqlite3_column_double(handle, 6),
            active: sqlite3_column_int64(handle, 7) != 0,
            note: sqlite3_column_type(handle, 8) == SQLITE_NULL ? nil : statement.text(8),
            groupId: sqlite3_column_int64(handle, 9),
            payload: statement.data(10),
            createdAt: sqlite3_column_double(handle, 1),
            updatedAt: sqlite3_column_double(handle, 2))
    }
}

/// What a raw side's store does, so that one driver runs every workload on either engine.
protocol RawUserStoring {
    func insert(_ user: RawUser) throws
    func fetchAll() throws -> [RawUser]
    func find(_ id: Int64) throws -> RawUser?
    func updateScore(_ user: RawUser) throws
    func delete(_ user: RawUser) throws
    func delete(id: Int64) throws
    /// Runs `body` in one transaction.
    func transaction(_ body: () throws -> Void) throws
    /// Runs `body` in one read transaction.
    func read(_ body: () throws -> Void) throws
}

extension RawUserStore: RawUserStoring {
    func transaction(_ body: () throws -> Void) throws { try database.transaction(body) }
    func read(_ body: () throws -> Void) throws { try database.read(body) }
}

/// Runs `workload` on `store` (already holding the rows, except for insert), checking the
/// results: the part of a raw side that does not depend on the engine.
/// - Parameter fetchRepeats: how many times fetch-all runs, keeping the best time.
func runRawWorkload(
    _ workload: Workload, on store: some RawUserStoring, rows: [RowValues], side name: String, fetchRepeats: Int = 1
) throws -> Duration {
    if !workload.inserts { _ = try insertRawUsers(rows, into: store) }  // untimed pre-fill
    switch workload {
    case .insert, .insertAll:
        let (elapsed, users) = try measure(side: name) { try insertRawUsers(rows, into: store) }
        try Check.records(users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: name, workload: workload)
        return elapsed
    case .fetchAll:
        var best: Duration?
        for _ in 0..<max(1, fetchRepeats) {
            let (elapsed, users) = try measure(side: name) { try store.fetchAll() }
            try Check.records(users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: name, workload: workload)
            best = min(best ?? elapsed, elapsed)
        }
        return best ?? .zero
    case .find:
        let (elapsed, found) = try measure(side: name) {
            var found: [RawUser?] = []
            found.reserveCapacity(rows.count)
            try store.read {
                for id in 1...Int64(rows.count) { found.append(try store.find(id)) }
            }
            return found
        }
        try Check.found(found.map { $0?.snapshot }, rows: rows, side: name)
        return elapsed
    case .updateScore:
        let users = try store.fetchAll()
        let (elapsed, _) = try measure(side: name) {
            try store.transaction {
                for user in users {
                    user.score += RowValues.scoreIncrement
                    try store.updateScore(user)
                }
            }
        }
        try Check.records(
            users.map(\.snapshot), rows: rows, scoreIncrement: RowValues.scoreIncrement, side: name, workload: workload)
        return elapsed
    case .destroy:
        let users = try store.fetchAll()
        try Check.count(users.count, rows.count, "\(name) \(workload.title): records loaded before destroying")
        let (elapsed, _) = try measure(side: name) {
            try store.transaction { for user in users { try store.delete(user) } }
        }
        return elapsed
    case .deleteByID:
        let (elapsed, _) = try measure(side: name) {
            try store.transaction { for id in 1...Int64(rows.count) { try store.delete(id: id) } }
        }
        return elapsed
    }
}

/// Inserts every row in one transaction, as new `RawUser` objects.
private func insertRawUsers(_ rows: [RowValues], into store: some RawUserStoring) throws -> [RawUser] {
    var users: [RawUser] = []
    users.reserveCapacity(rows.count)
    try store.transaction {
        for row in rows {
            let user = RawUser(
                name: row.name, email: row.email, age: row.age, score: row.score, active: row.active,
                note: row.note, groupId: row.groupId, payload: row.payload)
            try store.insert(user)
            users.append(user)
        }
    }
    return users
}

/// The raw sqlite3 side of every workload.
struct RawSide: BenchSide {
    let name = "raw"
    let rows: [RowValues]

    func run(_ workload: Workload, path: String) throws -> Duration {
        let database = try RawDatabase(path: path)
        try database.execute(rawCreateTableSQL)
        return try runRawWorkload(workload, on: try RawUserStore(database), rows: rows, side: name)
    }
}
