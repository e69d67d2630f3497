import ActiveRecordLibPQ
import ARCore
import Foundation

/// One statement on a ``PostgreSQLConnection``, run with the extended protocol: values are
/// sent apart from the SQL (text, and `bytea` as binary), results come back as text.
///
/// A cached statement is prepared on the server the first time it runs (`PQprepare`) and
/// then only executed; one that runs once is parsed and run in one round trip
/// (`PQexecParams`); a cursor's is declared as a server cursor (`DECLARE … NO SCROLL CURSOR`)
/// and read 256 rows at a time (`FETCH FORWARD`), so that it holds constant memory.
///
/// Parameter types: a `REAL` value is sent as `double precision` (so that comparing it with
/// a `bigint` column works); every other value as text of unspecified type, which the server
/// reads as the type the statement needs there (a boolean, a `numeric`, a `uuid`).
final class PostgreSQLStatement: EngineStatement {
    private unowned let connection: PostgreSQLConnection
    /// The SQL as the library wrote it (`?`), for errors.
    private let sql: String
    /// The SQL with numbered placeholders (`$1`).
    private let text: String
    private let parameterCount: Int
    private let use: StatementUse
    private var values: [DatabaseValue]
    /// Server-side names of this statement, one per set of parameter types it ran with.
    private var prepared: [[Oid]: String] = [:]

    /// The current result, its row count, and the row a step is on.
    private var result: OpaquePointer?
    private var rowCount: Int32 = 0
    private var row: Int32 = -1
    private var hasRun = false
    /// For a cursor: its server-side name, and whether its last batch was full (more may follow).
    private var cursorName: String?
    private var cursorMayHaveMore = false
    private static let cursorBatch: Int32 = 256

    /// Scratch storage for the parameters of one execution (kept to save allocations).
    private var buffer: [UInt8] = []
    private var offsets: [Int] = []
    private var lengths: [Int32] = []
    private var formats: [Int32] = []
    private var types: [Oid] = []
    /// The bytes of the last `bytea` cell read (``cell(_:)``), valid until the next one.
    private var cellBytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)

    /// - Throws: `.misuse` for SQL with a second statement (the extended protocol runs one).
    init(sql: String, use: StatementUse, connection: PostgreSQLConnection) throws {
        self.connection = connection
        self.sql = sql
        self.use = use
        let rewritten = rewritingPlaceholders(sql) { "$\($0)" }
        guard !rewritten.hasMoreStatements else {
            throw ActiveRecordError(.misuse, "only one SQL statement may run at a time", sql: sql)
        }
        (text, parameterCount) = (rewritten.sql, rewritten.count)
        values = Array(repeating: .null, count: parameterCount)
    }

    deinit {
        clearResult()
        cellBytes.deallocate()
    }

    // MARK: Binding

    func bind(_ value: DatabaseValue, at index: Int32) throws {
        guard index >= 1, Int(index) <= parameterCount else {
            throw ActiveRecordError(
                .misuse, "parameter \(index) is out of range: the statement has \(parameterCount) parameter(s)", sql: sql)
        }
        if case .text(let string) = value, string.utf8.contains(0) {
            throw ActiveRecordError(
                .invalidValue, "PostgreSQL text cannot hold a NUL character (parameter \(index)); store the bytes as Data",
                sql: sql)
        }
        values[Int(index) - 1] = value
    }

    /// Lays the bound values out for libpq: text (NUL-terminated) or binary `bytea`.
    private func encodeParameters() {
        buffer.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        formats.removeAll(keepingCapacity: true)
        types.removeAll(keepingCapacity: true)
        for value in values {
            var format: Int32 = 0
            var type: Oid = 0
            let start = buffer.count
            switch value {
            case .null:
                offsets.append(-1)
                lengths.append(0)
                formats.append(0)
                types.append(0)
                continue
            case .integer(let int): appendDecimal(int)
            case .real(let double):
                type = Oid(AR_PG_FLOAT8)
                let text = double.isNaN ? "NaN" : double.isInfinite ? (double < 0 ? "-Infinity" : "Infinity") : "\(double)"
                buffer.append(contentsOf: text.utf8)
            case .text(let string): buffer.append(contentsOf: string.utf8)
            case .blob(let data):
                buffer.append(contentsOf: data)
                format = 1
                type = Oid(AR_PG_BYTEA)
            }
            let length = buffer.count - start
            if format == 0 { buffer.append(0) }
            offsets.append(start)
            lengths.append(Int32(length))
            formats.append(format)
            types.append(type)
        }
    }

    private func appendDecimal(_ value: Int64) {
        if value == 0 { buffer.append(UInt8(ascii: "0")); return }
        var magnitude = value.magnitude
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        let start = buffer.count
        while magnitude > 0 {
            buffer.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        }
        buffer[start...].reverse()
    }

    // MARK: Running

    func step() throws -> Bool {
        if !hasRun {
            try execute()
            hasRun = true
        }
        row += 1
        if row < rowCount { return true }
        guard use == .cursor, cursorMayHaveMore, let cursorName else { return false }
        try run("FETCH FORWARD \(Self.cursorBatch) FROM \(cursorName.quotedIdentifier)", parameters: false)
        cursorMayHaveMore = rowCount == Self.cursorBatch
        row = 0
        return rowCount > 0
    }

    func insert() throws -> Int64 {
        guard try step() else {
            throw ActiveRecordError(.postgreSQL, "the INSERT returned no id", sql: sql)
        }
        return int64(0)
    }

    private func execute() throws {
        connection.deallocateEvicted()
        switch use {
        case .once:
            try run(text, parameters: true)
        case .cursor:
            let name = connection.makeName("cursor")
            try run("DECLARE \(name.quotedIdentifier) NO SCROLL CURSOR FOR \(text)", parameters: true)
            cursorName = name
            cursorMayHaveMore = true
            rowCount = 0
        case .cached:
            encodeParameters()
            let name: String
            if let known = prepared[types] {
                name = known
            } else {
                name = connection.makeName("statement")
                let prepareResult = types.withUnsafeBufferPointer { types in
                    PQprepare(connection.handle, name, text, Int32(parameterCount), types.baseAddress)
                }
                try check(prepareResult)
                PQclear(prepareResult)
                prepared[types] = name
            }
            let executed = withParameters { values, lengths, formats in
                PQexecPrepared(connection.handle, name, Int32(parameterCount), values, lengths, formats, 0)
            }
            try adopt(executed)
        }
    }

    /// Runs `sql` (with the bound parameters, or none) in one round trip and keeps its result.
    private func run(_ sql: String, parameters: Bool) throws {
        clearResult()
        if parameters { encodeParameters() }
        let count = parameters ? Int32(parameterCount) : 0
        let executed = withParameters { values, lengths, formats in
            types.withUnsafeBufferPointer { types in
                PQexecParams(connection.handle, sql, count, parameters ? types.baseAddress : nil, values, lengths, formats, 0)
            }
        }
        try adopt(executed)
    }

    private func withParameters<R>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
    ) -> R {
        buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress)
            let pointers = offsets.map { offset -> UnsafePointer<CChar>? in
                guard offset >= 0, let base else { return nil }
                return (base + offset).assumingMemoryBound(to: CChar.self)
            }
            return pointers.withUnsafeBufferPointer { pointers in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(pointers.baseAddress, lengths.baseAddress, formats.baseAddress)
                    }
                }
            }
        }
    }

    /// Throws the error of a failed result (clearing it).
    private func check(_ result: OpaquePointer?) throws {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let error = postgreSQLError(result, connection.handle, sql: sql)
            PQclear(result)
            throw error
        }
    }

    private func adopt(_ executed: OpaquePointer?) throws {
        try check(executed)
        result = executed
        rowCount = PQntuples(executed)
        row = -1
        let status = String(cString: PQcmdStatus(executed))
        if status.hasPrefix("INSERT") || status.hasPrefix("UPDATE") || status.hasPrefix("DELETE") || status.hasPrefix("MERGE") {
            connection.lastChanged = Int(String(cString: PQcmdTuples(executed))) ?? 0
        }
    }

    private func clearResult() {
        if let result { PQclear(result) }
        result = nil
        rowCount = 0
        row = -1
    }

    func reset() {
        clearResult()
        hasRun = false
        for index in values.indices { values[index] = .null }
    }

    /// A cursor closes with its transaction (closing it here could fail, and abort the
    /// transaction, if a rollback to a savepoint closed it already); a prepared statement is
    /// deallocated before the connection's next statement.
    func finalize() {
        clearResult()
        connection.deallocations += prepared.values
        prepared.removeAll()
    }

    func expandedSQL() -> String? {
        rewritingPlaceholders(sql) { number in
            switch values[number - 1] {
            case .null: "NULL"
            case .integer(let int): String(int)
            case .real(let double): "\(double)"
            case .text(let text): quoteSQL(text, with: "'")
            case .blob(let data): "'\\x" + data.map { String(format: "%02x", $0) }.joined() + "'::bytea"
            }
        }.sql
    }

    // MARK: Columns

    var columnCount: Int32 { result.map(PQnfields) ?? 0 }

    func columnName(_ index: Int32) -> String {
        guard let result, let name = PQfname(result, index) else { return "" }
        return String(cString: name)
    }

    private var current: OpaquePointer { result.unsafelyUnwrapped }

    func isNull(_ index: Int32) -> Bool { PQgetisnull(current, row, index) == 1 }

    private func type(_ index: Int32) -> Int { Int(PQftype(current, index)) }

    private func bytes(_ index: Int32) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: PQgetvalue(current, row, index), count: Int(PQgetlength(current, row, index)))
    }

    func int64(_ index: Int32) -> Int64 {
        guard !isNull(index) else { return 0 }
        let text = bytes(index)
        if type(index) == AR_PG_BOOL { return text.first == UInt8(ascii: "t") ? 1 : 0 }
        if let int = parseInteger(text) { return int }
        let double = strtod(PQgetvalue(current, row, index), nil)
        return Int64(exactly: double.rounded(.towardZero)) ?? 0
    }

    func double(_ index: Int32) -> Double {
        guard !isNull(index) else { return 0 }
        if type(index) == AR_PG_BOOL { return bytes(index).first == UInt8(ascii: "t") ? 1 : 0 }
        return strtod(PQgetvalue(current, row, index), nil)
    }

    func string(_ index: Int32) -> String? {
        guard !isNull(index) else { return "" }
        return String(validatingCString: PQgetvalue(current, row, index))
    }

    func data(_ index: Int32) -> Data {
        guard !isNull(index) else { return Data() }
        if type(index) == AR_PG_BYTEA { return Data(decodingHex(bytes(index))) }
        return Data(bytes(index))
    }

    /// By the column's type: integers and booleans (0/1) as INTEGER, floating point as REAL,
    /// `numeric` as INTEGER when it is a whole number in Int64's range and as TEXT otherwise
    /// (exact), `bytea` as BLOB, anything else as TEXT.
    func value(_ index: Int32) throws -> DatabaseValue {
        guard !isNull(index) else { return .null }
        switch type(index) {
        case AR_PG_INT8, AR_PG_INT4, AR_PG_INT2, AR_PG_OID, AR_PG_BOOL: return .integer(int64(index))
        case AR_PG_FLOAT8, AR_PG_FLOAT4: return .real(double(index))
        case AR_PG_BYTEA: return .blob(data(index))
        case AR_PG_NUMERIC:
            if let int = parseInteger(bytes(index)) { return .integer(int) }
            fallthrough
        default:
            guard let text = string(index) else {
                throw invalidUTF8Error(column: index, bytes: Int(PQgetlength(current, row, index)))
            }
            return .text(text)
        }
    }

    func cell(_ index: Int32) -> Cell {
        guard !isNull(index) else { return .null }
        switch type(index) {
        case AR_PG_INT8, AR_PG_INT4, AR_PG_INT2, AR_PG_OID, AR_PG_BOOL: return .integer(int64(index))
        case AR_PG_FLOAT8, AR_PG_FLOAT4: return .real(double(index))
        case AR_PG_BYTEA:
            let decoded = decodingHex(bytes(index))
            cellBytes.deallocate()
            cellBytes = .allocate(byteCount: decoded.count, alignment: 1)
            cellBytes.copyBytes(from: decoded)
            return .blob(UnsafeRawBufferPointer(cellBytes))
        case AR_PG_NUMERIC:
            if let int = parseInteger(bytes(index)) { return .integer(int) }
            return .text(bytes(index))
        default: return .text(bytes(index))
        }
    }
}

/// A decimal integer (an optional `-`, digits) that fits Int64; `nil` for anything else.
private func parseInteger(_ text: UnsafeRawBufferPointer) -> Int64? {
    guard !text.isEmpty else { return nil }
    var index = 0
    let negative = text[0] == UInt8(ascii: "-")
    if negative { index = 1 }
    guard index < text.count else { return nil }
    var value: Int64 = 0
    while index < text.count {
        let digit = text[index] &- UInt8(ascii: "0")
        guard digit < 10 else { return nil }
        let (times, overflow) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = negative ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
        guard !overflow, !overflow2 else { return nil }
        value = sum
        index += 1
    }
    return value
}

/// The bytes of `bytea` hex output (`\x0aff`).
private func decodingHex(_ text: UnsafeRawBufferPointer) -> [UInt8] {
    guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return Array(text) }
    func nibble(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: byte &- UInt8(ascii: "A") &+ 10
        }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity((text.count - 2) / 2)
    var index = 2
    while index + 1 < text.count {
        bytes.append(nibble(text[index]) << 4 | nibble(text[index + 1]))
        index += 2
    }
    return bytes
}
