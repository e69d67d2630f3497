import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation

/// The library's model, as in ARBench (Benchmarks/Sources/ARBench/Models.swift): 8 declared
/// columns plus the built-in `id`, `createdAt` and `updatedAt`.
final class BenchUser: Model {
    @Column var name: String = ""
    @Column var email: String = ""
    @Column var age: Int = 0
    @Column var score: Double = 0
    @Column var active: Bool = false
    @Column var note: String? = nil
    @Column var groupId: Int64 = 0
    @Column var payload: Data = Data()
}

/// The groups: each has the users whose `groupId` is its id.
final class BenchGroup: Model {
    @Column var title: String = ""
    @HasMany(key: "groupId") var members: Query<BenchUser>
}

extension BenchUser: UserRow {
    var snapshot: UserSnapshot {
        UserSnapshot(
            id: id ?? -1, name: name, email: email, age: age, score: score, active: active, note: note, groupId: groupId,
            payload: payload, createdAt: createdAt?.timeIntervalSince1970, updatedAt: updatedAt?.timeIntervalSince1970)
    }
    var digestID: Int64 { id ?? -1 }
    var digestAge: Int { age }
}

/// This library: `Database(.postgres(conninfo))`, records saved, found, fetched and destroyed
/// through its public API, relations through `@HasMany` (`includes` for the eager walk).
final class LibrarySide: PeerSide {
    static let name = "library"

    let database: Database
    private let rows: [RowValues]
    private var loaded: [BenchUser] = []
    private var results = ReadLog<BenchUser>()

    init(server: Server, shape: Shape) async throws {
        database = try Database(.postgres(server.conninfo))
        rows = shape.values
        // Reflect both models and check their tables before anything is counted.
        try database.use {
            _ = try BenchUser.count()
            _ = try BenchGroup.count()
        }
    }

    func prepare(_ workload: Workload) async throws {
        if workload == .update { loaded = try database.use { try BenchUser.all() } }
    }

    func run(_ workload: Workload, ops: Int) async throws {
        try database.use {
            switch workload {
            case .insertTx:
                try database.transaction { for row in rows.prefix(ops) { results.rows.append(try insert(row)) } }
            case .insertAutocommit:
                for row in rows.prefix(ops) { results.rows.append(try insert(row)) }
            case .fetchAll:
                for _ in 0..<ops { results.batches.append(try BenchUser.all()) }
            case .ageQuery:
                for _ in 0..<ops {
                    results.batches.append(
                        try BenchUser.query().where("age", .greaterThan(RowValues.ageBound)).order(by: "id").fetch())
                }
            case .find:
                results.rows.reserveCapacity(ops)
                for id in 1...Int64(ops) {
                    if let user = try BenchUser.find(id) { results.rows.append(user) }
                }
            case .update:
                try database.transaction {
                    for user in loaded.prefix(ops) {
                        user.score += RowValues.scoreIncrement
                        try user.save()
                        results.changed += 1
                    }
                }
            case .delete:
                try database.transaction {
                    for id in 1...Int64(ops) where try BenchUser.delete(id: id) { results.changed += 1 }
                }
            case .lazy:
                for _ in 0..<ops {
                    let groups = try BenchGroup.query().order(by: "id").fetch()
                    for group in groups { results.batches.append(try group.members.order(by: "id").fetch()) }
                    results.groups += groups.map { ($0.id ?? -1, $0.title) }
                }
            case .eager:
                for _ in 0..<ops {
                    let groups = try BenchGroup.query().order(by: "id").includes(\.members).fetch()
                    for group in groups { results.batches.append(try group.members.fetch()) }
                    results.groups += groups.map { ($0.id ?? -1, $0.title) }
                }
            }
        }
    }

    var snapshots: (users: [UserSnapshot], groups: [(id: Int64, title: String)], changed: Int) { results.snapshots }
    var digest: Digest { results.digest }
    func close() async throws {}

    private func insert(_ row: RowValues) throws -> BenchUser {
        let user = BenchUser()
        user.name = row.name
        user.email = row.email
        user.age = row.age
        user.score = row.score
        user.active = row.active
        user.note = row.note
        user.groupId = row.groupId
        user.payload = row.payload
        try user.save()
        return user
    }
}
