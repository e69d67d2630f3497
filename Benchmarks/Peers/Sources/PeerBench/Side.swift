import Foundation

/// One client of the comparison: connects, runs a workload's operations, and gives back what it
/// read for the checks.
protocol PeerSide: AnyObject {
    /// `libpq`, `library`, `nio` or `fluent`: the command line's and the report's name.
    static var name: String { get }
    /// Connects (untimed, and the same in a counted run with zero operations).
    init(server: Server, shape: Shape) async throws
    /// Untimed: what the workload starts from (the update loads every row).
    func prepare(_ workload: Workload) async throws
    /// The timed part: `ops` operations of `workload`.
    func run(_ workload: Workload, ops: Int) async throws
    /// What the run read, in order, for the full checks (untimed).
    var snapshots: (users: [UserSnapshot], groups: [(id: Int64, title: String)], changed: Int) { get }
    /// The cheap digest a counted run prints.
    var digest: Digest { get }
    func close() async throws
}

/// A row a side decoded, as the checks see it.
protocol UserRow {
    var snapshot: UserSnapshot { get }
    var digestID: Int64 { get }
    var digestAge: Int { get }
}

/// What a side's run read: single rows (finds), whole results (fetches, queries, each group's
/// members), the groups it walked, and the rows its statements said they changed.
struct ReadLog<User: UserRow> {
    var rows: [User] = []
    var batches: [[User]] = []
    var groups: [(id: Int64, title: String)] = []
    var changed = 0

    /// Every row read, in order (the single rows, then the batches'), the groups and the count.
    var snapshots: (users: [UserSnapshot], groups: [(id: Int64, title: String)], changed: Int) {
        (rows.map(\.snapshot) + batches.flatMap { $0.map(\.snapshot) }, groups, changed)
    }

    var digest: Digest { Digest(self) }
}

/// A cheap digest of a log (count, sum of ids, sum of ages, groups, changed rows): what a counted
/// run prints, since a full snapshot would cost instructions inside the count.
struct Digest: Equatable, CustomStringConvertible {
    var rows = 0
    var idSum: Int64 = 0
    var ageSum = 0
    var groups = 0
    var changed = 0

    init(rows: Int = 0, idSum: Int64 = 0, ageSum: Int = 0, groups: Int = 0, changed: Int = 0) {
        self.rows = rows
        self.idSum = idSum
        self.ageSum = ageSum
        self.groups = groups
        self.changed = changed
    }

    init<User>(_ log: ReadLog<User>) {
        for row in log.rows { add(row) }
        for batch in log.batches { for row in batch { add(row) } }
        groups = log.groups.count
        changed = log.changed
    }

    private mutating func add(_ row: some UserRow) {
        rows += 1
        idSum &+= row.digestID
        ageSum &+= row.digestAge
    }

    var description: String { "rows=\(rows) idSum=\(idSum) ageSum=\(ageSum) groups=\(groups) changed=\(changed)" }

    /// Parses ``description``.
    init?(parsing line: Substring) {
        var values: [String: Int64] = [:]
        for field in line.split(separator: " ") {
            let parts = field.split(separator: "=")
            guard parts.count == 2, let value = Int64(parts[1]) else { return nil }
            values[String(parts[0])] = value
        }
        guard let rows = values["rows"], let idSum = values["idSum"], let ageSum = values["ageSum"],
              let groups = values["groups"], let changed = values["changed"] else { return nil }
        self.init(rows: Int(rows), idSum: idSum, ageSum: Int(ageSum), groups: Int(groups), changed: Int(changed))
    }
}

/// The server every side connects to: a libpq `key=value` connection string with `host` a Unix
/// socket directory (what scripts/with-postgres.sh gives), and what PostgresNIO needs of it.
struct Server {
    let conninfo: String

    private func value(_ key: String) -> String? {
        conninfo.split(separator: " ").first { $0.hasPrefix("\(key)=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    var user: String { value("user") ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres" }
    var database: String { value("dbname") ?? user }
    var port: Int { value("port").flatMap(Int.init) ?? 5432 }
    /// The server's Unix socket (`host` must be a directory).
    var socketPath: String {
        get throws {
            guard let host = value("host"), host.hasPrefix("/") else {
                throw PeerError("the connection string \(conninfo) names no Unix socket directory (host=/…): PostgresNIO and Fluent connect through it")
            }
            return "\(host)/.s.PGSQL.\(port)"
        }
    }
}

struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The statements' select list, in the library's column order.
let selectList = #""id", "createdAt", "updatedAt", "name", "email", "age", "score", "active", "note", "groupId", "payload""#
