import ActiveRecord
import CSQLiteRaw
import Foundation

/// The library's owner model for the relation benchmark: group `g` (1-based)
/// has title `group<g>`; its members hold its id in `"benchGroupId"`.
final class BenchGroup: Model {
    @Column var title: String = ""
    @HasMany var members: Query<BenchMember>
}

/// The library's child model: member `i` (1-based) has name `member<i>`, age
/// `i % 90` and belongs to group `(i - 1) % G + 1` of `G` groups. The
/// belongs-to declares the indexed column `"benchGroupId"`.
final class BenchMember: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @BelongsTo var benchGroup: BenchGroup?
}

/// The raw side's plain object for one `BenchGroup` row.
final class RawGroup: RawRecord {
    let title: String

    /// Reads the current row of a statement that selected ``RelationTable/rawGroupSelectList``.
    override init(_ statement: RawStatement) {
        title = statement.text(3)
        super.init(statement)
    }

    /// Reads row `row` of a binary libpq result that selected ``RelationTable/rawGroupSelectList``.
    override init(_ result: OpaquePointer?, row: Int32) {
        title = BinaryResult.text(result, row, 3)
        super.init(result, row: row)
    }
}

/// The raw side's plain object for one `BenchMember` row.
final class RawMember: RawRecord {
    let name: String
    let age: Int
    let benchGroupId: Int64

    /// Reads the current row of a statement that selected ``RelationTable/rawMemberSelectList``.
    override init(_ statement: RawStatement) {
        let handle = statement.handle
        name = statement.text(3)
        age = Int(sqlite3_column_int64(handle, 4))
        benchGroupId = sqlite3_column_int64(handle, 5)
        super.init(statement)
    }

    /// Reads row `row` of a binary libpq result that selected ``RelationTable/rawMemberSelectList``.
    override init(_ result: OpaquePointer?, row: Int32) {
        name = BinaryResult.text(result, row, 3)
        age = Int(BinaryResult.int8(result, row, 4))
        benchGroupId = BinaryResult.int8(result, row, 5)
        super.init(result, row: row)
    }
}

/// The `BenchGroup` and `BenchMember` tables of one database file: filling
/// them through the library, and what every side must read from them.
struct RelationTable {
    /// Group count: ids 1...groupCount.
    let groupCount: Int
    /// Members per group: member ids 1...(groupCount * membersPerGroup).
    let membersPerGroup: Int
    /// The database file, on the library's pragmas (WAL).
    let path: String

    /// The library's select lists, in its column order, for the raw side.
    static let rawGroupSelectList = #""id", "createdAt", "updatedAt", "title""#
    static let rawMemberSelectList = #""id", "createdAt", "updatedAt", "name", "age", "benchGroupId""#

    /// The most ids in one `IN (...)`: the library's eager loading chunks them so, and the raw side too.
    static let idsPerQuery = 10_000

    var memberCount: Int { groupCount * membersPerGroup }

    /// Statements an eager walk runs: the groups, then one per chunk of group ids.
    var eagerQueryCount: Int { 1 + (groupCount + RelationTable.idsPerQuery - 1) / RelationTable.idsPerQuery }

    /// Creates the tables through the library (with the key's index), inserts
    /// the groups, then the members in id order (so each group's members are
    /// spread over the table: group `g` holds ids `g`, `g + G`, `g + 2G`, …),
    /// all in one transaction; checkpoints the WAL into the main file and checks
    /// the result with a separate raw connection.
    static func fill(groupCount: Int, membersPerGroup: Int, path: String) throws -> RelationTable {
        let raw = try TableFile.fill(path: path) { try insertRows(groupCount: groupCount, membersPerGroup: membersPerGroup) }
        let table = RelationTable(groupCount: groupCount, membersPerGroup: membersPerGroup, path: path)
        try table.check(raw)
        return table
    }

    /// Inserts the groups, then the members in id order, through the library on the current database.
    static func insertRows(groupCount: Int, membersPerGroup: Int) throws {
        var groups: [BenchGroup] = []
        for g in 1...groupCount { groups.append(try BenchGroup.create(["title": "group\(g)"])) }
        for i in 1...(groupCount * membersPerGroup) {
            let member = BenchMember()
            member.name = "member\(i)"
            member.age = i % 90
            member.benchGroup = groups[(i - 1) % groupCount]
            try member.save()
        }
    }

    /// Checks the file through `raw`: row counts, every row's values and key,
    /// and that the per-group query uses the key's index.
    private func check(_ raw: RawDatabase) throws {
        let context = "relation tables of \(groupCount) groups x \(membersPerGroup) members"
        try Check.count(Int(try raw.integer(#"SELECT count(*) FROM "BenchGroup""#)), groupCount, "\(context): groups")
        try Check.count(Int(try raw.integer(#"SELECT count(*) FROM "BenchMember""#)), memberCount, "\(context): members")
        let groups = try raw.integer("""
            SELECT count(*) FROM "BenchGroup" WHERE "id" BETWEEN 1 AND ?1 AND "title" = 'group' || "id" \
            AND "createdAt" > 0 AND "updatedAt" = "createdAt"
            """, [Double(groupCount)])
        try Check.count(Int(groups), groupCount, "\(context): groups with the expected values")
        let members = try raw.integer("""
            SELECT count(*) FROM "BenchMember" WHERE "id" BETWEEN 1 AND ?1 AND "name" = 'member' || "id" \
            AND "age" = "id" % 90 AND "benchGroupId" = ("id" - 1) % ?2 + 1 \
            AND "createdAt" > 0 AND "updatedAt" = "createdAt"
            """, [Double(memberCount), Double(groupCount)])
        try Check.count(Int(members), memberCount, "\(context): members with the expected values and keys")
        try Check.plan(
            of: RawRelationStore.membersOfGroupSQL, on: raw, uses: "BenchMember_benchGroupId_index",
            "\(context): the per-group query")
    }

    /// Checks what a walk read (`expected`: ``expectedDigest``) and how many SELECTs it ran;
    /// failures start with `context`.
    func check(_ digest: RelationDigest, expected: RelationDigest, selects: Int, walk: RelationWalk, _ context: String) throws {
        try Check.count(digest.groups.rowCount, groupCount, "\(context): groups read")
        try Check.count(digest.members.rowCount, memberCount, "\(context): members read")
        try Check.count(digest.ageSum, expected.ageSum, "\(context): sum of the members' ages")
        try Check.require(
            digest == expected,
            "\(context): read groups \(digest.groups.hash), members \(digest.members.hash), expected "
                + "\(expected.groups.hash), \(expected.members.hash) (a record out of order or in the wrong group)")
        try Check.count(selects, walk == .eager ? eagerQueryCount : 1 + groupCount, "\(context): SELECT statements run")
    }

    /// What a walk must read: every group in id order, each followed by its members in id order.
    var expectedDigest: RelationDigest {
        var digest = RelationDigest()
        for g in 1...groupCount {
            digest.add(group: Int64(g), title: "group\(g)")
            for k in 0..<membersPerGroup {
                let id = g + k * groupCount
                digest.add(member: Int64(id), name: "member\(id)", age: id % 90)
            }
        }
        return digest
    }
}

/// What a walk read, in order: a digest of the groups (id, title), one of
/// the members (id, name) and the sum of the members' ages. Computing it
/// touches every record, and the checks compare it with the expected one.
struct RelationDigest: Equatable {
    private(set) var groups = ResultDigest()
    private(set) var members = ResultDigest()
    private(set) var ageSum = 0

    /// Adds one group; its members follow.
    @inline(__always)
    mutating func add(group id: Int64, title: String) {
        groups.add(id: id, name: title)
    }

    /// Adds one member of the last group added.
    @inline(__always)
    mutating func add(member id: Int64, name: String, age: Int) {
        members.add(id: id, name: name)
        ageSum += age
    }
}
