import Foundation
import GRDB

/// GRDB.swift's record for the benchmark table, written the way GRDB's README
/// recommends for a struct with an auto-incremented primary key: `Codable`
/// (GRDB derives the row decoding and the persisted columns from it),
/// `FetchableRecord`, `MutablePersistableRecord`, and `didInsert` storing the id.
struct GRDBUser: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "BenchUser"

    var id: Int64?
    /// Seconds since 1970, as the library and the raw side store dates.
    var createdAt: Double
    var updatedAt: Double
    var name: String
    var email: String
    var age: Int
    var score: Double
    var active: Bool
    var note: String?
    var groupId: Int64
    var payload: Data

    /// Stores the auto-incremented id after a successful insert.
    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    /// The record as a side-neutral snapshot (id -1 when it has none).
    var snapshot: UserSnapshot {
        UserSnapshot(
            id: id ?? -1, name: name, email: email, age: age, score: score, active: active, note: note,
            groupId: groupId, payload: payload, createdAt: createdAt, updatedAt: updatedAt)
    }
}

/// The GRDB.swift side of every workload: `GRDBUser` records on a
/// `DatabaseQueue` with the library's pragmas, each workload's timed part in
/// one `read` or `write` access, as GRDB's documentation writes them.
struct GRDBSide: BenchSide {
    let name = "grdb"
    let rows: [RowValues]

    /// The configuration: WAL (GRDB's documented way for a `DatabaseQueue`)
    /// and `synchronous=NORMAL`; GRDB turns foreign keys on by default. The
    /// query benchmarks open their queue with it too.
    static var configuration: Configuration {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        return configuration
    }

    func run(_ workload: Workload, path: String) throws -> Duration {
        let dbQueue = try DatabaseQueue(path: path, configuration: GRDBSide.configuration)
        // Untimed: the raw side's table, and a check that the connection has
        // the other sides' pragmas.
        try dbQueue.write { db in
            try db.execute(sql: rawCreateTableSQL)
            try checkPragmas(db, workload)
            try Check.count(try GRDBUser.fetchCount(db), 0, "\(name) \(workload.title): a fresh table")
        }
        if !workload.inserts {
            _ = try insertAll(dbQueue)  // untimed pre-fill
        }
        return try run(workload, on: dbQueue)
    }

    /// The workload's timed part and its checks.
    private func run(_ workload: Workload, on dbQueue: DatabaseQueue) throws -> Duration {
        switch workload {
        case .insert, .insertAll:  // GRDB has no batch insert: its insert loop
            let (elapsed, users) = try measure(side: name) { try insertAll(dbQueue) }
            try Check.records(users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: name, workload: workload)
            return elapsed
        case .fetchAll:
            let (elapsed, users) = try measure(side: name) { try fetchAll(dbQueue) }
            try Check.records(users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: name, workload: workload)
            return elapsed
        case .find:
            // All N finds in one `read`, as GRDB code reads several values: each
            // `read` is a serialized access that also toggles `query_only` and
            // opens a transaction, so N separate `read`s would time that N times.
            // The library's N finds each take its connection's lock instead.
            let (elapsed, found) = try measure(side: name) {
                try dbQueue.read { db in
                    var found: [GRDBUser?] = []
                    found.reserveCapacity(rows.count)
                    for id in 1...Int64(rows.count) { found.append(try GRDBUser.fetchOne(db, key: id)) }
                    return found
                }
            }
            try Check.found(found.map { $0?.snapshot }, rows: rows, side: name)
            return elapsed
        case .updateScore:
            var users = try fetchAll(dbQueue)
            let (elapsed, updatedCount) = try measure(side: name) {
                try dbQueue.write { db in
                    var updatedCount = 0
                    for index in users.indices {
                        // GRDB's change tracking: compares the record before and
                        // after `modify`, and updates the changed columns only.
                        let updated = try users[index].updateChanges(db) {
                            $0.score += RowValues.scoreIncrement
                            $0.updatedAt = Date().timeIntervalSince1970
                        }
                        if updated { updatedCount += 1 }
                    }
                    return updatedCount
                }
            }
            try Check.count(updatedCount, rows.count, "\(name) \(workload.title): records updated")
            try Check.records(
                users.map(\.snapshot), rows: rows, scoreIncrement: RowValues.scoreIncrement, side: name, workload: workload)
            return elapsed
        case .destroy:
            let users = try fetchAll(dbQueue)
            try Check.count(users.count, rows.count, "\(name) \(workload.title): records loaded before destroying")
            let (elapsed, deletedCount) = try measure(side: name) {
                try dbQueue.write { db in
                    var deletedCount = 0
                    for user in users {
                        if try user.delete(db) { deletedCount += 1 }
                    }
                    return deletedCount
                }
            }
            try Check.count(deletedCount, rows.count, "\(name) \(workload.title): records deleted")
            return elapsed
        case .deleteByID:
            let (elapsed, deletedCount) = try measure(side: name) {
                try dbQueue.write { db in
                    var deletedCount = 0
                    for id in 1...Int64(rows.count) where try GRDBUser.deleteOne(db, key: id) { deletedCount += 1 }
                    return deletedCount
                }
            }
            try Check.count(deletedCount, rows.count, "\(name) \(workload.title): rows deleted")
            return elapsed
        }
    }

    /// Every record, in id order.
    private func fetchAll(_ dbQueue: DatabaseQueue) throws -> [GRDBUser] {
        try dbQueue.read { db in try GRDBUser.order(Column("id")).fetchAll(db) }
    }

    /// Inserts every row in one `write` (one transaction), as new `GRDBUser`
    /// records stamped with the time of their insert, as the other sides do.
    private func insertAll(_ dbQueue: DatabaseQueue) throws -> [GRDBUser] {
        try dbQueue.write { db in
            var users: [GRDBUser] = []
            users.reserveCapacity(rows.count)
            for row in rows {
                let now = Date().timeIntervalSince1970
                var user = GRDBUser(
                    id: nil, createdAt: now, updatedAt: now, name: row.name, email: row.email, age: row.age,
                    score: row.score, active: row.active, note: row.note, groupId: row.groupId, payload: row.payload)
                try user.insert(db)
                users.append(user)
            }
            return users
        }
    }

    /// Checks that the connection runs with `synchronous=NORMAL` and foreign
    /// keys on, like the other sides (`Check.database` checks WAL on the file).
    private func checkPragmas(_ db: Database, _ workload: Workload) throws {
        let context = "\(name) \(workload.title)"
        try Check.count(try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1, 1, "\(context): synchronous (1 = NORMAL)")
        try Check.count(try Int.fetchOne(db, sql: "PRAGMA foreign_keys") ?? -1, 1, "\(context): foreign_keys")
        try Check.require(
            try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal", "\(context): journal_mode is not wal")
    }
}

/// GRDB.swift's record for the query benchmarks' `QueryUser` table, as its README writes a read-only
/// record: `Codable` (the decoding is derived), `FetchableRecord`, `TableRecord`.
struct GRDBQueryUser: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "QueryUser"

    var id: Int64
    /// Seconds since 1970, as the library stores dates.
    var createdAt: Double
    var updatedAt: Double
    var name: String
    var age: Int
    var score: Double
}

/// GRDB.swift's record for the `BenchGroup` table, with its has-many
/// association to the members (in id order, as the other sides read them).
/// `EncodableRecord` gives it `request(for:)`, GRDB's lazy relation.
struct GRDBGroup: Codable, FetchableRecord, EncodableRecord, TableRecord {
    static let databaseTableName = "BenchGroup"
    static let members = hasMany(GRDBMember.self, key: "members", using: ForeignKey(["benchGroupId"]))
        .order(Column("id"))

    var id: Int64
    /// Seconds since 1970, as the library stores dates.
    var createdAt: Double
    var updatedAt: Double
    var title: String
}

/// GRDB.swift's record for the `BenchMember` table.
struct GRDBMember: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "BenchMember"

    var id: Int64
    var createdAt: Double
    var updatedAt: Double
    var name: String
    var age: Int
    var benchGroupId: Int64
}

/// A group with its members, as GRDB's `including(all:)` decodes them.
struct GRDBGroupWithMembers: Decodable, FetchableRecord {
    var group: GRDBGroup
    var members: [GRDBMember]
}
