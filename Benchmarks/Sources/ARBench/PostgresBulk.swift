import ActiveRecord
import ActiveRecordPostgreSQL
import CLibPQRaw
import Foundation

/// Issue 35, point 4: bulk on PostgreSQL (`ARBench postgres-bulk [N] [--rounds R] [--fetch A,B]`,
/// `make bench-bulk`).
///
/// Inserting N rows (default 10,000) of `BenchUser` in one transaction, three ways, each round
/// in a fresh schema, the median of R rounds (default 5): raw libpq row by row — the best raw
/// row-by-row code: one statement prepared once with its parameter types, `PQexecPrepared` per
/// row, binary parameters and binary results; raw libpq in pipeline mode (the same statement,
/// `PQsendQueryPrepared` per row, a `PQpipelineSync` every 1,000 rows); and the library's
/// `insertAll` of records made beforehand (on either side the rows are made before the clock
/// starts). Target: raw row by row / library ≥ 5.
///
/// Fetching A and B rows (default 100,000 and 1,000,000) through the library: `fetch()` (every
/// record at once) against the cursor (`forEach`, one record at a time), each in a child
/// process (`ARBench postgres-bulk-fetch <fetch|cursor> <rows> <schema>`) that reports its time
/// per row and its peak resident memory above its baseline.
enum PostgresBulk {
    static let usage = "usage: ARBench postgres-bulk [N] [--rounds R] [--fetch A,B]"
    static let target = 5.0

    static func main(_ arguments: ArraySlice<String>) -> Int32 {
        guard let connection = PostgresSection.configuredConnection else {
            FileHandle.standardError.write(Data("ARBench postgres-bulk: set AR_BENCH_POSTGRES to a libpq connection string\n".utf8))
            return 1
        }
        var rows = 10_000, rounds = 5
        var fetchRows = [100_000, 1_000_000]
        var words = Array(arguments)
        while !words.isEmpty {
            let word = words.removeFirst()
            if word == "--rounds", let value = words.first.flatMap({ Int($0) }) {
                rounds = max(1, value)
                words.removeFirst()
            } else if word == "--fetch", let value = words.first {
                fetchRows = value.split(separator: ",").compactMap { Int($0.replacingOccurrences(of: "_", with: "")) }
                words.removeFirst()
            } else if let value = Int(word.replacingOccurrences(of: "_", with: "")), value > 1 {
                rows = value
            } else {
                FileHandle.standardError.write(Data((usage + "\n").utf8))
                return 1
            }
        }
        Check.begin()
        do {
            for line in try insertSection(connection, rows: rows, rounds: rounds) { print(line) }
            print("")
            for line in try fetchSection(connection, sizes: fetchRows) { print(line) }
            return 0
        } catch {
            FileHandle.standardError.write(Data("FAILED: \(error)\n".utf8))
            return 1
        }
    }

    // MARK: Inserting

    static func insertSection(_ connection: String, rows count: Int, rounds: Int) throws -> [String] {
        let admin = try RawPostgres(connection)
        try admin.execute("SET client_min_messages = warning")
        let values = (1...count).map(RowValues.init)
        var times: [String: [Double]] = [:]
        var schemaNumber = 0
        let sides = ["raw row by row", "raw pipeline", "library insertAll"]
        for round in 1...rounds {
            var line = "PostgreSQL bulk insert round \(round):"
            for side in sides {
                schemaNumber += 1
                let schema = "arbulk_\(getpid())_\(schemaNumber)"
                try admin.execute("CREATE SCHEMA \(schema)")
                defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
                let path = connection + " options='-csearch_path=\(schema)'"
                let seconds = switch side {
                case "raw row by row": try rawInsert(path, values, pipeline: false)
                case "raw pipeline": try rawInsert(path, values, pipeline: true)
                default: try libraryInsert(path, values)
                }
                let stored = try admin.integer(#"SELECT count(*) FROM \#(schema)."BenchUser""#)
                try Check.count(Int(stored), count, "PostgreSQL bulk insert \(side): rows")
                times[side, default: []].append(seconds)
                line += " \(side) \(String(format: "%.4f", seconds))s"
            }
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        let median = times.mapValues { $0.sorted()[$0.count / 2] }
        let raw = median["raw row by row"]!, library = median["library insertAll"]!
        let ratio = raw / library
        let layout = TableLayout(titleWidth: 34, widths: [11, 11, 13])
        return ["PostgreSQL bulk insert: \(count) rows in one transaction, median of \(rounds) rounds, each in a fresh schema"]
            + layout.lines(
                heading: ["insert \(count) rows", "median s", "µs/row", "row-by-row /"],
                rows: sides.map { side in
                    let seconds = median[side]!
                    return ([side, String(format: "%.4f", seconds), String(format: "%.2f", seconds * 1e6 / Double(count)),
                             String(format: "%.2f", raw / seconds)], "")
                })
            + ["raw row by row / library insertAll: \(String(format: "%.2f", ratio)) (target >= \(String(format: "%.0f", target))): "
                + (ratio >= target ? "ok" : "MISSED")]
    }

    /// Raw libpq: the table made as the library makes it, then every row inserted in one
    /// transaction with one prepared statement, binary parameters and results; in pipeline mode,
    /// the rows sent without waiting, 1,000 per `PQpipelineSync`.
    static func rawInsert(_ connection: String, _ rows: [RowValues], pipeline: Bool) throws -> Double {
        let database = try RawPostgres(connection)
        try database.execute(rawPostgresCreateTableSQL)
        try database.prepare("insert", """
            INSERT INTO "BenchUser" ("createdAt", "updatedAt", "name", "email", "age", "score", "active", \
            "note", "groupId", "payload") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING "id"
            """, types: [701, 701, 25, 25, 20, 701, 16, 25, 20, 17])
        var ids: [Int64] = []
        ids.reserveCapacity(rows.count)
        var parameters = BinaryParameters()
        let start = ContinuousClock.now
        try database.execute("BEGIN")
        let now = Date().timeIntervalSince1970
        func send(_ row: RowValues) -> Int32 {
            parameters.encode(row, now: now)
            return parameters.withPointers { values, lengths, formats in
                PQsendQueryPrepared(database.handle, "insert", 10, values, lengths, formats, 1)
            }
        }
        if pipeline {
            guard PQenterPipelineMode(database.handle) == 1 else { throw RawPostgresError(description: "no pipeline mode") }
            var next = 0
            while next < rows.count {
                let end = min(rows.count, next + 1_000)
                for index in next..<end where send(rows[index]) != 1 {
                    throw RawPostgresError(description: "PQsendQueryPrepared: \(String(cString: PQerrorMessage(database.handle)))")
                }
                guard PQpipelineSync(database.handle) == 1 else { throw RawPostgresError(description: "PQpipelineSync failed") }
                while true {
                    guard let result = PQgetResult(database.handle) else { continue }
                    defer { PQclear(result) }
                    let status = PQresultStatus(result)
                    if status == PGRES_PIPELINE_SYNC { break }
                    try database.check(result, "pipelined insert")
                    ids.append(Int64(bigEndian: PQgetvalue(result, 0, 0).withMemoryRebound(to: Int64.self, capacity: 1) { $0.pointee }))
                    _ = PQgetResult(database.handle)  // the nil that ends each query's results
                }
                next = end
            }
            _ = PQexitPipelineMode(database.handle)
        } else {
            for row in rows {
                parameters.encode(row, now: now)
                let result = parameters.withPointers { values, lengths, formats in
                    PQexecPrepared(database.handle, "insert", 10, values, lengths, formats, 1)
                }
                defer { PQclear(result) }
                try database.check(result, "insert")
                ids.append(Int64(bigEndian: PQgetvalue(result, 0, 0).withMemoryRebound(to: Int64.self, capacity: 1) { $0.pointee }))
            }
        }
        try database.execute("COMMIT")
        let elapsed = (ContinuousClock.now - start).seconds
        try Check.count(ids.count, rows.count, "raw \(pipeline ? "pipeline" : "row by row"): ids")
        return elapsed
    }

    /// The library: the table made (automatic migration) and the records made first, then `insertAll`.
    static func libraryInsert(_ connection: String, _ rows: [RowValues]) throws -> Double {
        let database = try Database(.postgres(connection))
        database.logger = nil
        return try database.use {
            _ = try BenchUser.count()
            let users = rows.map(LibrarySide.makeUser)
            let start = ContinuousClock.now
            try BenchUser.insertAll(users)
            let elapsed = (ContinuousClock.now - start).seconds
            let ids = users.compactMap(\.id)
            try Check.count(ids.count, rows.count, "library insertAll: ids")
            guard ids == ids.sorted() else { throw Check.Failure(description: "library insertAll: ids out of order") }
            return elapsed
        }
    }

    // MARK: Fetching

    static func fetchSection(_ connection: String, sizes: [Int]) throws -> [String] {
        guard !sizes.isEmpty else { return [] }
        let admin = try RawPostgres(connection)
        try admin.execute("SET client_min_messages = warning")
        var lines: [(String, Double, Int)] = []
        for size in sizes {
            let schema = "arbulk_fetch_\(getpid())_\(size)"
            try admin.execute("CREATE SCHEMA \(schema)")
            defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
            try admin.execute("SET search_path = \(schema)")
            try admin.execute(rawPostgresCreateTableSQL)
            try admin.execute("""
                INSERT INTO "BenchUser" ("createdAt", "updatedAt", "name", "email", "age", "score", "active", "note", \
                "groupId", "payload") SELECT 1700000000.5, 1700000000.5, 'user' || i, 'user' || i || '@example.com', i % 90, \
                i * 0.5, i % 2 = 0, CASE WHEN i % 2 = 0 THEN NULL ELSE 'note ' || i END, i % 100, \
                decode(lpad(to_hex(i), 32, '0'), 'hex') FROM generate_series(1, \(size)) AS i
                """)
            try admin.execute("VACUUM ANALYZE \"BenchUser\"")
            try admin.execute("SET search_path = public")
            let path = connection + " options='-csearch_path=\(schema)'"
            for mode in ["fetch", "cursor"] {
                let fields = try childFields(CommandLine.arguments[0], ["postgres-bulk-fetch", mode, String(size), path])
                guard let seconds = fields["seconds"].flatMap(Double.init), let peak = fields["peak_kb"].flatMap(Int.init),
                    fields["rows"].flatMap(Int.init) == size
                else { throw Check.Failure(description: "postgres-bulk-fetch \(mode) \(size): \(fields)") }
                lines.append(("\(mode) \(size) rows", seconds * 1e6 / Double(size), peak))
            }
        }
        let layout = TableLayout(titleWidth: 34, widths: [11, 16])
        return ["PostgreSQL large fetch: the library's fetch() (all records at once) against its cursor (forEach), "
            + "each in a child process; peak resident memory above the child's baseline"]
            + layout.lines(
                heading: ["library on PostgreSQL", "µs/row", "peak MiB"],
                rows: lines.map { ([$0.0, String(format: "%.3f", $0.1), String(format: "%.1f", Double($0.2) / 1024)], "") })
    }
}

/// The child: `ARBench postgres-bulk-fetch <fetch|cursor> <rows> <connection>`: reads every
/// `BenchUser` in id order, touching each name, and prints `rows= seconds= peak_kb=`.
enum PostgresBulkFetchChild {
    static func main(_ arguments: ArraySlice<String>) -> Int32 {
        let words = Array(arguments)
        guard words.count == 3, let expected = Int(words[1]) else {
            FileHandle.standardError.write(Data("usage: ARBench postgres-bulk-fetch <fetch|cursor> <rows> <connection>\n".utf8))
            return 1
        }
        do {
            let database = try Database(.postgres(words[2]), automaticMigrations: false)
            database.logger = nil
            return try database.use {
                _ = try BenchUser.query().where("id = 1").fetch()
                let base = try ResidentMemory.kilobytes("VmRSS")
                guard ResidentMemory.resetPeak() else { throw Check.Failure(description: "cannot reset the peak RSS") }
                var rows = 0, letters = 0
                let start = ContinuousClock.now
                if words[0] == "cursor" {
                    try BenchUser.query().order(by: "id").forEach { user in
                        rows += 1
                        letters &+= user.name.utf8.count
                    }
                } else {
                    let users = try BenchUser.query().order(by: "id").fetch()
                    for user in users { letters &+= user.name.utf8.count }
                    rows = users.count
                }
                let elapsed = (ContinuousClock.now - start).seconds
                let peak = try ResidentMemory.kilobytes("VmHWM")
                guard rows == expected, letters > 0 else { throw Check.Failure(description: "read \(rows) of \(expected) rows") }
                print("rows=\(rows) seconds=\(elapsed) peak_kb=\(peak - base)")
                return 0
            }
        } catch {
            FileHandle.standardError.write(Data("FAILED: \(error)\n".utf8))
            return 1
        }
    }
}

/// The raw side's parameters for one row, binary: 8-byte big-endian integers and doubles, a
/// 1-byte boolean, text and bytes as they are.
struct BinaryParameters {
    private var buffer: [UInt8] = []
    private var offsets: [Int] = []
    private var lengths: [Int32] = []
    private let formats = [Int32](repeating: 1, count: 10)

    mutating func encode(_ row: RowValues, now: Double) {
        buffer.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        add(now.bitPattern)
        add(now.bitPattern)
        add(row.name.utf8)
        add(row.email.utf8)
        add(UInt64(bitPattern: Int64(row.age)))
        add(row.score.bitPattern)
        add(CollectionOfOne(UInt8(row.active ? 1 : 0)))
        if let note = row.note { add(note.utf8) } else { offsets.append(-1); lengths.append(0) }
        add(UInt64(bitPattern: row.groupId))
        add(row.payload)
    }

    private mutating func add(_ value: UInt64) {
        offsets.append(buffer.count)
        withUnsafeBytes(of: value.bigEndian) { buffer.append(contentsOf: $0) }
        lengths.append(8)
    }

    private mutating func add(_ bytes: some Collection<UInt8>) {
        offsets.append(buffer.count)
        buffer.append(contentsOf: bytes)
        lengths.append(Int32(bytes.count))
    }

    func withPointers<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R) -> R {
        buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress)
            let values = offsets.map { offset -> UnsafePointer<CChar>? in
                guard offset >= 0, let base else { return nil }
                return (base + offset).assumingMemoryBound(to: CChar.self)
            }
            return body(values, lengths, formats)
        }
    }
}
