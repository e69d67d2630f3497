import ARLibPQ
@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `insertAll` on PostgreSQL: from 200 rows, into a table that allows it, one binary
// `COPY … FROM STDIN` (PostgreSQLConnection+BulkCopy.swift: the ids are taken from the
// sequence first); otherwise many rows per `INSERT … VALUES (…), (…), … RETURNING "id"` of up to
// 1,000 rows, which keeps everything `INSERT` means: the ids come back in the order of the rows
// (`RETURNING` on a `VALUES` list returns its rows in order). The parameters stay under
// PostgreSQL's limit of 65,535 per statement. Measured on 10,000 rows (Benchmarks/README.md,
// "Issue 35: bulk on PostgreSQL"): the COPY 10× faster than raw libpq's one-row inserts (on
// 1,000 rows 5.5–8.8 ms against 13.3 ms by `VALUES`), and both faster than a pipeline of
// one-row `INSERT`s, json_populate_recordset or unnest. Below 200 rows the COPY's set-up (a
// lock, a check of the table, the ids) costs about what it saves.
//
// Binary values: the one-row `INSERT` is described first (once per connection and table, or
// once per `insertAll` behind a transaction pooler: a description of the full statement's
// 10,000 parameters would be a message over libpq < 17's limit of 30,000 bytes), which gives
// every column's type; the full statement is prepared with those types declared, row after
// row, and each value goes in its column type's binary form (``ParameterLayout``'s encoding of
// one value), or as text where the type has none here (a `numeric`, a `uuid`, a date). The
// declared types are the ones the values are encoded for, so a table changed since the
// description cannot misread a value: the server converts it to the new column type as it
// would convert a parameter of the old one, or refuses the statement; after any failure the
// connection describes the table again.
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
        return try PostgreSQLBulkInsert(connection: self, table: table, columns: columns, rowCount: rowCount, trace: trace)
    }
}

/// One `insertAll` on a ``PostgreSQLConnection``: rows are encoded as they are appended, and
/// sent each time a statement's worth is ready (``rowsPerStatement``), the rest at ``finish()``.
/// Their parameters are kept until the end (about as many bytes as the values, plus 16 per
/// value), so that a failure can be traced to its row.
final class PostgreSQLBulkInsert: EngineBulkInsert {
    private unowned let connection: PostgreSQLConnection
    private let columnCount: Int
    /// `INSERT INTO "T" ("a", "b") VALUES `, before the rows' placeholders.
    private let head: String
    /// The one-row `INSERT` (the key of ``form`` on the connection).
    private let oneRowSQL: String
    private let trace: ((String) -> Void)?
    /// Rows per statement: 1,000, fewer when they would need more than 65,535 parameters.
    let rowsPerStatement: Int
    private let form: BulkInsertForm
    /// The full statement's SQL, made when first needed (to prepare it, or to trace).
    private var fullSQL: String?

    // Every row appended, encoded as libpq takes parameters (value `i`: `offsets[i]` into
    // `bytes`, -1 for `NULL`; `lengths[i]`; `formats[i]`, 1 binary, 0 text NUL-terminated), in
    // memory of the bulk insert's own, grown as rows come.
    private var bytes: UnsafeMutableRawPointer
    private var byteCapacity: Int
    private var byteCount = 0
    private var offsets: UnsafeMutablePointer<Int>
    private var lengths: UnsafeMutablePointer<Int32>
    private var formats: UnsafeMutablePointer<Int32>
    private var valueCapacity: Int
    private var valueCount = 0
    /// The server type of every parameter of a full statement (the columns', row after row),
    /// and one statement's value pointers, set before it is sent.
    private let types: UnsafeMutablePointer<Oid>
    private let pointers: UnsafeMutablePointer<UnsafePointer<CChar>?>
    /// How many rows were inserted (their statements' results read), and sent (`inserted`
    /// and those of the statement in flight, whose result is read when the next is ready).
    private var inserted = 0
    private var sent = 0
    private var ids: [Int64] = []
    /// Whether the savepoint the statements run after was made.
    private var hasSavepoint = false
    /// The table and columns, for a COPY; how many rows are expected.
    private let table: String
    private let columns: [String]
    private let rowCount: Int
    /// Whether the rows go by binary COPY (started at the first row), and the COPY in progress.
    private var copyPlanned: Bool
    private var copy: BulkCopy?

    static let maximumRowsPerStatement = 1_000
    static let maximumParameters = 65_535
    /// From how many rows a table that allows it gets its rows by COPY rather than `VALUES`.
    static let copyMinimumRows = 200
    private static let savepoint = "activerecord_bulk_insert".quotedIdentifier

    /// Describes the one-row `INSERT` unless the connection knows its table's form already.
    init(connection: PostgreSQLConnection, table: String, columns: [String], rowCount: Int, trace: ((String) -> Void)?) throws {
        self.connection = connection
        self.trace = trace
        self.table = table
        self.columns = columns
        self.rowCount = rowCount
        columnCount = columns.count
        head = "INSERT INTO \(table.quotedIdentifier) (\(columns.map(\.quotedIdentifier).joined(separator: ", "))) VALUES "
        rowsPerStatement = max(1, min(Self.maximumRowsPerStatement, Self.maximumParameters / columns.count))
        oneRowSQL = BulkInsertForm.sql(head: head, rows: 1, columns: columns.count)
        if let known = connection.bulkStatements[oneRowSQL] {
            form = known
        } else {
            form = try BulkInsertForm.describe(oneRowSQL, table: table, columns: columns.count, on: connection)
            if !connection.transactionPooling { connection.bulkStatements[oneRowSQL] = form }
        }
        copyPlanned = form.copyable && rowCount >= Self.copyMinimumRows
        let statementValues = rowsPerStatement * columnCount
        types = .allocate(capacity: statementValues)
        for index in 0..<statementValues { types[index] = form.columnTypes[index % columnCount] }
        pointers = .allocate(capacity: statementValues)
        valueCapacity = max(columnCount, min(rowCount * columnCount, 1 << 20))
        offsets = .allocate(capacity: valueCapacity)
        lengths = .allocate(capacity: valueCapacity)
        formats = .allocate(capacity: valueCapacity)
        byteCapacity = valueCapacity * 16
        bytes = .allocate(byteCount: byteCapacity, alignment: 8)
        ids.reserveCapacity(rowCount)
    }

    deinit {
        // Abandoned (a record that could not be bound) with a statement in flight: its result
        // is read, so that the connection can go on (to the rollback its caller does).
        if sent > inserted, connection.isUsable { PQclear(try? connection.result(ofSent: 1)) }
        bytes.deallocate()
        offsets.deallocate()
        lengths.deallocate()
        formats.deallocate()
        types.deallocate()
        pointers.deallocate()
    }

    /// Rows appended and not yet sent (their parameters end the arrays above).
    private var pendingRows: Int { valueCount / columnCount - sent }

    // MARK: Encoding

    func append(_ row: UnsafeBufferPointer<Cell>) throws {
        if copyPlanned { try startCopy() }
        try reserve(for: row)
        for index in 0..<columnCount {
            let value = index < row.count ? row[index] : .null
            let type = Int(types[index])
            let start = byteCount
            let slot = bytes + start
            var length: Int32
            var format: Int32 = 1
            switch value {
            case .null:
                offsets[valueCount] = -1
                lengths[valueCount] = 0
                formats[valueCount] = 0
                valueCount &+= 1
                continue
            case .integer(let int):
                (length, format) = ParameterLayout.write(int, as: type, to: slot)
            case .real(let double):
                (length, format) = ParameterLayout.write(double, as: type, to: slot)
            case .text(let utf8):
                length = Int32(utf8.count)
                if let base = utf8.baseAddress {
                    guard memchr(base, 0, utf8.count) == nil else {
                        try collect()
                        throw BulkInsertFailure(
                            row: valueCount / columnCount,
                            ActiveRecordError(
                                .invalidValue,
                                "PostgreSQL text cannot hold a NUL character (parameter \(index + 1)); store the bytes as Data"))
                    }
                    slot.copyMemory(from: base, byteCount: utf8.count)
                }
                if !ParameterLayout.takesTextAsBinary(type) {
                    slot.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
                    format = 0
                }
            case .blob(let blob):
                length = Int32(blob.count)
                if let base = blob.baseAddress { slot.copyMemory(from: base, byteCount: blob.count) }
            }
            // Text (numbers too) keeps its NUL.
            byteCount = start &+ Int(length) &+ Int(1 &- format)
            offsets[valueCount] = start
            lengths[valueCount] = length
            formats[valueCount] = format
            valueCount &+= 1
        }
        if let copy {
            try append(valueCount &- columnCount, to: copy)
        } else if pendingRows == rowsPerStatement {
            try insertPending()
        }
    }

    /// Makes room for `row`: its values, and its bytes (32 a number, written as binary or text,
    /// and the text and bytes with a NUL).
    @inline(__always)
    private func reserve(for row: UnsafeBufferPointer<Cell>) throws {
        if valueCount &+ columnCount > valueCapacity {
            let capacity = 2 * valueCapacity
            offsets = Self.grow(offsets, from: valueCount, to: capacity)
            lengths = Self.grow(lengths, from: valueCount, to: capacity)
            formats = Self.grow(formats, from: valueCount, to: capacity)
            valueCapacity = capacity
        }
        var needed = byteCount &+ columnCount &* 32
        for cell in row {
            switch cell {
            case .text(let bytes), .blob(let bytes): needed &+= bytes.count &+ 1
            default: break
            }
        }
        guard needed > byteCapacity else { return }
        let capacity = max(needed, 2 * byteCapacity)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        grown.copyMemory(from: bytes, byteCount: byteCount)
        bytes.deallocate()
        bytes = grown
        byteCapacity = capacity
    }

    private static func grow<T>(_ pointer: UnsafeMutablePointer<T>, from count: Int, to capacity: Int) -> UnsafeMutablePointer<T> {
        let grown = UnsafeMutablePointer<T>.allocate(capacity: capacity)
        grown.moveInitialize(from: pointer, count: count)
        pointer.deallocate()
        return grown
    }

    func finish() throws -> [Int64] {
        if let copy { try finish(copy) }
        if pendingRows > 0 { try insertPending() }
        try collect()
        if hasSavepoint { try command("RELEASE SAVEPOINT \(Self.savepoint)") }
        return ids
    }

    // MARK: Running

    /// The SQL of a statement of `rows` rows.
    private func sql(rows: Int) -> String {
        if rows == 1 { return oneRowSQL }
        guard rows == rowsPerStatement else { return BulkInsertForm.sql(head: head, rows: rows, columns: columnCount) }
        if let fullSQL { return fullSQL }
        let made = BulkInsertForm.sql(head: head, rows: rows, columns: columnCount)
        fullSQL = made
        return made
    }

    /// Sends the pending rows' statement (the first time, after a savepoint), once the result
    /// of the one in flight is read.
    private func insertPending(rows: Int? = nil) throws {
        let rows = rows ?? pendingRows
        try collect()
        try connection.deallocateEvicted()
        if !hasSavepoint {
            try command("SAVEPOINT \(Self.savepoint)")
            hasSavepoint = true
        }
        // Left in flight when nothing has to go before the next command (a statement timeout
        // to set, a transaction pooler's settings): the client encodes the next rows while the
        // server inserts these.
        let inFlight: Bool
        do {
            inFlight = try send(rows: sent..<(sent + rows))
        } catch {
            throw fail(error, rows: rows)
        }
        sent += rows
        if !inFlight { inserted = sent }
    }

    /// Whether a statement can be left in flight: nothing goes before a command on the connection.
    private var canOverlap: Bool { !connection.needsPreparation && !connection.transactionPooling }

    /// Reads the result of the statement in flight, if any: its ids.
    /// - Throws: ``BulkInsertFailure``, with the row that failed.
    private func collect() throws {
        guard sent > inserted else { return }
        let rows = sent - inserted
        do {
            try receive(rows: inserted..<sent, try connection.result(ofSent: 1))
        } catch {
            sent = inserted
            throw fail(error, rows: rows)
        }
        inserted = sent
    }

    /// The failure of the statement of `rows` rows after those inserted, with its row
    /// (``diagnose(_:rows:)``); the connection describes the table again next time.
    private func fail(_ error: any Error, rows: Int) -> BulkInsertFailure {
        let failure = diagnose(error, rows: rows)
        forgetForm()
        return failure
    }

    /// After a failure: the connection describes the table again next time (it may have
    /// changed), and deallocates the full statement.
    private func forgetForm() {
        guard connection.bulkStatements[oneRowSQL] === form else { return }
        connection.bulkStatements[oneRowSQL] = nil
        if let name = form.preparedName { connection.deallocations.append(name) }
        form.preparedName = nil
    }

    /// Runs the statement of `rows` (from the first appended) and reads its ids.
    private func run(rows: Range<Int>) throws {
        _ = try send(rows: rows, wait: true)
    }

    /// Sends the statement of `rows` (from the first appended): a full statement's worth
    /// prepared once per connection (unnamed behind a transaction pooler), fewer unnamed. When
    /// `wait`, or when the statement cannot be left in flight, reads its ids; else returns
    /// `true`: its result is to be read (``collect()``) before the next command.
    private func send(rows: Range<Int>, wait: Bool = false) throws -> Bool {
        let connection = self.connection
        let first = rows.lowerBound * columnCount
        let count = rows.count * columnCount
        for index in 0..<count {
            let offset = offsets[first + index]
            pointers[index] = offset >= 0 ? UnsafePointer((bytes + offset).assumingMemoryBound(to: CChar.self)) : nil
        }
        if let trace { trace(sql(rows: rows.count)) }
        let resultFormat: Int32 = form.binaryIds ? 1 : 0
        let (values, lengths, formats, types) = (pointers, self.lengths + first, self.formats + first, self.types)
        let named = rows.count == rowsPerStatement && !connection.transactionPooling
        let name = named ? try preparedName() : nil
        let sql = named ? "" : sql(rows: rows.count)
        let send = {
            if let name {
                PQsendQueryPrepared(connection.handle, name, Int32(count), values, lengths, formats, resultFormat)
            } else {
                PQsendQueryParams(connection.handle, sql, Int32(count), types, values, lengths, formats, resultFormat)
            }
        }
        guard !wait, canOverlap else {
            try receive(rows: rows, connection.exchange(for: sql, send))
            return false
        }
        try connection.throwIfClosed()
        // libpq copies the values: the bytes may grow while the statement runs.
        let sent = send()
        if sent != 1 { _ = try connection.checked(sql, connection.result(ofSent: sent)) }
        return true
    }

    /// Reads the ids of the statement of `rows` from its `result` (clearing it).
    private func receive(rows: Range<Int>, _ result: OpaquePointer?) throws {
        _ = try connection.checked(sql(rows: rows.count), result)
        defer { PQclear(result) }
        guard PQntuples(result) == Int32(rows.count) else {
            throw ActiveRecordError(.engine, "the INSERT returned \(PQntuples(result)) ids for \(rows.count) rows", sql: sql(rows: rows.count))
        }
        for row in 0..<Int32(rows.count) { ids.append(id(result, row)) }
    }

    /// The id in row `row` of `result`: a binary integer of its length, or text.
    @inline(__always)
    private func id(_ result: OpaquePointer?, _ row: Int32) -> Int64 {
        guard let text = PQgetvalue(result, row, 0) else { return 0 }
        guard form.binaryIds else { return strtoll(text, nil, 10) }
        let value = UnsafeRawPointer(text)
        switch PQgetlength(result, row, 0) {
        case 8: return Int64(bigEndian: value.loadUnaligned(as: Int64.self))
        case 4: return Int64(Int32(bigEndian: value.loadUnaligned(as: Int32.self)))
        default: return Int64(Int16(bigEndian: value.loadUnaligned(as: Int16.self)))
        }
    }

    /// The name of the full statement on the server, prepared now (with the columns' types,
    /// row after row) if it is not yet.
    private func preparedName() throws -> String {
        if let name = form.preparedName { return name }
        let connection = self.connection, sql = sql(rows: rowsPerStatement), types = self.types
        let name = connection.makeName("bulk")
        let prepared = try connection.exchange(for: sql) {
            PQsendPrepare(connection.handle, name, sql, Int32(rowsPerStatement * columnCount), types)
        }
        _ = try connection.checked(sql, prepared)
        PQclear(prepared)
        form.preparedName = name
        return name
    }

    // MARK: COPY (PostgreSQLConnection+BulkCopy.swift)

    /// Starts the COPY the rows go by, after the savepoint, when the table allows it as it is
    /// now (else the rows go by `VALUES`, which the server converts to changed columns' types).
    private func startCopy() throws {
        copyPlanned = false
        do {
            try connection.deallocateEvicted()
            try command("SAVEPOINT \(Self.savepoint)")
            hasSavepoint = true
            guard let sequence = try copySequence(into: table, columns: columns, types: form.columnTypes, on: connection)
            else { return }
            copy = try BulkCopy(
                connection: connection, table: table, columns: columns, types: form.columnTypes, sequence: sequence,
                rowCount: rowCount, trace: trace)
        } catch {
            forgetForm()
            throw BulkInsertFailure(row: nil, error)
        }
    }

    /// Frames the row whose values start at `first` into `copy`; when the COPY cannot carry it,
    /// the rows go by `VALUES` instead, from the savepoint.
    private func append(_ first: Int, to copy: BulkCopy) throws {
        let framed: Bool
        do {
            framed = try copy.append(
                columns: columnCount, bytes: bytes, offsets: offsets + first, lengths: lengths + first, formats: formats + first)
        } catch {
            throw fail(copy, error)
        }
        guard !framed else { return }
        self.copy = nil
        do {
            try copy.cancel("the bulk insert goes on by INSERT")
            try command("ROLLBACK TO SAVEPOINT \(Self.savepoint)")
        } catch {
            throw BulkInsertFailure(row: nil, error)
        }
        while pendingRows >= rowsPerStatement { try insertPending(rows: rowsPerStatement) }
    }

    /// Ends the COPY: every row inserted, with the ids taken for them.
    private func finish(_ copy: BulkCopy) throws {
        do {
            try copy.end()
        } catch {
            throw fail(copy, error)
        }
        self.copy = nil
        let rows = valueCount / columnCount
        ids = Array(copy.ids.prefix(rows))
        (sent, inserted) = (rows, rows)
    }

    /// The failure of the COPY (`error`), with the row that caused it: back to the savepoint,
    /// the rows go again by `VALUES` statements until one fails, whose rows are then tried one at
    /// a time (``diagnose(_:rows:)``).
    private func fail(_ copy: BulkCopy, _ error: any Error) -> BulkInsertFailure {
        self.copy = nil
        forgetForm()
        if copy.isOpen { try? copy.cancel("the bulk insert failed") }
        guard let failure = error as? ActiveRecordError, connection.isUsable, failure.code != .timeout,
            (try? command("ROLLBACK TO SAVEPOINT \(Self.savepoint)")) != nil
        else { return BulkInsertFailure(row: nil, error) }
        let rows = valueCount / columnCount
        (sent, inserted) = (0, 0)
        ids.removeAll(keepingCapacity: true)
        for start in stride(from: 0, to: rows, by: rowsPerStatement) {
            let end = min(rows, start + rowsPerStatement)
            do {
                try run(rows: start..<end)
            } catch {
                inserted = start
                return diagnose(error, rows: end - start)
            }
        }
        return BulkInsertFailure(row: nil, failure)
    }

    /// Runs commands without parameters or results, one after another (each in its own
    /// message, so that a transaction pooler's settings can go before the first).
    private func command(_ sql: String) throws {
        trace?(sql)
        let connection = self.connection
        let result = try connection.exchange(for: sql) { PQsendQueryParams(connection.handle, sql, 0, nil, nil, nil, nil, 0) }
        _ = try connection.checked(sql, result)
        PQclear(result)
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
        ids.removeAll(keepingCapacity: true)
        do {
            for start in stride(from: 0, to: inserted, by: rowsPerStatement) {
                try run(rows: start..<(start + rowsPerStatement))
            }
        } catch {
            return BulkInsertFailure(row: nil, failure)
        }
        for row in inserted..<(inserted + rows) {
            do {
                try run(rows: row..<(row + 1))
            } catch {
                return BulkInsertFailure(row: row, error)
            }
        }
        return BulkInsertFailure(row: nil, failure)
    }
}
