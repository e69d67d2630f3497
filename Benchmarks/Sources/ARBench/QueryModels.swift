import ActiveRecord
import CSQLiteRaw
import Foundation

/// The library's model for the query and memory benchmarks: row `i` (1-based)
/// has name `user<i>`, age `i % 90` and score `i * 0.5`. The age index is
/// created with the table ("QueryUser_age_index").
final class QueryUser: Model {
    @Column var name: String = ""
    @Column(index: .index) var age: Int = 0
    @Column var score: Double = 0
}

/// The raw side's plain object for one `QueryUser` row.
final class RawQueryUser: RawRecord {
    let name: String
    let age: Int
    let score: Double

    /// Reads the current row of a statement that selected ``QueryTable/rawSelectList``.
    override init(_ statement: RawStatement) {
        let handle = statement.handle
        name = statement.text(3)
        age = Int(sqlite3_column_int64(handle, 4))
        score = sqlite3_column_double(handle, 5)
        super.init(statement)
    }

    /// Reads row `row` of a binary libpq result that selected ``QueryTable/rawSelectList``.
    override init(_ result: OpaquePointer?, row: Int32) {
        name = BinaryResult.text(result, row, 3)
        age = Int(BinaryResult.int8(result, row, 4))
        score = BinaryResult.float8(result, row, 5)
        super.init(result, row: row)
    }
}

/// The `QueryUser` table of one database file: filling it through the library,
/// and the results every query benchmark expects from it.
struct QueryTable {
    /// Row count: ids 1...rowCount.
    let rowCount: Int
    /// The database file, on the library's pragmas (WAL).
    let path: String

    /// The library's select list, in its column order, for the raw side.
    static let rawSelectList = #""id", "createdAt", "updatedAt", "name", "age", "score""#

    /// The ages the benchmarks query: 0...89, as the rows have.
    static let ageCount = 90

    /// Creates the table through the library (with its age index), inserts
    /// `rowCount` rows in one transaction, checkpoints the WAL into the main
    /// file and checks the result with a separate raw connection.
    static func fill(rowCount: Int, path: String) throws -> QueryTable {
        let raw = try TableFile.fill(path: path) { try insertRows(rowCount) }
        let table = QueryTable(rowCount: rowCount, path: path)
        try table.check(raw)
        return table
    }

    /// Inserts rows 1...rowCount through the library, on the current database.
    static func insertRows(_ rowCount: Int) throws {
        for i in 1...rowCount {
            let user = QueryUser()
            user.name = "user\(i)"
            user.age = i % ageCount
            user.score = Double(i) * 0.5
            try user.save()
        }
    }

    /// Checks the file through `raw`: the row count, every row's values, the
    /// age index and that the indexed query's plan uses it.
    private func check(_ raw: RawDatabase) throws {
        let context = "QueryUser table of \(rowCount) rows"
        try Check.count(Int(try raw.integer(#"SELECT count(*) FROM "QueryUser""#)), rowCount, "\(context): rows")
        let matching = try raw.integer("""
            SELECT count(*) FROM "QueryUser" WHERE "id" BETWEEN 1 AND ?1 AND "name" = 'user' || "id" \
            AND "age" = "id" % 90 AND "score" = "id" * 0.5 AND "createdAt" > 0 AND "updatedAt" = "createdAt"
            """, [Double(rowCount)])
        try Check.count(Int(matching), rowCount, "\(context): rows with the expected values")
        try Check.plan(of: IndexedQuery.rawSQL, on: raw, uses: "QueryUser_age_index", "\(context): the indexed query")
    }

    /// The ids of the rows with `age`, in id order.
    func ids(age: Int) -> [Int64] {
        Array(stride(from: age == 0 ? QueryTable.ageCount : age, through: rowCount, by: QueryTable.ageCount))
            .map(Int64.init)
    }

    /// The indexed query's result for `age`: the first `limit` ids of its rows in name order.
    func idsByName(age: Int, limit: Int) -> [Int64] {
        Array(ids(age: age).sorted { "user\($0)" < "user\($1)" }.prefix(limit))
    }
}

/// A digest of the rows a timed loop read, in order: the checks compare it
/// with the expected one, and computing it keeps every row's decoding live.
/// When recording, it also keeps every name.
struct ResultDigest: Equatable {
    private(set) var rowCount = 0
    private(set) var hash: UInt64 = 0
    /// The names read, in order, when made with `recording: true`.
    private(set) var names: [String]?

    init(recording: Bool = false) {
        names = recording ? [] : nil
    }

    /// Adds one row.
    @inline(__always)
    mutating func add(id: Int64, name: String) {
        rowCount += 1
        hash = (hash &* 1_000_003) &+ UInt64(bitPattern: id) &* 31 &+ UInt64(name.utf8.count)
        names?.append(name)
    }

    /// The digest of these ids' rows, `user<id>` being each one's name.
    mutating func add(ids: [Int64]) {
        for id in ids { add(id: id, name: "user\(id)") }
    }
}
