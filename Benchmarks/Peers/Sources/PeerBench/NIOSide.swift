import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// PostgresNIO's value for one row, decoded with `PostgresRow.decode` (binary results).
struct NIOUser: UserRow {
    var id: Int64 = 0
    var createdAt: Double?
    var updatedAt: Double?
    var name: String
    var email: String
    var age: Int
    var score: Double
    var active: Bool
    var note: String?
    var groupId: Int64
    var payload: Data

    init(_ row: RowValues, now: Double) {
        createdAt = now
        updatedAt = now
        name = row.name
        email = row.email
        age = row.age
        score = row.score
        active = row.active
        note = row.note
        groupId = row.groupId
        payload = row.payload
    }

    /// A row selected with ``selectList``.
    init(_ row: PostgresRow) throws {
        let (id, createdAt, updatedAt, name, email, age, score, active, note, groupId, payload) = try row.decode(
            (Int64, Double?, Double?, String, String, Int, Double, Bool, String?, Int64, Data).self)
        self.id = id
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.name = name
        self.email = email
        self.age = age
        self.score = score
        self.active = active
        self.note = note
        self.groupId = groupId
        self.payload = payload
    }

    var snapshot: UserSnapshot {
        UserSnapshot(
            id: id, name: name, email: email, age: age, score: score, active: active, note: note, groupId: groupId,
            payload: payload, createdAt: createdAt, updatedAt: updatedAt)
    }
    var digestID: Int64 { id }
    var digestAge: Int { age }
}

// The statements, as PostgresNIO's `PostgresPreparedStatement`s: each prepared once per connection
// (on first use), then run with its binds.

struct InsertUser: PostgresPreparedStatement {
    static let sql = """
        INSERT INTO "BenchUser" ("createdAt", "updatedAt", "name", "email", "age", "score", "active", "note", \
        "groupId", "payload") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING "id"
        """
    typealias Row = Int64
    let row: RowValues
    let now: Double

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 10)
        bindings.append(now)
        bindings.append(now)
        bindings.append(row.name)
        bindings.append(row.email)
        bindings.append(row.age)
        bindings.append(row.score)
        bindings.append(row.active)
        bindings.append(row.note)
        bindings.append(row.groupId)
        try bindings.append(row.payload)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
}

struct FetchAllUsers: PostgresPreparedStatement {
    static let sql = #"SELECT \#(selectList) FROM "BenchUser" ORDER BY "id""#
    typealias Row = NIOUser
    func makeBindings() -> PostgresBindings { PostgresBindings() }
    func decodeRow(_ row: PostgresRow) throws -> NIOUser { try NIOUser(row) }
}

struct UsersOlderThan: PostgresPreparedStatement {
    static let sql = #"SELECT \#(selectList) FROM "BenchUser" WHERE "age" > $1 ORDER BY "id""#
    typealias Row = NIOUser
    let age: Int
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(age)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> NIOUser { try NIOUser(row) }
}

struct FindUser: PostgresPreparedStatement {
    static let sql = #"SELECT \#(selectList) FROM "BenchUser" WHERE "id" = $1"#
    typealias Row = NIOUser
    let id: Int64
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(id)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> NIOUser { try NIOUser(row) }
}

struct UpdateScore: PostgresPreparedStatement {
    static let sql = #"UPDATE "BenchUser" SET "score" = $1, "updatedAt" = $2 WHERE "id" = $3"#
    typealias Row = ()
    let score: Double
    let now: Double
    let id: Int64
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(score)
        bindings.append(now)
        bindings.append(id)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws {}
}

struct DeleteUser: PostgresPreparedStatement {
    static let sql = #"DELETE FROM "BenchUser" WHERE "id" = $1"#
    typealias Row = ()
    let id: Int64
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(id)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws {}
}

struct FetchGroups: PostgresPreparedStatement {
    static let sql = #"SELECT "id", "createdAt", "updatedAt", "title" FROM "BenchGroup" ORDER BY "id""#
    typealias Row = (id: Int64, title: String)
    func makeBindings() -> PostgresBindings { PostgresBindings() }
    func decodeRow(_ row: PostgresRow) throws -> (id: Int64, title: String) {
        let (id, _, _, title) = try row.decode((Int64, Double?, Double?, String).self)
        return (id, title)
    }
}

struct MembersOfGroup: PostgresPreparedStatement {
    static let sql = #"SELECT \#(selectList) FROM "BenchUser" WHERE "groupId" = $1 ORDER BY "id""#
    typealias Row = NIOUser
    let groupID: Int64
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(groupID)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> NIOUser { try NIOUser(row) }
}

struct MembersOfGroups: PostgresPreparedStatement {
    static let sql = #"SELECT \#(selectList) FROM "BenchUser" WHERE "groupId" = ANY($1) ORDER BY "id""#
    typealias Row = NIOUser
    let groupIDs: [Int64]
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(groupIDs)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> NIOUser { try NIOUser(row) }
}

/// Raw PostgresNIO used as its documentation shows it at its best: one `PostgresConnection` on
/// NIO's singleton event loop group, every statement a `PostgresPreparedStatement` (prepared once
/// per connection, binary binds and results), rows decoded into a struct, transactions with
/// `withTransaction`.
final class NIOSide: PeerSide {
    static let name = "nio"

    let connection: PostgresConnection
    let logger = Logger(label: "PeerBench.nio")
    private let rows: [RowValues]
    private var loaded: [NIOUser] = []
    private var results = ReadLog<NIOUser>()

    init(server: Server, shape: Shape) async throws {
        let configuration = PostgresConnection.Configuration(
            unixSocketPath: try server.socketPath, username: server.user, password: nil, database: server.database)
        connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 1, logger: logger)
        rows = shape.values
        try await connection.query(#"SELECT count(*) FROM "BenchUser", "BenchGroup""#, logger: logger)
    }

    func prepare(_ workload: Workload) async throws {
        if workload == .update { loaded = try await fetch(FetchAllUsers()) }
    }

    func run(_ workload: Workload, ops: Int) async throws {
        switch workload {
        case .insertTx:
            let rows = rows.prefix(ops), logger = logger
            let inserted = try await connection.withTransaction(logger: logger) { connection in
                var inserted: [NIOUser] = []
                for row in rows { inserted.append(try await Self.insert(row, on: connection, logger: logger)) }
                return inserted
            }
            results.rows += inserted
        case .insertAutocommit:
            for row in rows.prefix(ops) { results.rows.append(try await Self.insert(row, on: connection, logger: logger)) }
        case .fetchAll:
            for _ in 0..<ops { results.batches.append(try await fetch(FetchAllUsers())) }
        case .ageQuery:
            for _ in 0..<ops { results.batches.append(try await fetch(UsersOlderThan(age: RowValues.ageBound))) }
        case .find:
            results.rows.reserveCapacity(ops)
            for id in 1...Int64(ops) {
                for try await user in try await connection.execute(FindUser(id: id), logger: logger) { results.rows.append(user) }
            }
        case .update:
            var users = loaded
            let logger = logger
            let changed = try await connection.withTransaction(logger: logger) { connection in
                var changed = 0
                for index in 0..<ops {
                    let now = Date().timeIntervalSince1970
                    users[index].score += RowValues.scoreIncrement
                    try await Self.run(UpdateScore(score: users[index].score, now: now, id: users[index].id), on: connection, logger: logger)
                    changed += 1
                    users[index].updatedAt = now
                }
                return changed
            }
            loaded = users
            results.changed += changed
        case .delete:
            let logger = logger
            results.changed += try await connection.withTransaction(logger: logger) { connection in
                var changed = 0
                for id in 1...Int64(ops) {
                    try await Self.run(DeleteUser(id: id), on: connection, logger: logger)
                    changed += 1
                }
                return changed
            }
        case .lazy:
            for _ in 0..<ops {
                let groups = try await fetchGroups()
                for group in groups { results.batches.append(try await fetch(MembersOfGroup(groupID: group.id))) }
                results.groups += groups
            }
        case .eager:
            for _ in 0..<ops {
                let groups = try await fetchGroups()
                // Each row decoded straight into its group's array.
                var members: [Int64: [NIOUser]] = [:]
                for try await member in try await connection.execute(MembersOfGroups(groupIDs: groups.map(\.id)), logger: logger) {
                    members[member.groupId, default: []].append(member)
                }
                for group in groups { results.batches.append(members[group.id] ?? []) }
                results.groups += groups
            }
        }
    }

    var snapshots: (users: [UserSnapshot], groups: [(id: Int64, title: String)], changed: Int) { results.snapshots }
    var digest: Digest { results.digest }

    func close() async throws { try await connection.close() }

    private static func insert(_ row: RowValues, on connection: PostgresConnection, logger: Logger) async throws -> NIOUser {
        let now = Date().timeIntervalSince1970
        var user = NIOUser(row, now: now)
        for try await id in try await connection.execute(InsertUser(row: row, now: now), logger: logger) { user.id = id }
        return user
    }

    /// Runs a statement that returns no rows, to its end. (PostgresNIO 1.33.2's `execute` overload for
    /// `Row == ()`, which returns the command tag, traps on these statements: "commandTag may only be
    /// called if all rows have been consumed". The rows changed are checked in the table afterwards.)
    private static func run<Statement: PostgresPreparedStatement>(
        _ statement: Statement, on connection: PostgresConnection, logger: Logger
    ) async throws where Statement.Row == () {
        for try await _ in try await connection.execute(statement, logger: logger) as AsyncThrowingMapSequence<PostgresRowSequence, ()> {}
    }

    private func fetch<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [NIOUser]
    where Statement.Row == NIOUser {
        var users: [NIOUser] = []
        for try await user in try await connection.execute(statement, logger: logger) { users.append(user) }
        return users
    }

    private func fetchGroups() async throws -> [(id: Int64, title: String)] {
        var groups: [(id: Int64, title: String)] = []
        for try await group in try await connection.execute(FetchGroups(), logger: logger) { groups.append(group) }
        return groups
    }
}
