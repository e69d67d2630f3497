import ARLibPQ
@_spi(Engines) import ARCore
import Foundation

// `insertAll` on PostgreSQL: many rows per `INSERT`. Measured against the alternatives on
// 10,000 rows (Benchmarks/README.md, "Issue 35: bulk on PostgreSQL"): one `INSERT … VALUES (…),
// (…), … RETURNING "id"` of up to 1,000 rows was as fast as `COPY FROM STDIN` (text or binary)
// and faster than a pipeline of one-row `INSERT`s, json_populate_recordset or unnest, and it
// keeps everything `INSERT` means: the ids come back in the order of the rows (`RETURNING` on a
// `VALUES` list returns its rows in order), and every value is sent as the one-row `INSERT`
// sends it, as text of unspecified type (bytes as binary), so the server reads each as its
// column's type: no per-column casts to know. The parameters stay under PostgreSQL's limit of
// 65,535 per statement.
//
// Which row failed: the first statement runs after a savepoint, and the rows' parameters are
// kept until the end; when a statement fails, the bulk insert goes back to the savepoint,
// inserts the rows before the statement's again as they were, then the statement's one at a
// time, until the one that fails again says which (with its own error). The caller's
// transaction is rolled back then. (A savepoint per statement cost more than the rest of the
// client's work: 2 to 6 ms per 1,000 rows on the benchmark's loaded machine.)

extension PostgreSQLConnection {
    func prepareBulkInsert(into table: String, columns: [String], rowCount: Int, trace: ((String) -> Void)?) throws
        -> (any EngineBulkInsert)?
    {
        guard rowCount > 1, !columns.isEmpty else { return nil }
        return PostgreSQLBulkInsert(connection: self, table: table, columns: columns, rowCount: rowCount, trace: trace)
    }
}

/// One `insertAll` on a ``PostgreSQLConnection``: rows are encoded as they are appended, and
/// sent each time a statement's worth is ready (``rowsPerStatement``), the rest at ``finish()``.
/// Their parameters are kept until the end (about as many bytes as the values, plus 16 per
/// value), so that a failure can be traced to its row.
final class PostgreSQLBulkInsert: EngineBulkInsert {
    private unowned let connection: PostgreSQLConnection
    private let columnCount: Int
    /// `INSERT INTO "T" ("a", "b") VALUES ` and ` RETURNING "id"`, around the rows' placeholders.
    private let head: String
    private let trace: ((String) -> Void)?
    /// Rows per statement: 1,000, fewer when they would need more than 65,535 parameters.
    let rowsPerStatement: Int

    /// Every row appended, encoded as libpq takes parameters: text NUL-terminated,
    /// bytes binary (offset -1: `NULL`).
    private var buffer: [UInt8] = []
    private var offsets: [Int] = []
    private var lengths: [Int32] = []
    private var formats: [Int32] = []
    private var pointers: [UnsafePointer<CChar>?] = []
    /// How many rows were appended before the next statement's first one.
    private var inserted = 0
    private var ids: [Int64] = []
    /// Whether the savepoint the statements run after was made.
    private var hasSavepoint = false

    static let maximumRowsPerStatement = 1_000
    static let maximumParameters = 65_535
    private static let savepoint = "activerecord_bulk_insert".quotedIdentifier

    init(connection: PostgreSQLConnection, table: String, columns: [String], rowCount: Int, trace: ((String) -> Void)?) {
        self.connection = connection
        self.trace = trace
        columnCount = columns.count
        head = "INSERT INTO \(table.quotedIdentifier) (\(columns.map(\.quotedIdentifier).joined(separator: ", "))) VALUES "
        rowsPerStatement = max(1, min(Self.maximumRowsPerStatement, Self.maximumParameters / columns.count))
        ids.reserveCapacity(rowCount)
    }

    /// Rows appended and not yet inserted (their parameters end the arrays above).
    private var pendingRows: Int { offsets.count / columnCount - inserted }

    // MARK: Encoding

    func append(_ row: UnsafeBufferPointer<Cell>) throws {
        for index in 0..<columnCount {
            let start = buffer.count
            switch index < row.count ? row[index] : .null {
            case .null:
                offsets.append(-1)
                lengths.append(0)
                formats.append(0)
                continue
            case .integer(let int): appendDecimal(int)
            case .real(let double):
                let text = double.isNaN ? "NaN" : double.isInfinite ? (double < 0 ? "-Infinity" : "Infinity") : "\(double)"
                buffer.append(contentsOf: text.utf8)
            case .text(let utf8):
                if let base = utf8.baseAddress, memchr(base, 0, utf8.count) != nil {
                    throw BulkInsertFailure(
                        row: pendingRows + inserted,
                        ActiveRecordError(
                            .invalidValue, "PostgreSQL text cannot hold a NUL character (parameter \(index + 1)); store the bytes as Data"))
                }
                buffer.append(contentsOf: utf8)
            case .blob(let bytes):
                buffer.append(contentsOf: bytes)
                offsets.append(start)
                lengths.append(Int32(bytes.count))
                formats.append(1)
                continue
            }
            offsets.append(start)
            lengths.append(Int32(buffer.count - start))
            formats.append(0)
            buffer.append(0)
        }
        if pendingRows == rowsPerStatement { try insertPending() }
    }

    /// Appends `value`'s decimal digits (``ParameterLayout``'s writer).
    private func appendDecimal(_ value: Int64) {
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { slot in
            let length = ParameterLayout.writeDecimal(value, to: slot.baseAddress!)
            buffer.append(contentsOf: UnsafeRawBufferPointer(start: slot.baseAddress, count: Int(length)))
        }
    }

    func finish() throws -> [Int64] {
        if pendingRows > 0 { try insertPending() }
        if hasSavepoint { try command("RELEASE SAVEPOINT \(Self.savepoint)") }
        return ids
    }

    // MARK: Running

    /// The `INSERT` of `rows` rows.
    private func sql(rows: Int) -> String {
        var sql = head
        sql.reserveCapacity(head.count + rows * columnCount * 7 + 16)
        var number = 0
        for row in 0..<rows {
            sql += row == 0 ? "(" : ", ("
            for column in 0..<columnCount {
                number += 1
                sql += column == 0 ? "$\(number)" : ", $\(number)"
            }
            sql += ")"
        }
        return sql + " RETURNING \("id".quotedIdentifier)"
    }

    /// Inserts the pending rows, and keeps their ids (the first time, after a savepoint).
    private func insertPending() throws {
        let rows = pendingRows
        try connection.deallocateEvicted()
        if !hasSavepoint {
            try command("SAVEPOINT \(Self.savepoint)")
            hasSavepoint = true
        }
        do {
            try run(sql(rows: rows), rows: inserted..<(inserted + rows), named: rows == rowsPerStatement && !connection.transactionPooling)
        } catch {
            throw diagnose(error, rows: rows)
        }
        inserted += rows
    }

    /// Runs `sql` with the parameters of `rows` (from the first appended), prepared once per connection when
    /// `named` (a full statement's worth), unnamed otherwise; appends the ids it returns.
    private func run(_ sql: String, rows: Range<Int>, named: Bool) throws {
        trace?(sql)
        let connection = self.connection
        let first = rows.lowerBound * columnCount
        let count = Int32(rows.count * columnCount)
        pointers.removeAll(keepingCapacity: true)
        buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress)
            for offset in offsets[(first)..<(first + Int(count))] {
                pointers.append(offset >= 0 ? base.map { ($0 + offset).assumingMemoryBound(to: CChar.self) } : nil)
            }
        }
        var name: String?
        if named {
            if let known = connection.bulkStatements[sql] {
                name = known
            } else {
                let made = connection.makeName("bulk")
                let prepared = try connection.exchange(for: sql) { PQsendPrepare(connection.handle, made, sql, count, nil) }
                try check(prepared, sql: sql)
                PQclear(prepared)
                connection.bulkStatements[sql] = made
                name = made
            }
        }
        let result = try buffer.withUnsafeBufferPointer { _ in
            try pointers.withUnsafeBufferPointer { values in
                try lengths[first...].withUnsafeBufferPointer { lengths in
                    try formats[first...].withUnsafeBufferPointer { formats in
                        try connection.exchange(for: sql) {
                            if let name {
                                PQsendQueryPrepared(connection.handle, name, count, values.baseAddress, lengths.baseAddress, formats.baseAddress, 0)
                            } else {
                                PQsendQueryParams(
                                    connection.handle, sql, count, nil, values.baseAddress, lengths.baseAddress, formats.baseAddress, 0)
                            }
                        }
                    }
                }
            }
        }
        try check(result, sql: sql)
        defer { PQclear(result) }
        guard PQntuples(result) == Int32(rows.count) else {
            throw ActiveRecordError(.engine, "the INSERT returned \(PQntuples(result)) ids for \(rows.count) rows", sql: sql)
        }
        for row in 0..<Int32(rows.count) { ids.append(strtoll(PQgetvalue(result, row, 0), nil, 10)) }
    }

    /// Runs commands without parameters or results, one after another (each in its own
    /// message, so that a transaction pooler's settings can go before the first).
    private func command(_ first: String?, then second: String? = nil) throws {
        for sql in [first, second].compactMap(\.self) {
            trace?(sql)
            let connection = self.connection
            let result = try connection.exchange(for: sql) { PQsendQueryParams(connection.handle, sql, 0, nil, nil, nil, nil, 0) }
            try check(result, sql: sql)
            PQclear(result)
        }
    }

    /// Throws the error of a failed result (clearing it).
    private func check(_ result: OpaquePointer?, sql: String) throws {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let error = postgreSQLError(result, connection, sql: sql)
            PQclear(result)
            throw error
        }
    }

    /// The failure of the statement of the pending `rows` (`error`), with the row that caused
    /// it: back to the savepoint, the rows inserted before are inserted again as they were, and
    /// the pending ones one at a time, until the one that fails again says which (with its own
    /// error). The error alone when the connection cannot go on, or no row fails again
    /// (another transaction changed the table meanwhile).
    private func diagnose(_ error: any Error, rows: Int) -> BulkInsertFailure {
        guard let failure = error as? ActiveRecordError, connection.isUsable, failure.code != .timeout,
            (try? command("ROLLBACK TO SAVEPOINT \(Self.savepoint)")) != nil
        else { return BulkInsertFailure(row: nil, error) }
        do {
            for start in stride(from: 0, to: inserted, by: rowsPerStatement) {
                try run(sql(rows: rowsPerStatement), rows: start..<(start + rowsPerStatement), named: !connection.transactionPooling)
            }
        } catch {
            return BulkInsertFailure(row: nil, failure)
        }
        let single = sql(rows: 1)
        for row in inserted..<(inserted + rows) {
            do {
                try run(single, rows: row..<(row + 1), named: false)
            } catch {
                return BulkInsertFailure(row: row, error)
            }
        }
        return BulkInsertFailure(row: nil, failure)
    }
}
