import ActiveRecord
import CSQLiteRaw
import Foundation
import GRDB

/// One side of a query benchmark: a name and a loop running the benchmark's
/// query `queryCount` times, query `q` for age `q % 90`, digesting every row.
struct QuerySide {
    let name: String
    /// Runs the loop; `recording` keeps the names in the digest (for checks, untimed).
    let run: (_ queryCount: Int, _ recording: Bool) throws -> ResultDigest
}

/// The three connections to one ``QueryTable`` file, opened once and reused
/// by every round: the library's `Database`, a raw connection and a GRDB queue.
struct QueryConnections {
    let library: ActiveRecord.Database
    let raw: RawDatabase
    let grdb: DatabaseQueue

    init(_ table: QueryTable) throws {
        library = try Database(.file(table.path))
        raw = try RawDatabase(path: table.path)
        grdb = try DatabaseQueue(path: table.path, configuration: GRDBSide.configuration)
    }

    /// A raw side: `sql` prepared once, bound with the age (parameter 1) and
    /// `extraDouble` (parameter 2, when given), each row read into a `RawQueryUser`.
    func rawSide(_ sql: String, extraDouble: Double? = nil) throws -> QuerySide {
        let statement = try raw.prepare(sql)
        return QuerySide(name: "raw") { queryCount, recording in
            var digest = ResultDigest(recording: recording)
            let handle = statement.handle
            for query in 0..<queryCount {
                defer { statement.reset() }
                var code = sqlite3_bind_int64(handle, 1, Int64(query % QueryTable.ageCount))
                if let extraDouble { code |= sqlite3_bind_double(handle, 2, extraDouble) }
                guard code == SQLITE_OK else { throw raw.error(code, "bind to \(sql)") }
                var users: [RawQueryUser] = []
                while try statement.step() { users.append(RawQueryUser(statement)) }
                for user in users { digest.add(id: user.id, name: user.name) }
            }
            return digest
        }
    }

    /// A library side: `query(age)` fetched in a loop, inside `use`.
    func librarySide(_ name: String, _ query: @escaping (Int) -> Query<QueryUser>) -> QuerySide {
        QuerySide(name: name) { queryCount, recording in
            try library.use {
                var digest = ResultDigest(recording: recording)
                for index in 0..<queryCount {
                    for user in try query(index % QueryTable.ageCount).fetch() {
                        digest.add(id: user.id ?? -1, name: user.name)
                    }
                }
                return digest
            }
        }
    }

    /// A GRDB side: `request(age)` fetched in a loop, all in one `read`.
    func grdbSide(_ request: @escaping (Int) -> QueryInterfaceRequest<GRDBQueryUser>) -> QuerySide {
        QuerySide(name: "GRDB") { queryCount, recording in
            try grdb.read { db in
                var digest = ResultDigest(recording: recording)
                for index in 0..<queryCount {
                    for user in try request(index % QueryTable.ageCount).fetchAll(db) {
                        digest.add(id: user.id, name: user.name)
                    }
                }
                return digest
            }
        }
    }
}

/// Benchmark 1: `where age = ? order by name limit 10`, the age varying, on
/// the indexed `age` column; target library/raw ≤ 1.3.
enum IndexedQuery {
    static let target = 1.3
    static let limit = 10

    /// The raw side's statement, the library's query written by hand.
    static let rawSQL = #"SELECT \#(QueryTable.rawSelectList) FROM "QueryUser" WHERE "age" = ? ORDER BY "name" LIMIT 10"#

    /// Raw, the library's field-condition form, GRDB.
    static func sides(_ connections: QueryConnections) throws -> [QuerySide] {
        [
            try connections.rawSide(rawSQL),
            connections.librarySide("library") { age in
                QueryUser.query().where("age", .equal(age)).order(by: "name").limit(limit)
            },
            connections.grdbSide { age in
                GRDBQueryUser.filter(GRDB.Column("age") == age).order(GRDB.Column("name")).limit(limit)
            },
        ]
    }
}

/// Benchmark 2: `age = ? AND score >= ?` with `limit 1`, written as a
/// predicate string (parsed once per format, then cached) and as two field
/// conditions; no target: the string form's cost over the field form is reported.
enum PredicateQuery {
    /// The library runs it in id order (its default); the raw side says so.
    static let rawSQL = #"""
        SELECT \#(QueryTable.rawSelectList) FROM "QueryUser" WHERE "age" = ? AND "score" >= ? ORDER BY "id" LIMIT 1
        """#

    /// Raw, the library's string form, the library's field-condition form, GRDB.
    static func sides(_ connections: QueryConnections) throws -> [QuerySide] {
        [
            try connections.rawSide(rawSQL, extraDouble: 0.0),
            connections.librarySide("library string") { age in
                QueryUser.query().where("age = %@ AND score >= %@", age, 0.0).limit(1)
            },
            connections.librarySide("library fields") { age in
                QueryUser.query().where("age", .equal(age)).where("score", .greaterThanOrEqual(0.0)).limit(1)
            },
            connections.grdbSide { age in
                GRDBQueryUser.filter(sql: "age = ? AND score >= ?", arguments: [age, 0.0]).limit(1)
            },
        ]
    }
}

/// Runs one query benchmark's sides for several rounds (rotating which side
/// goes first, as ``Harness`` does) and keeps each side's best time. Checks
/// every side first on one query per age (names in order), then every
/// round's digest against the expected one.
struct QueryRunner {
    let title: String
    let sides: [QuerySide]
    /// The ids query `q` must return, for `q % 90`: index = age.
    let expectedIDs: [[Int64]]
    let queryCount: Int
    let rounds: Int

    /// The expected digest of `queryCount` queries.
    private func expected(_ queryCount: Int, recording: Bool) -> ResultDigest {
        var digest = ResultDigest(recording: recording)
        for query in 0..<queryCount { digest.add(ids: expectedIDs[query % QueryTable.ageCount]) }
        return digest
    }

    /// Each side's best time, by side name.
    func run(progress: (String) -> Void) throws -> [String: Duration] {
        let ages = QueryTable.ageCount
        for side in sides {
            let digest = try side.run(ages, true)
            try Check.require(
                digest == expected(ages, recording: true),
                "\(side.name) \(title): names for ages 0...\(ages - 1) are \(digest.names ?? []), "
                    + "expected \(expected(ages, recording: true).names ?? [])")
        }
        let expectedDigest = expected(queryCount, recording: false)
        var best: [String: Duration] = [:]
        for round in 1...rounds {
            let shift = (round - 1) % sides.count
            var line = "\(title) round \(round):"
            for side in sides[shift...] + sides[..<shift] {
                let (elapsed, digest) = try measure(side: "\(title): \(side.name)") { try side.run(queryCount, false) }
                try Check.require(
                    digest == expectedDigest,
                    "\(side.name) \(title): read \(digest.rowCount) rows (digest \(digest.hash)), "
                        + "expected \(expectedDigest.rowCount) (digest \(expectedDigest.hash))")
                best[side.name] = min(best[side.name] ?? elapsed, elapsed)
                line += " \(side.name) \(String(format: "%.4f", elapsed.seconds))s"
            }
            progress(line)
        }
        return best
    }
}
