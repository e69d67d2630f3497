import CLibPQPeers
import Foundation

/// One libpq connection, for the raw side and for the harness's own set-up and checks.
final class LibPQConnection {
    let handle: OpaquePointer

    init(_ conninfo: String) throws {
        guard let handle = PQconnectdb(conninfo) else { throw PeerError("PQconnectdb: out of memory") }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PeerError("libpq cannot connect to \(conninfo): \(message)")
        }
        self.handle = handle
    }

    deinit { PQfinish(handle) }

    /// Runs SQL without parameters (several statements allowed); fails unless it succeeded.
    func execute(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql)
    }

    /// The first column of the first row of `sql`, as text.
    func text(_ sql: String) throws -> String {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql)
        guard PQntuples(result) == 1 else { throw PeerError("\(sql): no row") }
        return String(cString: PQgetvalue(result, 0, 0))
    }

    func check(_ result: OpaquePointer?, _ what: String) throws {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw PeerError("\(what): \(String(cString: PQerrorMessage(handle)))")
        }
    }

    func prepare(_ name: String, _ sql: String, types: [Oid]) throws {
        let result = PQprepare(handle, name, sql, Int32(types.count), types)
        defer { PQclear(result) }
        try check(result, sql)
    }
}

/// The parameters of one statement in binary form (network byte order; text as its UTF-8 bytes),
/// in buffers reused from one statement to the next.
final class BinaryParameters {
    private var bytes: UnsafeMutableRawPointer
    private var capacity = 4096
    private var used = 0
    private(set) var count = 0
    /// Where each value starts in `bytes` (-1: NULL), and its length.
    private let offsets = UnsafeMutablePointer<Int>.allocate(capacity: 16)
    private let lengths = UnsafeMutablePointer<Int32>.allocate(capacity: 16)
    private let formats = UnsafeMutablePointer<Int32>.allocate(capacity: 16)
    private let values = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: 16)

    init() {
        bytes = .allocate(byteCount: capacity, alignment: 8)
        formats.initialize(repeating: 1, count: 16)
    }

    deinit {
        bytes.deallocate()
        offsets.deallocate()
        lengths.deallocate()
        formats.deallocate()
        values.deallocate()
    }

    func reset() {
        used = 0
        count = 0
    }

    /// Room for `length` more bytes; returns where they go.
    private func reserve(_ length: Int) -> UnsafeMutableRawPointer {
        precondition(count < 16, "BinaryParameters holds at most 16 values")
        if used + length > capacity {
            while used + length > capacity { capacity *= 2 }
            let larger = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            larger.copyMemory(from: bytes, byteCount: used)
            bytes.deallocate()
            bytes = larger
        }
        offsets[count] = used
        lengths[count] = Int32(length)
        count += 1
        defer { used += length }
        return bytes + used
    }

    func int8(_ value: Int64) { reserve(8).storeBytes(of: value.bigEndian, as: Int64.self) }
    func float8(_ value: Double) { reserve(8).storeBytes(of: value.bitPattern.bigEndian, as: UInt64.self) }
    func bool(_ value: Bool) { reserve(1).storeBytes(of: value ? 1 : 0, as: UInt8.self) }

    func text(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            let target = reserve(utf8.count)
            if let base = utf8.baseAddress { target.copyMemory(from: base, byteCount: utf8.count) }
        }
    }

    func bytea(_ value: Data) {
        let target = reserve(value.count)
        value.withUnsafeBytes { if let base = $0.baseAddress { target.copyMemory(from: base, byteCount: $0.count) } }
    }

    func null() {
        precondition(count < 16, "BinaryParameters holds at most 16 values")
        offsets[count] = -1
        lengths[count] = 0
        count += 1
    }

    /// A one-dimensional `int8[]` without NULLs, in the array's binary form.
    func int8Array(_ elements: [Int64]) {
        let target = reserve(20 + 12 * elements.count)
        let header: [Int32] = [1, 0, 20, Int32(elements.count), 1]  // dimensions, has NULLs, element type, length, lower bound
        for (index, value) in header.enumerated() { target.storeBytes(of: value.bigEndian, toByteOffset: 4 * index, as: Int32.self) }
        for (index, element) in elements.enumerated() {
            target.storeBytes(of: Int32(8).bigEndian, toByteOffset: 20 + 12 * index, as: Int32.self)
            target.storeBytes(of: element.bigEndian, toByteOffset: 24 + 12 * index, as: Int64.self)
        }
    }

    /// Runs prepared statement `name` with these parameters, asking for binary results.
    func run(_ name: String, on connection: LibPQConnection) throws -> OpaquePointer? {
        for index in 0..<count {
            values[index] = offsets[index] < 0 ? nil : UnsafeRawPointer(bytes + offsets[index]).assumingMemoryBound(to: CChar.self)
        }
        let result = PQexecPrepared(connection.handle, name, Int32(count), values, lengths, formats, 1)
        do {
            try connection.check(result, name)
        } catch {
            PQclear(result)
            throw error
        }
        return result
    }
}

/// Reads binary result values.
struct BinaryRow {
    let result: OpaquePointer?
    let row: Int32

    private func value(_ column: Int32) -> UnsafeRawPointer { UnsafeRawPointer(PQgetvalue(result, row, column)!) }
    func isNull(_ column: Int32) -> Bool { PQgetisnull(result, row, column) == 1 }
    func int8(_ column: Int32) -> Int64 { Int64(bigEndian: value(column).loadUnaligned(as: Int64.self)) }
    func float8(_ column: Int32) -> Double { Double(bitPattern: UInt64(bigEndian: value(column).loadUnaligned(as: UInt64.self))) }
    func bool(_ column: Int32) -> Bool { value(column).load(as: UInt8.self) != 0 }
    func text(_ column: Int32) -> String {
        String(decoding: UnsafeRawBufferPointer(start: value(column), count: Int(PQgetlength(result, row, column))), as: UTF8.self)
    }
    func bytea(_ column: Int32) -> Data { Data(bytes: value(column), count: Int(PQgetlength(result, row, column))) }
    func optionalFloat8(_ column: Int32) -> Double? { isNull(column) ? nil : float8(column) }
}

/// The raw side's plain value for one row.
struct LibPQUser: UserRow {
    var id: Int64 = 0
    var createdAt: Double? = nil
    var updatedAt: Double? = nil
    var name: String
    var email: String
    var age: Int
    var score: Double
    var active: Bool
    var note: String?
    var groupId: Int64
    var payload: Data

    init(_ row: RowValues) {
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
    init(_ row: BinaryRow) {
        id = row.int8(0)
        createdAt = row.optionalFloat8(1)
        updatedAt = row.optionalFloat8(2)
        name = row.text(3)
        email = row.text(4)
        age = Int(row.int8(5))
        score = row.float8(6)
        active = row.bool(7)
        note = row.isNull(8) ? nil : row.text(8)
        groupId = row.int8(9)
        payload = row.bytea(10)
    }

    var snapshot: UserSnapshot {
        UserSnapshot(
            id: id, name: name, email: email, age: age, score: score, active: active, note: note, groupId: groupId,
            payload: payload, createdAt: createdAt, updatedAt: updatedAt)
    }
    var digestID: Int64 { id }
    var digestAge: Int { age }
}

/// Raw libpq used the best way: every statement prepared once with its parameter types, run with
/// `PQexecPrepared`, parameters and results in binary (int8, float8, bool and bytea in network
/// order, text as its bytes), rows decoded straight into a struct.
final class LibPQSide: PeerSide {
    static let name = "libpq"
    private static let float8: Oid = 701, int8: Oid = 20, text: Oid = 25, bool: Oid = 16, bytea: Oid = 17, int8Array: Oid = 1016

    let connection: LibPQConnection
    let shape: Shape
    /// The rows to insert, made before anything is counted.
    private let rows: [RowValues]
    private let parameters = BinaryParameters()
    private var loaded: [LibPQUser] = []
    private var results = ReadLog<LibPQUser>()

    init(server: Server, shape: Shape) async throws {
        connection = try LibPQConnection(server.conninfo)
        self.shape = shape
        rows = shape.values
        try connection.prepare("insert", """
            INSERT INTO "BenchUser" ("createdAt", "updatedAt", "name", "email", "age", "score", "active", "note", \
            "groupId", "payload") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING "id"
            """, types: [Self.float8, Self.float8, Self.text, Self.text, Self.int8, Self.float8, Self.bool, Self.text,
                         Self.int8, Self.bytea])
        try connection.prepare("all", #"SELECT \#(selectList) FROM "BenchUser" ORDER BY "id""#, types: [])
        try connection.prepare("age", #"SELECT \#(selectList) FROM "BenchUser" WHERE "age" > $1 ORDER BY "id""#, types: [Self.int8])
        try connection.prepare("find", #"SELECT \#(selectList) FROM "BenchUser" WHERE "id" = $1"#, types: [Self.int8])
        try connection.prepare(
            "update", #"UPDATE "BenchUser" SET "score" = $1, "updatedAt" = $2 WHERE "id" = $3"#,
            types: [Self.float8, Self.float8, Self.int8])
        try connection.prepare("delete", #"DELETE FROM "BenchUser" WHERE "id" = $1"#, types: [Self.int8])
        try connection.prepare("groups", #"SELECT "id", "createdAt", "updatedAt", "title" FROM "BenchGroup" ORDER BY "id""#, types: [])
        try connection.prepare(
            "members", #"SELECT \#(selectList) FROM "BenchUser" WHERE "groupId" = $1 ORDER BY "id""#, types: [Self.int8])
        try connection.prepare(
            "membersOfGroups", #"SELECT \#(selectList) FROM "BenchUser" WHERE "groupId" = ANY($1) ORDER BY "id""#,
            types: [Self.int8Array])
    }

    func prepare(_ workload: Workload) async throws {
        if workload == .update { loaded = try fetch("all") }
    }

    func run(_ workload: Workload, ops: Int) async throws {
        switch workload {
        case .insertTx:
            try transaction { for row in rows.prefix(ops) { results.rows.append(try insert(row)) } }
        case .insertAutocommit:
            for row in rows.prefix(ops) { results.rows.append(try insert(row)) }
        case .fetchAll:
            for _ in 0..<ops { results.batches.append(try fetch("all")) }
        case .ageQuery:
            for _ in 0..<ops {
                parameters.reset()
                parameters.int8(Int64(RowValues.ageBound))
                results.batches.append(try fetch("age", parameters: true))
            }
        case .find:
            results.rows.reserveCapacity(ops)
            for id in 1...Int64(ops) {
                parameters.reset()
                parameters.int8(id)
                let result = try parameters.run("find", on: connection)
                defer { PQclear(result) }
                if PQntuples(result) == 1 { results.rows.append(LibPQUser(BinaryRow(result: result, row: 0))) }
            }
        case .update:
            try transaction {
                for index in 0..<ops {
                    let now = Date().timeIntervalSince1970
                    loaded[index].score += RowValues.scoreIncrement
                    parameters.reset()
                    parameters.float8(loaded[index].score)
                    parameters.float8(now)
                    parameters.int8(loaded[index].id)
                    results.changed += try changedRows("update")
                    loaded[index].updatedAt = now
                }
            }
        case .delete:
            try transaction {
                for id in 1...Int64(ops) {
                    parameters.reset()
                    parameters.int8(id)
                    results.changed += try changedRows("delete")
                }
            }
        case .lazy:
            for _ in 0..<ops {
                let groups = try fetchGroups()
                for group in groups {
                    parameters.reset()
                    parameters.int8(group.id)
                    results.batches.append(try fetch("members", parameters: true))
                }
                results.groups += groups
            }
        case .eager:
            for _ in 0..<ops {
                let groups = try fetchGroups()
                parameters.reset()
                parameters.int8Array(groups.map(\.id))
                let result = try parameters.run("membersOfGroups", on: connection)
                defer { PQclear(result) }
                // Each row decoded straight into its group's array.
                var members: [Int64: [LibPQUser]] = [:]
                for row in 0..<PQntuples(result) {
                    let member = LibPQUser(BinaryRow(result: result, row: row))
                    members[member.groupId, default: []].append(member)
                }
                for group in groups { results.batches.append(members[group.id] ?? []) }
                results.groups += groups
            }
        }
    }

    var snapshots: (users: [UserSnapshot], groups: [(id: Int64, title: String)], changed: Int) { results.snapshots }
    var digest: Digest { results.digest }
    func close() async throws {}

    // MARK: Statements

    private func transaction(_ body: () throws -> Void) throws {
        try connection.execute("BEGIN")
        do {
            try body()
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    private func insert(_ row: RowValues) throws -> LibPQUser {
        let now = Date().timeIntervalSince1970
        parameters.reset()
        parameters.float8(now)
        parameters.float8(now)
        parameters.text(row.name)
        parameters.text(row.email)
        parameters.int8(Int64(row.age))
        parameters.float8(row.score)
        parameters.bool(row.active)
        if let note = row.note { parameters.text(note) } else { parameters.null() }
        parameters.int8(row.groupId)
        parameters.bytea(row.payload)
        let result = try parameters.run("insert", on: connection)
        defer { PQclear(result) }
        var user = LibPQUser(row)
        user.id = BinaryRow(result: result, row: 0).int8(0)
        user.createdAt = now
        user.updatedAt = now
        return user
    }

    /// The rows of prepared statement `name`, with the parameters set (or none).
    private func fetch(_ name: String, parameters given: Bool = false) throws -> [LibPQUser] {
        if !given { parameters.reset() }
        let result = try parameters.run(name, on: connection)
        defer { PQclear(result) }
        let count = PQntuples(result)
        var users: [LibPQUser] = []
        users.reserveCapacity(Int(count))
        for row in 0..<count { users.append(LibPQUser(BinaryRow(result: result, row: row))) }
        return users
    }

    private func fetchGroups() throws -> [(id: Int64, title: String)] {
        parameters.reset()
        let result = try parameters.run("groups", on: connection)
        defer { PQclear(result) }
        return (0..<PQntuples(result)).map { row in
            let values = BinaryRow(result: result, row: row)
            return (values.int8(0), values.text(3))
        }
    }

    /// Runs `name` with the parameters set; the number of rows it changed.
    private func changedRows(_ name: String) throws -> Int {
        let result = try parameters.run(name, on: connection)
        defer { PQclear(result) }
        return Int(strtol(PQcmdTuples(result), nil, 10))
    }
}
