import ActiveRecord
import ActiveRecordPostgreSQL
import CLibPQRaw
import Foundation

/// The PostgreSQL section's rows beyond the CRUD workloads: inserts each in its own
/// transaction, a query by a non-key column, and the relation walks, through the library and
/// through binary raw libpq. `ARBench postgres N --only <raw value>` runs one alone.
enum PostgresRow: String, CaseIterable {
    /// N inserts of a `BenchUser` into a fresh table, each its own transaction.
    case insertAutocommit
    /// N / 10 queries `WHERE "age" = $1 ORDER BY "id"` (ages 0, 1, …, 89, 0, …) on an indexed
    /// `QueryUser` table of N rows: N / 90 rows each.
    case ageQuery
    /// N / 100 groups of 100 members: the groups, then one query per group's members.
    case lazy
    /// The same groups, then all their members in one query (library: `includes(\.members)`;
    /// raw: `= ANY($1)` with a binary `int8[]`, per chunk of 10,000 ids as the library chunks).
    case eager

    var title: String {
        switch self {
        case .insertAutocommit: "insert (autocommit)"
        case .ageQuery: "age query"
        case .lazy: "lazy relation walk"
        case .eager: "eager loading"
        }
    }

    /// The operations one run of the row makes on `rowCount` rows (the per-operation column's
    /// divisor; `scripts/bench-instructions.sh` divides the same way).
    func operations(rowCount: Int) -> Int {
        switch self {
        case .insertAutocommit: rowCount
        case .ageQuery: PostgresRow.ageQueryCount(rowCount)
        case .lazy, .eager: PostgresRow.groupCount(rowCount) * RelationSection.membersPerGroup
        }
    }

    /// What one operation is.
    var operation: String {
        switch self {
        case .insertAutocommit: "insert"
        case .ageQuery: "query"
        case .lazy, .eager: "member"
        }
    }

    static func ageQueryCount(_ rowCount: Int) -> Int { max(1, rowCount / 10) }
    static func groupCount(_ rowCount: Int) -> Int { max(1, rowCount / RelationSection.membersPerGroup) }
}

extension PostgresSection {
    /// Runs `row`: fills its tables once (untimed, through the library, checked through
    /// `admin`), runs each side once untimed (a warm-up: both sides' statements prepared),
    /// then `rounds` rounds alternating which side goes first, every run checked. Returns
    /// every run's time per side (`raw`, `library`).
    func run(_ row: PostgresRow, admin: RawPostgres, progress: (String) -> Void) throws -> [String: [Duration]] {
        let schema = "arbench_\(getpid())_\(row.rawValue.lowercased())"
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        let sides: [(name: String, run: (_ counted: Bool) throws -> Duration)]
        switch row {
        case .insertAutocommit: sides = try autocommitSides(admin: admin)
        case .ageQuery: sides = try ageQuerySides(schema: schema, admin: admin)
        case .lazy, .eager: sides = try relationSides(row == .lazy ? .lazy : .eager, schema: schema, admin: admin)
        }
        if row != .insertAutocommit {
            for side in sides { _ = try side.run(false) }
        }
        var times: [String: [Duration]] = [:]
        for round in 1...rounds {
            var line = "PostgreSQL \(row.title) round \(round):"
            for side in round % 2 == 1 ? sides : sides.reversed() {
                let elapsed = try side.run(true)
                times[side.name, default: []].append(elapsed)
                line += " \(side.name) \(String(format: "%.4f", elapsed.seconds))s"
            }
            progress(line)
        }
        return times
    }

    /// Each run on a fresh table in a schema of its own: the rows inserted one by one, each
    /// its own transaction; the objects and the table checked as after the insert workload.
    private func autocommitSides(admin: RawPostgres) throws -> [(name: String, run: (Bool) throws -> Duration)] {
        var runs = 0
        func inFreshSchema(_ side: String, _ body: (String) throws -> Duration) throws -> Duration {
            runs += 1
            let schema = "arbench_\(getpid())_autocommit_\(runs)"
            try admin.execute("CREATE SCHEMA \(schema)")
            defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
            let elapsed = try body(schema)
            try checkTable(admin, schema: schema, after: .insert, side: "\(side) autocommit")
            return elapsed
        }
        let raw = { (counted: Bool) throws -> Duration in
            try inFreshSchema("raw") { schema in
                let database = try RawPostgres(schemaConnection(schema))
                try database.execute(rawPostgresCreateTableSQL)
                let store = try RawPostgresUserStore(database)
                let (elapsed, users) = try measure(side: counted ? "raw" : nil) {
                    try rows.map { row in
                        let user = RawUser(row)
                        try store.insert(user)
                        return user
                    }
                }
                try Check.records(users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: "raw autocommit", workload: .insert)
                return elapsed
            }
        }
        let library = { (counted: Bool) throws -> Duration in
            try inFreshSchema("library") { schema in
                let database = try Database(.postgres(schemaConnection(schema)))
                return try database.use {
                    try Check.count(try BenchUser.count(), 0, "library autocommit: a fresh table")
                    let (elapsed, users) = try measure(side: counted ? "library" : nil) {
                        try rows.map { row in
                            let user = LibrarySide.makeUser(row)
                            try user.save()
                            return user
                        }
                    }
                    try Check.records(
                        users.map(\.snapshot), rows: rows, scoreIncrement: 0, side: "library autocommit", workload: .insert)
                    return elapsed
                }
            }
        }
        return [("raw", raw), ("library", library)]
    }

    /// One `QueryUser` table of N rows in `schema`, filled through the library; each run reads
    /// the query count's queries in one read transaction into objects, digesting every row.
    private func ageQuerySides(schema: String, admin: RawPostgres) throws -> [(name: String, run: (Bool) throws -> Duration)] {
        let rowCount = rows.count
        let library = try Database(.postgres(schemaConnection(schema)))
        try library.use { try library.transaction { try QueryTable.insertRows(rowCount) } }
        let context = "PostgreSQL age query: QueryUser table of \(rowCount) rows"
        try Check.count(Int(try admin.integer(#"SELECT count(*) FROM \#(schema)."QueryUser""#)), rowCount, "\(context): rows")
        let matching = try admin.integer("""
            SELECT count(*) FROM \(schema)."QueryUser" WHERE "id" BETWEEN 1 AND $1 AND "name" = 'user' || "id" \
            AND "age" = "id" % 90 AND "score" = "id" * 0.5 AND "createdAt" > 0 AND "updatedAt" = "createdAt"
            """, ["\(rowCount)"])
        try Check.count(Int(matching), rowCount, "\(context): rows with the expected values")
        try Check.count(
            Int(try admin.integer(
                "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'QueryUser_age_index'", [schema])),
            1, "\(context): the age index")

        let store = try RawPostgresQueryStore(try RawPostgres(schemaConnection(schema)))
        let table = QueryTable(rowCount: rowCount, path: schema)
        let queryCount = PostgresRow.ageQueryCount(rowCount)
        var expected = ResultDigest()
        for query in 0..<queryCount { expected.add(ids: table.ids(age: query % QueryTable.ageCount)) }
        func checked(_ side: String, _ counted: Bool, _ body: () throws -> ResultDigest) throws -> Duration {
            let (elapsed, digest) = try measure(side: counted ? side : nil, body)
            try Check.require(
                digest == expected,
                "PostgreSQL \(side) age query: read \(digest.rowCount) rows (digest \(digest.hash)), "
                    + "expected \(expected.rowCount) (digest \(expected.hash))")
            return elapsed
        }
        let raw = { (counted: Bool) throws -> Duration in
            try checked("raw", counted) {
                var digest = ResultDigest()
                try store.database.read {
                    for query in 0..<queryCount {
                        for user in try store.users(age: query % QueryTable.ageCount) { digest.add(id: user.id, name: user.name) }
                    }
                }
                return digest
            }
        }
        let libraryRun = { (counted: Bool) throws -> Duration in
            try checked("library", counted) {
                try library.read {
                    var digest = ResultDigest()
                    for query in 0..<queryCount {
                        let users = try QueryUser.query().where("age", .equal(query % QueryTable.ageCount)).order(by: "id").fetch()
                        for user in users { digest.add(id: user.id ?? -1, name: user.name) }
                    }
                    return digest
                }
            }
        }
        return [("raw", raw), ("library", libraryRun)]
    }

    /// The relation tables (N / 100 groups of 100 members) in `schema`, filled through the
    /// library; each run walks them in one read transaction, its digest and SELECTs checked.
    private func relationSides(
        _ walk: RelationWalk, schema: String, admin: RawPostgres
    ) throws -> [(name: String, run: (Bool) throws -> Duration)] {
        let table = RelationTable(
            groupCount: PostgresRow.groupCount(rows.count), membersPerGroup: RelationSection.membersPerGroup, path: schema)
        let library = try Database(.postgres(schemaConnection(schema)))
        try library.use {
            try library.transaction {
                try RelationTable.insertRows(groupCount: table.groupCount, membersPerGroup: table.membersPerGroup)
            }
        }
        let context = "PostgreSQL relation tables of \(table.groupCount) groups x \(table.membersPerGroup) members"
        let groups = try admin.integer("""
            SELECT count(*) FROM \(schema)."BenchGroup" WHERE "id" BETWEEN 1 AND $1 AND "title" = 'group' || "id" \
            AND "createdAt" > 0 AND "updatedAt" = "createdAt"
            """, ["\(table.groupCount)"])
        try Check.count(Int(groups), table.groupCount, "\(context): groups with the expected values")
        let members = try admin.integer("""
            SELECT count(*) FROM \(schema)."BenchMember" WHERE "id" BETWEEN 1 AND $1 AND "name" = 'member' || "id" \
            AND "age" = "id" % 90 AND "benchGroupId" = ("id" - 1) % $2 + 1 AND "createdAt" > 0 AND "updatedAt" = "createdAt"
            """, ["\(table.memberCount)", "\(table.groupCount)"])
        try Check.count(Int(members), table.memberCount, "\(context): members with the expected values and keys")
        try Check.count(Int(try admin.integer(#"SELECT count(*) FROM \#(schema)."BenchMember""#)), table.memberCount, "\(context): members")

        let store = try RawPostgresRelationStore(try RawPostgres(schemaConnection(schema)))
        let selects = SelectCounter()
        library.trace { sql in selects.record(sql) }
        let expected = table.expectedDigest
        func checked(_ side: String, _ counted: Bool, _ body: () throws -> (RelationDigest, Int)) throws -> Duration {
            let (elapsed, (digest, selectCount)) = try measure(side: counted ? side : nil, body)
            try table.check(digest, expected: expected, selects: selectCount, walk: walk, "PostgreSQL relations: \(side) \(walk.rawValue)")
            return elapsed
        }
        let raw = { (counted: Bool) throws -> Duration in
            try checked("raw", counted) {
                var result: (RelationDigest, Int)?
                try store.database.read { result = try store.walk(walk) }
                return result!
            }
        }
        let libraryRun = { (counted: Bool) throws -> Duration in
            try checked("library", counted) {
                _ = selects.take()
                let digest = try library.read { walk == .eager ? try libraryEagerWalk() : try libraryLazyWalk() }
                return (digest, selects.take())
            }
        }
        return [("raw", raw), ("library", libraryRun)]
    }
}

extension RawPostgres {
    /// Runs prepared statement `name` with at most one binary parameter (`nil`: none), binary
    /// results; the caller clears the result.
    func runPrepared(_ name: String, _ parameter: UnsafeRawBufferPointer? = nil) throws -> OpaquePointer? {
        var value = parameter.map { UnsafePointer($0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
        var length = Int32(parameter?.count ?? 0)
        var format: Int32 = 1
        let result = PQexecPrepared(handle, name, parameter == nil ? 0 : 1, &value, &length, &format, 1)
        do {
            try check(result, name)
        } catch {
            PQclear(result)
            throw error
        }
        return result
    }

    /// Runs prepared statement `name` with one binary `int8` parameter.
    func runPrepared(_ name: String, int8 value: Int64) throws -> OpaquePointer? {
        var bigEndian = value.bigEndian
        return try withUnsafeBytes(of: &bigEndian) { try runPrepared(name, $0) }
    }
}

/// The raw side of the age query: one statement prepared once, the age sent binary, binary
/// results read into plain objects.
final class RawPostgresQueryStore {
    let database: RawPostgres

    init(_ database: RawPostgres) throws {
        self.database = database
        try database.prepare(
            "age", #"SELECT \#(QueryTable.rawSelectList) FROM "QueryUser" WHERE "age" = $1 ORDER BY "id""#, types: [20])
    }

    /// The users of this age, in id order.
    func users(age: Int) throws -> [RawQueryUser] {
        let result = try database.runPrepared("age", int8: Int64(age))
        defer { PQclear(result) }
        let count = PQntuples(result)
        var users: [RawQueryUser] = []
        users.reserveCapacity(Int(count))
        for row in 0..<count { users.append(RawQueryUser(result, row: row)) }
        return users
    }
}

/// The raw side of the relation walks: the groups' statement and the per-group one prepared
/// once (a binary `int8` parameter), and for eager loading one statement for any number of
/// groups, `"benchGroupId" = ANY($1)` with the ids as one binary `int8[]` (one parameter, so
/// one prepared statement serves every batch size); binary results into plain objects.
final class RawPostgresRelationStore: RawRelationReading {
    let database: RawPostgres
    /// The `int8[]` parameter's bytes, reused from batch to batch.
    private var array = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 8)
    private var arrayCapacity = 1024

    init(_ database: RawPostgres) throws {
        self.database = database
        try database.prepare("groups", #"SELECT \#(RelationTable.rawGroupSelectList) FROM "BenchGroup" ORDER BY "id""#, types: [])
        try database.prepare("members", #"""
            SELECT \#(RelationTable.rawMemberSelectList) FROM "BenchMember" WHERE "benchGroupId" = $1 ORDER BY "id"
            """#, types: [20])
        try database.prepare("membersOfGroups", #"""
            SELECT \#(RelationTable.rawMemberSelectList) FROM "BenchMember" \#
            WHERE "benchGroupId" = ANY($1) ORDER BY "benchGroupId", "id"
            """#, types: [1016])
    }

    deinit { array.deallocate() }

    /// Every group, in id order.
    func groups() throws -> [RawGroup] {
        let result = try database.runPrepared("groups")
        defer { PQclear(result) }
        return (0..<PQntuples(result)).map { RawGroup(result, row: $0) }
    }

    /// The members of one group, in id order.
    func members(of groupID: Int64) throws -> [RawMember] {
        let result = try database.runPrepared("members", int8: groupID)
        defer { PQclear(result) }
        let count = PQntuples(result)
        var members: [RawMember] = []
        members.reserveCapacity(Int(count))
        for row in 0..<count { members.append(RawMember(result, row: row)) }
        return members
    }

    /// The members of these groups, by group id, each group's in id order: one query per chunk
    /// of ``RelationTable/idsPerQuery`` ids. Returns them and how many queries ran.
    func members(ofGroups groupIDs: [Int64]) throws -> (members: [Int64: [RawMember]], queries: Int) {
        var members: [Int64: [RawMember]] = [:]
        var queries = 0
        for start in stride(from: 0, to: groupIDs.count, by: RelationTable.idsPerQuery) {
            let chunk = groupIDs[start..<min(start + RelationTable.idsPerQuery, groupIDs.count)]
            let result = try database.runPrepared("membersOfGroups", int8Array(chunk))
            defer { PQclear(result) }
            for row in 0..<PQntuples(result) {
                let member = RawMember(result, row: row)
                members[member.benchGroupId, default: []].append(member)
            }
            queries += 1
        }
        return (members, queries)
    }

    /// `ids` as a binary one-dimensional `int8[]` (dimensions, no nulls, element type, length,
    /// lower bound 1, then each element's length and bytes), in the reused buffer.
    private func int8Array(_ ids: ArraySlice<Int64>) -> UnsafeRawBufferPointer {
        let byteCount = 20 + 12 * ids.count
        if byteCount > arrayCapacity {
            array.deallocate()
            arrayCapacity = byteCount
            array = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 8)
        }
        for (offset, field) in [Int32(1), 0, 20, Int32(ids.count), 1].enumerated() {
            array.storeBytes(of: field.bigEndian, toByteOffset: 4 * offset, as: Int32.self)
        }
        var offset = 20
        for id in ids {
            array.storeBytes(of: Int32(8).bigEndian, toByteOffset: offset, as: Int32.self)
            array.storeBytes(of: id.bigEndian, toByteOffset: offset + 4, as: Int64.self)
            offset += 12
        }
        return UnsafeRawBufferPointer(start: array, count: byteCount)
    }
}
