import ActiveRecord
import CSQLiteRaw
import Foundation
import GRDB
import Synchronization

/// How a side reads each group's members.
enum RelationWalk: String, CaseIterable {
    /// One query for the groups, then one per group (N + 1 queries).
    case lazy
    /// One query for the groups, one for all their members (per chunk of 10,000 ids).
    case eager
}

/// One side of the relation benchmark: loads every group in id order, then
/// walks each one's members, digesting every record.
struct RelationSide {
    /// `raw`, `library` or `GRDB`.
    let name: String
    let walk: RelationWalk
    /// Runs the walk once; returns its digest and how many SELECTs it ran.
    let run: () throws -> (digest: RelationDigest, selects: Int)
}

/// Counts the `SELECT` statements a tracer reports, except reads of the
/// schema (GRDB reads `sqlite_master` once per connection, on first use);
/// safe to call from any thread.
final class SelectCounter: Sendable {
    private let count = Mutex(0)

    /// Counts `sql` when it is a `SELECT` that does not read the schema. The library's tracer
    /// runs inside its counted work, so the search is on UTF-8 bytes: Foundation's
    /// `contains` went through `NSString` (~950 instructions a member in the lazy walk).
    func record(_ sql: String) {
        if sql.hasPrefix("SELECT"), !Self.mentions(sql, "sqlite_master"), !Self.mentions(sql, "FROM pragma_") {
            count.withLock { $0 += 1 }
        }
    }

    /// Whether `word` occurs in `sql`, compared byte by byte.
    private static func mentions(_ sql: String, _ word: StaticString) -> Bool {
        var sql = sql
        return sql.withUTF8 { text in
            let length = word.utf8CodeUnitCount
            guard length > 0, text.count >= length else { return false }
            let first = word.utf8Start.pointee
            for start in 0...(text.count - length) where text[start] == first {
                if memcmp(text.baseAddress! + start, word.utf8Start, length) == 0 { return true }
            }
            return false
        }
    }

    /// The count since the last call, which resets it.
    func take() -> Int {
        count.withLock { count in
            defer { count = 0 }
            return count
        }
    }
}

/// Hand-written sqlite3 access to the groups and their members: statements
/// prepared once and reused, rows read into plain objects.
final class RawRelationStore {
    /// The lazy side's per-group statement (its plan is checked to use the key's index).
    static let membersOfGroupSQL = #"""
        SELECT \#(RelationTable.rawMemberSelectList) FROM "BenchMember" WHERE "benchGroupId" = ? ORDER BY "id"
        """#

    let database: RawDatabase
    private let groupsStatement: RawStatement
    private let membersOfGroupStatement: RawStatement
    /// The eager side's `IN (?, …)` statements, by their number of ids.
    private var membersOfGroupsStatements: [Int: RawStatement] = [:]

    init(_ database: RawDatabase) throws {
        self.database = database
        groupsStatement = try database.prepare(
            #"SELECT \#(RelationTable.rawGroupSelectList) FROM "BenchGroup" ORDER BY "id""#)
        membersOfGroupStatement = try database.prepare(RawRelationStore.membersOfGroupSQL)
    }

    /// Every group, in id order.
    func groups() throws -> [RawGroup] {
        defer { groupsStatement.reset() }
        var groups: [RawGroup] = []
        while try groupsStatement.step() { groups.append(RawGroup(groupsStatement)) }
        return groups
    }

    /// The members of one group, in id order.
    func members(of groupID: Int64) throws -> [RawMember] {
        let statement = membersOfGroupStatement
        defer { statement.reset() }
        let code = sqlite3_bind_int64(statement.handle, 1, groupID)
        guard code == SQLITE_OK else { throw database.error(code, "bind to \(statement.sql)") }
        var members: [RawMember] = []
        while try statement.step() { members.append(RawMember(statement)) }
        return members
    }

    /// The members of these groups, by group id, each group's in id order:
    /// one query per chunk of ``RelationTable/idsPerQuery`` ids. Returns them
    /// and how many queries ran.
    func members(ofGroups groupIDs: [Int64]) throws -> (members: [Int64: [RawMember]], queries: Int) {
        var members: [Int64: [RawMember]] = [:]
        var queries = 0
        for start in stride(from: 0, to: groupIDs.count, by: RelationTable.idsPerQuery) {
            let chunk = groupIDs[start..<min(start + RelationTable.idsPerQuery, groupIDs.count)]
            let statement = try membersOfGroupsStatement(chunk.count)
            defer { statement.reset() }
            for (offset, id) in chunk.enumerated() {
                let code = sqlite3_bind_int64(statement.handle, Int32(offset + 1), id)
                guard code == SQLITE_OK else { throw database.error(code, "bind to IN (...)") }
            }
            while try statement.step() {
                let member = RawMember(statement)
                members[member.benchGroupId, default: []].append(member)
            }
            queries += 1
        }
        return (members, queries)
    }

    /// The statement selecting the members of `count` groups, prepared on first use.
    private func membersOfGroupsStatement(_ count: Int) throws -> RawStatement {
        if let statement = membersOfGroupsStatements[count] { return statement }
        let placeholders = Array(repeating: "?", count: count).joined(separator: ", ")
        let statement = try database.prepare(#"""
            SELECT \#(RelationTable.rawMemberSelectList) FROM "BenchMember" \#
            WHERE "benchGroupId" IN (\#(placeholders)) ORDER BY "benchGroupId", "id"
            """#)
        membersOfGroupsStatements[count] = statement
        return statement
    }
}

/// What a raw side's relation store reads, so that one walk runs on either engine.
protocol RawRelationReading {
    /// Every group, in id order.
    func groups() throws -> [RawGroup]
    /// The members of one group, in id order.
    func members(of groupID: Int64) throws -> [RawMember]
    /// The members of these groups by group id, and how many queries ran.
    func members(ofGroups groupIDs: [Int64]) throws -> (members: [Int64: [RawMember]], queries: Int)
}

extension RawRelationReading {
    /// One walk, in the caller's read transaction: per-group queries, or one `IN (...)` grouped
    /// into a dictionary by hand; its digest and how many SELECTs it ran.
    func walk(_ walk: RelationWalk) throws -> (RelationDigest, Int) {
        var digest = RelationDigest()
        let groups = try groups()
        switch walk {
        case .lazy:
            for group in groups {
                digest.add(group: group.id, title: group.title)
                for member in try members(of: group.id) {
                    digest.add(member: member.id, name: member.name, age: member.age)
                }
            }
            return (digest, 1 + groups.count)
        case .eager:
            let (members, queries) = try members(ofGroups: groups.map(\.id))
            for group in groups {
                digest.add(group: group.id, title: group.title)
                for member in members[group.id] ?? [] {
                    digest.add(member: member.id, name: member.name, age: member.age)
                }
            }
            return (digest, 1 + queries)
        }
    }
}

extension RawRelationStore: RawRelationReading {}

/// The three connections to one ``RelationTable`` file, opened once and
/// reused by every round, and the six sides on them. The library's and GRDB's
/// SELECTs are counted through their tracers on every run (a negligible cost:
/// one call per statement); the raw sides count their own.
struct RelationConnections {
    let library: ActiveRecord.Database
    let raw: RawRelationStore
    let grdb: DatabaseQueue
    private let librarySelects = SelectCounter()
    private let grdbSelects = SelectCounter()

    init(_ table: RelationTable) throws {
        library = try Database(.file(table.path))
        raw = try RawRelationStore(try RawDatabase(path: table.path))
        grdb = try DatabaseQueue(path: table.path, configuration: GRDBSide.configuration)
        library.trace { [librarySelects] sql in librarySelects.record(sql) }
    }

    /// Raw, library and GRDB sides, lazy then eager each.
    var sides: [RelationSide] {
        [rawSide(.lazy), rawSide(.eager), librarySide(.lazy), librarySide(.eager), grdbSide(.lazy), grdbSide(.eager)]
    }

    /// Raw sqlite3: per-group statement, or one `IN (...)` grouped into a dictionary by hand.
    private func rawSide(_ walk: RelationWalk) -> RelationSide {
        RelationSide(name: "raw", walk: walk) { [raw] in
            var result: (RelationDigest, Int)?
            try raw.database.read { result = try raw.walk(walk) }
            return result!
        }
    }

    /// The library: `BenchGroup.query()`, with `.includes(\.members)` when eager,
    /// then `group.members.fetch()` for each group.
    private func librarySide(_ walk: RelationWalk) -> RelationSide {
        RelationSide(name: "library", walk: walk) { [library, librarySelects] in
            _ = librarySelects.take()
            let digest = try library.read { walk == .eager ? try libraryEagerWalk() : try libraryLazyWalk() }
            return (digest, librarySelects.take())
        }
    }

    /// GRDB: `request(for:)` per group, or `including(all:)`; each walk in one `read`.
    private func grdbSide(_ walk: RelationWalk) -> RelationSide {
        RelationSide(name: "GRDB", walk: walk) { [grdb, grdbSelects] in
            let digest = try grdb.read { db in
                _ = grdbSelects.take()
                db.trace { event in
                    if case .statement(let statement) = event { grdbSelects.record(statement.sql) }
                }
                defer { db.trace(options: .statement, nil) }
                var digest = RelationDigest()
                let groups = GRDBGroup.order(GRDB.Column("id"))
                switch walk {
                case .lazy:
                    for group in try groups.fetchAll(db) {
                        digest.add(group: group.id, title: group.title)
                        for member in try group.request(for: GRDBGroup.members).fetchAll(db) {
                            digest.add(member: member.id, name: member.name, age: member.age)
                        }
                    }
                case .eager:
                    let request = groups.including(all: GRDBGroup.members).asRequest(of: GRDBGroupWithMembers.self)
                    for entry in try request.fetchAll(db) {
                        digest.add(group: entry.group.id, title: entry.group.title)
                        for member in entry.members {
                            digest.add(member: member.id, name: member.name, age: member.age)
                        }
                    }
                }
                return digest
            }
            return (digest, grdbSelects.take())
        }
    }
}

/// The library's lazy walk: the groups, then one query per group's members.
/// (The walks are separate, never-inlined functions so that a profiler can
/// tell them apart, e.g. with callgrind's `--toggle-collect='*libraryEagerWalk*'`.)
@inline(never)
func libraryLazyWalk() throws -> RelationDigest {
    try libraryWalk(BenchGroup.query())
}

/// The library's eager walk: the groups and all their members, then each group's from memory.
@inline(never)
func libraryEagerWalk() throws -> RelationDigest {
    try libraryWalk(BenchGroup.query().includes(\.members))
}

/// Fetches `query`'s groups and digests each one with its members, inside `Database.use`.
private func libraryWalk(_ query: ActiveRecord.Query<BenchGroup>) throws -> RelationDigest {
    var digest = RelationDigest()
    for group in try query.fetch() {
        digest.add(group: group.id ?? -1, title: group.title)
        for member in try group.members.fetch() {
            digest.add(member: member.id ?? -1, name: member.name, age: member.age)
        }
    }
    return digest
}
