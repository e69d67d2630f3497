import ActiveRecord
import Foundation

/// The library side of every workload: `BenchUser` records through
/// ActiveRecord's public API, on a `Database` used for the round's scope.
struct LibrarySide: BenchSide {
    var name = "library"
    let rows: [RowValues]
    /// Where the round's database is, from the harness's path (a file; the PostgreSQL
    /// section passes a schema name and opens the server).
    var location: (String) -> DatabaseLocation = { .file($0) }
    /// How many times a round fetches all records, keeping the best time (a fetch of a
    /// table on a server takes milliseconds: one run is mostly noise).
    var fetchRepeats = 1

    func run(_ workload: Workload, path: String) throws -> Duration {
        let database = try Database(location(path))
        return try database.use {
            // Untimed: reflect the model and create the table (the raw side
            // creates its table before timing too).
            try Check.count(try BenchUser.count(), 0, "\(name) \(workload.title): a fresh table")
            if !workload.inserts {
                _ = try insertAll(database)  // untimed pre-fill
            }
            return try run(workload, on: database)
        }
    }

    /// The workload's timed part and its checks, inside `database.use`.
    private func run(_ workload: Workload, on database: Database) throws -> Duration {
        switch workload {
        case .insert:
            let (elapsed, users) = try measure(side: name) { try insertAll(database) }
            try Check.records(users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: name, workload: workload)
            return elapsed
        case .insertAll:
            let (elapsed, users) = try measure(side: name) {
                let users = rows.map(Self.makeUser)
                try BenchUser.insertAll(users)
                return users
            }
            try Check.records(users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: name, workload: workload)
            return elapsed
        case .fetchAll:
            var best: Duration?
            for _ in 0..<fetchRepeats {
                let (elapsed, users) = try measure(side: name) { try BenchUser.all() }
                try Check.records(users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: name, workload: workload)
                best = min(best ?? elapsed, elapsed)
            }
            return best ?? .zero
        case .find:
            let (elapsed, found) = try measure(side: name) {
                var found: [BenchUser?] = []
                found.reserveCapacity(rows.count)
                try database.read {
                    for id in 1...Int64(rows.count) { found.append(try BenchUser.find(id)) }
                }
                return found
            }
            try Check.found(found.map { $0?.snapshot }, rows: rows, side: name)
            return elapsed
        case .updateScore:
            let users = try BenchUser.all()
            let (elapsed, _) = try measure(side: name) {
                try database.transaction {
                    for user in users {
                        user.score += RowValues.scoreIncrement
                        try user.save()
                    }
                }
            }
            try Check.count(users.filter(\.hasChanges).count, 0, "\(name) \(workload.title): records left unsaved")
            try Check.records(
                users.map(\.snapshot), rows: rows, scoreIncrement: RowValues.scoreIncrement, side: name, workload: workload)
            return elapsed
        case .destroy:
            let users = try BenchUser.all()
            try Check.count(users.count, rows.count, "\(name) \(workload.title): records loaded before destroying")
            let (elapsed, _) = try measure(side: name) {
                try database.transaction {
                    for user in users { try user.destroy() }
                }
            }
            try Check.count(users.filter(\.isDestroyed).count, rows.count, "\(name) \(workload.title): records marked destroyed")
            return elapsed
        case .deleteByID:
            let (elapsed, deleted) = try measure(side: name) {
                var deleted = 0
                try database.transaction {
                    for id in 1...Int64(rows.count) where try BenchUser.delete(id: id) { deleted += 1 }
                }
                return deleted
            }
            try Check.count(deleted, rows.count, "\(name) \(workload.title): rows deleted")
            return elapsed
        }
    }

    /// Inserts every row in one transaction, as new `BenchUser` records.
    private func insertAll(_ database: Database) throws -> [BenchUser] {
        var users: [BenchUser] = []
        users.reserveCapacity(rows.count)
        try database.transaction {
            for row in rows {
                let user = Self.makeUser(row)
                try user.save()
                users.append(user)
            }
        }
        return users
    }

    /// A new `BenchUser` holding `row`.
    static func makeUser(_ row: RowValues) -> BenchUser {
        let user = BenchUser()
        user.name = row.name
        user.email = row.email
        user.age = row.age
        user.score = row.score
        user.active = row.active
        user.note = row.note
        user.groupId = row.groupId
        user.payload = row.payload
        return user
    }
}
