import FluentKit
import FluentPostgresDriver
import Foundation
import Logging
import NIOCore
import NIOPosix

/// The same table as a Fluent model, written as Fluent's documentation shows: `@ID`, `@Field`s,
/// `@OptionalField`, the timestamps as `@Timestamp` in Unix seconds (the `DOUBLE PRECISION`
/// columns the library writes), and the group as a `@Parent`.
final class FluentUser: Model, @unchecked Sendable {
    static let schema = "BenchUser"

    @ID(custom: .id, generatedBy: .database) var id: Int?
    @Timestamp(key: "createdAt", on: .create, format: .unix) var createdAt: Date?
    @Timestamp(key: "updatedAt", on: .update, format: .unix) var updatedAt: Date?
    @Field(key: "name") var name: String
    @Field(key: "email") var email: String
    @Field(key: "age") var age: Int
    @Field(key: "score") var score: Double
    @Field(key: "active") var active: Bool
    @OptionalField(key: "note") var note: String?
    @Parent(key: "groupId") var group: FluentGroup
    @Field(key: "payload") var payload: Data

    init() {}

    init(_ row: RowValues) {
        name = row.name
        email = row.email
        age = row.age
        score = row.score
        active = row.active
        note = row.note
        $group.id = Int(row.groupId)
        payload = row.payload
    }
}

/// The groups, with their users as `@Children`.
final class FluentGroup: Model, @unchecked Sendable {
    static let schema = "BenchGroup"

    @ID(custom: .id, generatedBy: .database) var id: Int?
    @Timestamp(key: "createdAt", on: .create, format: .unix) var createdAt: Date?
    @Timestamp(key: "updatedAt", on: .update, format: .unix) var updatedAt: Date?
    @Field(key: "title") var title: String
    @Children(for: \.$group) var members: [FluentUser]

    init() {}
}

extension FluentUser: UserRow {
    var snapshot: UserSnapshot {
        UserSnapshot(
            id: Int64(id ?? -1), name: name, email: email, age: age, score: score, active: active, note: note,
            groupId: Int64($group.id), payload: payload, createdAt: createdAt?.timeIntervalSince1970,
            updatedAt: updatedAt?.timeIntervalSince1970)
    }
    var digestID: Int64 { Int64(id ?? -1) }
    var digestAge: Int { age }
}

/// Fluent (fluent-kit with fluent-postgres-driver), set up without Vapor as
/// Benchmarks/FluentServer does: `Databases` on NIO's singleton event loop group and thread pool,
/// the PostgreSQL driver with its defaults (one connection per event loop), the models' own
/// methods (`create`, `update`, `find`, `query(on:)`, `with(\.$members)`, `transaction`).
final class FluentSide: PeerSide {
    static let name = "fluent"

    let databases: Databases
    let database: any Database
    private let rows: [RowValues]
    private var loaded: [FluentUser] = []
    private var results = ReadLog<FluentUser>()

    init(server: Server, shape: Shape) async throws {
        let eventLoopGroup = MultiThreadedEventLoopGroup.singleton
        databases = Databases(threadPool: NIOThreadPool.singleton, on: eventLoopGroup)
        databases.use(
            .postgres(configuration: SQLPostgresConfiguration(
                unixDomainSocketPath: try server.socketPath, username: server.user, password: nil, database: server.database)),
            as: .psql)
        guard let database = databases.database(logger: Logger(label: "PeerBench.fluent"), on: eventLoopGroup.any()) else {
            throw PeerError("Fluent: no database configured")
        }
        self.database = database
        rows = shape.values
        _ = try await FluentUser.query(on: database).count()
        _ = try await FluentGroup.query(on: database).count()
    }

    func prepare(_ workload: Workload) async throws {
        if workload == .update { loaded = try await FluentUser.query(on: database).sort(\.$id).all() }
    }

    func run(_ workload: Workload, ops: Int) async throws {
        switch workload {
        case .insertTx:
            let rows = Array(rows.prefix(ops))
            results.rows += try await database.transaction { database in
                var inserted: [FluentUser] = []
                for row in rows {
                    let user = FluentUser(row)
                    try await user.create(on: database)
                    inserted.append(user)
                }
                return inserted
            }
        case .insertAutocommit:
            for row in rows.prefix(ops) {
                let user = FluentUser(row)
                try await user.create(on: database)
                results.rows.append(user)
            }
        case .fetchAll:
            for _ in 0..<ops { results.batches.append(try await FluentUser.query(on: database).sort(\.$id).all()) }
        case .ageQuery:
            for _ in 0..<ops {
                results.batches.append(
                    try await FluentUser.query(on: database).filter(\.$age > RowValues.ageBound).sort(\.$id).all())
            }
        case .find:
            results.rows.reserveCapacity(ops)
            for id in 1...ops {
                if let user = try await FluentUser.find(id, on: database) { results.rows.append(user) }
            }
        case .update:
            let users = Array(loaded.prefix(ops))
            results.changed += try await database.transaction { database in
                for user in users {
                    user.score += RowValues.scoreIncrement
                    try await user.update(on: database)
                }
                return users.count
            }
        case .delete:
            // One DELETE … WHERE id = $1 per id (nothing loaded); Fluent does not say how many rows a
            // query deleted: the harness checks the table afterwards.
            results.changed += try await database.transaction { database in
                for id in 1...ops { try await FluentUser.query(on: database).filter(\.$id == id).delete() }
                return ops
            }
        case .lazy:
            for _ in 0..<ops {
                let groups = try await FluentGroup.query(on: database).sort(\.$id).all()
                for group in groups { results.batches.append(try await group.$members.query(on: database).sort(\.$id).all()) }
                results.groups += groups.map { (Int64($0.id ?? -1), $0.title) }
            }
        case .eager:
            for _ in 0..<ops {
                let groups = try await FluentGroup.query(on: database).sort(\.$id).with(\.$members).all()
                for group in groups { results.batches.append(group.members) }
                results.groups += groups.map { (Int64($0.id ?? -1), $0.title) }
            }
        }
    }

    var snapshots: (users: [UserSnapshot], groups: [(id: Int64, title: String)], changed: Int) { results.snapshots }
    var digest: Digest { results.digest }

    func close() async throws { await databases.shutdownAsync() }
}
