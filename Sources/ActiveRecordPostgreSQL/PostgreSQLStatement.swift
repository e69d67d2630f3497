import ActiveRecordLibPQ
@_spi(Engines) import ARCore
import Foundation

/// One statement on a ``PostgreSQLConnection``, run with the extended protocol: values are
/// sent apart from the SQL (text, and `bytea` as binary).
///
/// A cached statement is prepared on the server the first time it runs (`PQsendPrepare`), its
/// result columns described (`PQsendDescribePrepared`), and then only executed; when every result
/// column has a type the library decodes from PostgreSQL's binary format (the integers,
/// floating point, booleans, text, `bytea`, `numeric`, `uuid`, JSON), it asks for binary
/// results: no number is formatted by the server and parsed again here. A statement that
/// runs once is parsed and run in one round trip (`PQsendQueryParams`) with text results; a
/// cursor's is declared as a server cursor (`DECLARE … NO SCROLL CURSOR`) and read 256 rows
/// at a time (`FETCH FORWARD`), so that it holds constant memory.
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
    private let placeholderCount: Int
    private let use: StatementUse
    @exclusivity(unchecked) private var values: [DatabaseValue]
    /// Server-side names of this statement, one per set of parameter types it ran with, and
    /// whether it asks for binary results.
    @exclusivity(unchecked) private var prepared: [[Oid]: (name: String, binary: Bool)] = [:]
    /// Whether the current result is in binary format.
    @exclusivity(unchecked) private var binary = false

    /// The current result, its row count, and the row a step is on.
    @exclusivity(unchecked) private var result: OpaquePointer?
    @exclusivity(unchecked) private var rowCount: Int32 = 0
    @exclusivity(unchecked) private var rowIndex: Int32 = -1
    @exclusivity(unchecked) private var hasRun = false
    /// The result's column types (OIDs), read once per result.
    @exclusivity(unchecked) private var columnTypes: [Int] = []
    /// For a cursor: its server-side name, and whether its last batch was full (more may follow).
    @exclusivity(unchecked) private var cursorName: String?
    @exclusivity(unchecked) private var cursorMayHaveMore = false
    private static let cursorBatch: Int32 = 256

    /// Scratch storage for the parameters of one execution (kept to save allocations).
    @exclusivity(unchecked) private var buffer: [UInt8] = []
    @exclusivity(unchecked) private var offsets: [Int] = []
    @exclusivity(unchecked) private var lengths: [Int32] = []
    @exclusivity(unchecked) private var formats: [Int32] = []
    @exclusivity(unchecked) private var types: [Oid] = []
    /// Where each parameter's bytes start, for the call (rebuilt per call: `buffer` may move).
    @exclusivity(unchecked) private var pointers: [UnsafePointer<CChar>?] = []
    /// The current row's cells (``row()``), and how many they have room for.
    private var cells = UnsafeMutablePointer<Cell>.allocate(capacity: 1)
    private var cellCapacity: Int32 = 1
    /// What the current row's decoded cells point to (freed at the next row).
    private var kept: [UnsafeMutableRawBufferPointer] = []

    /// - Throws: `.misuse` for SQL with a second statement (the extended protocol runs one).
    init(sql: String, use: StatementUse, connection: PostgreSQLConnection) throws {
        self.connection = connection
        self.sql = sql
        self.use = use
        let rewritten = rewritingPlaceholders(sql) { "$\($0)" }
        guard !rewritten.hasMoreStatements else {
            throw ActiveRecordError(.misuse, "only one SQL statement may run at a time", sql: sql)
        }
        (text, placeholderCount) = (rewritten.sql, rewritten.count)
        values = Array(repeating: .null, count: placeholderCount)
    }

    deinit {
        clearResult()
        for bytes in kept { bytes.deallocate() }
        cells.deallocate()
    }

    // MARK: Binding

    var parameterCount: Int32 { Int32(placeholderCount) }

    /// Keeps the values until the statement runs (text and bytes copied).
    func bind(_ parameters: UnsafeBufferPointer<Cell>) throws {
        for (offset, parameter) in parameters.enumerated() {
            switch parameter {
            case .null: values[offset] = .null
            case .integer(let int): values[offset] = .integer(int)
            case .real(let real): values[offset] = .real(real)
            case .text(let utf8):
                if utf8.contains(0) { throw nulInText(offset + 1) }
                values[offset] = .text(String(decoding: utf8, as: UTF8.self))
            case .blob(let bytes): values[offset] = .blob(Data(bytes))
            }
        }
    }

    private func nulInText(_ index: Int) -> ActiveRecordError {
        ActiveRecordError(
            .invalidValue, "PostgreSQL text cannot hold a NUL character (parameter \(index)); store the bytes as Data", sql: sql)
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

    /// Appends `value`'s decimal digits: written right to left into a small stack buffer,
    /// then appended at once (a digit at a time into `buffer` cost ~780 instructions an id).
    private func appendDecimal(_ value: Int64) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    // MARK: Running

    func step() throws -> Bool {
        if !hasRun {
            try execute()
            hasRun = true
        }
        rowIndex += 1
        if rowIndex < rowCount { return true }
        guard use == .cursor, cursorMayHaveMore, let cursorName else { return false }
        try run("FETCH FORWARD \(Self.cursorBatch) FROM \(cursorName.quotedIdentifier)", parameters: false)
        cursorMayHaveMore = rowCount == Self.cursorBatch
        rowIndex = 0
        return rowCount > 0
    }

    func insert() throws -> Int64 {
        guard try step() else {
            throw ActiveRecordError(.engine, "the INSERT returned no id", sql: sql)
        }
        return int64(0)
    }

    /// Reads the column ``PostgreSQLDialect/upsertSQL(into:columns:conflictColumns:updateColumns:returning:)``
    /// appends after the returned ones: `xmax = 0`, true for a row the statement inserted.
    func upsert() throws -> Bool {
        guard try step() else {
            throw ActiveRecordError(.misuse, "the upsert returned no row", sql: sql)
        }
        return int64(columnCount - 1) == 1
    }

    private func execute() throws {
        let connection = self.connection
        try connection.deallocateEvicted()
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
            let statement: (name: String, binary: Bool)
            if let known = prepared[types] {
                statement = known
            } else {
                statement = try prepareOnServer()
                prepared[types] = statement
            }
            let executed = try connection.exchange {
                withParameters { values, lengths, formats in
                    PQsendQueryPrepared(
                        connection.handle, statement.name, Int32(placeholderCount), values, lengths, formats, statement.binary ? 1 : 0)
                }
            }
            try adopt(executed, binary: statement.binary)
        }
    }

    /// Prepares the statement for the current parameter types, and describes its result
    /// columns: binary results when the library decodes every one of their types.
    private func prepareOnServer() throws -> (name: String, binary: Bool) {
        let connection = self.connection
        let name = connection.makeName("statement")
        let prepareResult = try connection.exchange {
            types.withUnsafeBufferPointer { types in
                PQsendPrepare(connection.handle, name, text, Int32(placeholderCount), types.baseAddress)
            }
        }
        try check(prepareResult)
        PQclear(prepareResult)
        // The description lists the parameters too, in one message; libpq before 17 takes a
        // message over 30,000 bytes for a lost connection. Many parameters: text results.
        guard placeholderCount <= Self.maximumDescribedParameters else { return (name, false) }
        let description = try connection.exchange { PQsendDescribePrepared(connection.handle, name) }
        try check(description)  // clears it when it failed
        let columns = PQnfields(description)
        let binary = columns > 0 && (0..<columns).allSatisfy { Self.binaryTypes.contains(Int(PQftype(description, $0))) }
        PQclear(description)
        return (name, binary)
    }

    /// Statements with more parameters are not described (see ``prepareOnServer()``).
    private static let maximumDescribedParameters = 5_000

    /// The types whose binary format ``value(_:)`` decodes.
    private static let binaryTypes: Set<Int> = [
        AR_PG_BOOL, AR_PG_BYTEA, AR_PG_NAME, AR_PG_INT8, AR_PG_INT2, AR_PG_INT4, AR_PG_TEXT, AR_PG_OID, AR_PG_JSON,
        AR_PG_FLOAT4, AR_PG_FLOAT8, AR_PG_BPCHAR, AR_PG_VARCHAR, AR_PG_NUMERIC, AR_PG_UUID, AR_PG_JSONB,
    ]

    /// Runs `sql` (with the bound parameters, or none) in one round trip and keeps its result.
    private func run(_ sql: String, parameters: Bool) throws {
        clearResult()
        if parameters { encodeParameters() }
        let count = parameters ? Int32(placeholderCount) : 0
        let connection = self.connection
        let executed = try connection.exchange {
            withParameters { values, lengths, formats in
                types.withUnsafeBufferPointer { types in
                    PQsendQueryParams(connection.handle, sql, count, parameters ? types.baseAddress : nil, values, lengths, formats, 0)
                }
            }
        }
        try adopt(executed)
    }

    private func withParameters<R>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
    ) -> R {
        buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress)
            pointers.removeAll(keepingCapacity: true)
            for offset in offsets {
                pointers.append(offset >= 0 ? base.map { ($0 + offset).assumingMemoryBound(to: CChar.self) } : nil)
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
            let error = postgreSQLError(result, connection, sql: sql)
            PQclear(result)
            throw error
        }
    }

    private func adopt(_ executed: OpaquePointer?, binary: Bool = false) throws {
        try check(executed)
        result = executed
        self.binary = binary
        rowCount = PQntuples(executed)
        rowIndex = -1
        columnTypes.removeAll(keepingCapacity: true)
        for column in 0..<PQnfields(executed) { columnTypes.append(Int(PQftype(executed, column))) }
        // The command tag (`INSERT 0 1`, `UPDATE 3`): the rows a write changed.
        if let tag = PQcmdStatus(executed), Self.isWrite(tag) {
            connection.lastChanged = Int(strtol(PQcmdTuples(executed), nil, 10))
        }
    }

    /// Whether a command tag is an `INSERT`, `UPDATE`, `DELETE` or `MERGE`'s.
    private static func isWrite(_ tag: UnsafePointer<CChar>) -> Bool {
        strncmp(tag, "INSERT", 6) == 0 || strncmp(tag, "UPDATE", 6) == 0 || strncmp(tag, "DELETE", 6) == 0
            || strncmp(tag, "MERGE", 5) == 0
    }

    private func clearResult() {
        if let result { PQclear(result) }
        result = nil
        rowCount = 0
        rowIndex = -1
    }

    func reset() {
        resetKeepingBindings()
        for index in values.indices { values[index] = .null }
    }

    func resetKeepingBindings() {
        clearResult()
        hasRun = false
    }

    /// A cursor closes with its transaction (closing it here could fail, and abort the
    /// transaction, if a rollback to a savepoint closed it already); a prepared statement is
    /// deallocated before the connection's next statement.
    func finalize() {
        clearResult()
        connection.deallocations += prepared.values.map(\.name)
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

    private func isNull(_ index: Int32) -> Bool { PQgetisnull(current, rowIndex, index) == 1 }

    /// The column's type (OID), read once per result.
    private func type(_ index: Int32) -> Int { columnTypes[Int(index)] }

    /// The column's value as libpq holds it: text (NUL-terminated) or binary.
    private func bytes(_ index: Int32) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: PQgetvalue(current, rowIndex, index), count: Int(PQgetlength(current, rowIndex, index)))
    }

    private func int64(_ index: Int32) -> Int64 {
        switch decode(index) {
        case .integer(let int): return int
        case .real(let double): return Int64(exactly: double.rounded(.towardZero)) ?? 0
        case .text(let text): return Int64(text) ?? 0
        default: return 0
        }
    }





    /// A column's value, decoded from the result's format by its type.
    private enum Decoded {
        case null, integer(Int64), real(Double), text(String), blob(Data)
        /// Text that is not valid UTF-8.
        case invalid
    }

    @inline(__always)
    private func decode(_ index: Int32) -> Decoded {
        let result = current
        guard PQgetisnull(result, rowIndex, index) == 0, let pointer = PQgetvalue(result, rowIndex, index) else { return .null }
        let value = UnsafeRawBufferPointer(start: pointer, count: Int(PQgetlength(result, rowIndex, index)))
        return binary ? decodeBinary(value, type: type(index)) : decodeText(value, type: type(index))
    }

    private func decodeText(_ text: UnsafeRawBufferPointer, type: Int) -> Decoded {
        switch type {
        case AR_PG_BOOL: return .integer(text.first == UInt8(ascii: "t") ? 1 : 0)
        case AR_PG_INT8, AR_PG_INT4, AR_PG_INT2, AR_PG_OID: return .integer(parseInteger(text) ?? 0)
        case AR_PG_FLOAT8, AR_PG_FLOAT4: return .real(parseDouble(text))
        case AR_PG_BYTEA: return .blob(decodingHex(text))
        case AR_PG_NUMERIC:
            if let int = parseInteger(text) { return .integer(int) }
            fallthrough
        default:
            return utf8(text)
        }
    }

    /// PostgreSQL's binary formats (network byte order) of ``binaryTypes``.
    private func decodeBinary(_ value: UnsafeRawBufferPointer, type: Int) -> Decoded {
        func load<T: FixedWidthInteger>(_: T.Type) -> T {
            value.count >= MemoryLayout<T>.size ? T(bigEndian: value.loadUnaligned(as: T.self)) : 0
        }
        switch type {
        case AR_PG_INT8: return .integer(load(Int64.self))
        case AR_PG_INT4: return .integer(Int64(load(Int32.self)))
        case AR_PG_INT2: return .integer(Int64(load(Int16.self)))
        case AR_PG_OID: return .integer(Int64(load(UInt32.self)))
        case AR_PG_BOOL: return .integer(value.first == 0 || value.isEmpty ? 0 : 1)
        case AR_PG_FLOAT8: return .real(Double(bitPattern: load(UInt64.self)))
        case AR_PG_FLOAT4: return .real(Double(Float(bitPattern: load(UInt32.self))))
        case AR_PG_BYTEA: return .blob(Data(value))
        case AR_PG_NUMERIC:
            guard let numeric = numericText(value) else { return .invalid }
            if numeric.isInteger, let int = Int64(numeric.text) { return .integer(int) }
            return .text(numeric.text)
        case AR_PG_UUID: return value.count == 16 ? .text(uuidText(value)) : .invalid
        case AR_PG_JSONB: return value.isEmpty ? .invalid : utf8(UnsafeRawBufferPointer(rebasing: value.dropFirst()))
        default: return utf8(value)
        }
    }

    /// Text from libpq, which ends every value with a NUL (PostgreSQL text holds none): the
    /// C-string initializer validates on its fast path (the generic `String(validating:as:)`
    /// looks up type metadata per call).
    private func utf8(_ bytes: UnsafeRawBufferPointer) -> Decoded {
        guard let base = bytes.baseAddress else { return .text("") }
        let text = base.withMemoryRebound(to: CChar.self, capacity: bytes.count + 1) { cString in
            strlen(cString) == bytes.count
                ? String(validatingCString: cString)
                : String(validating: UnsafeRawBufferPointer(start: base, count: bytes.count).bindMemory(to: UInt8.self), as: UTF8.self)
        }
        return text.map(Decoded.text) ?? .invalid
    }

    /// The current row's cells: text and `bytea` as libpq holds them (binary results), other
    /// types decoded (``decode(_:)``), what they decode to kept until the next row.
    func row() -> UnsafeBufferPointer<Cell> {
        for bytes in kept { bytes.deallocate() }
        kept.removeAll(keepingCapacity: true)
        let count = columnCount
        if count > cellCapacity {
            cells.deallocate()
            cells = .allocate(capacity: Int(count))
            cellCapacity = count
        }
        var index: Int32 = 0
        while index < count {
            cells[Int(index)] = cell(index)
            index &+= 1
        }
        return UnsafeBufferPointer(start: cells, count: Int(count))
    }

    private func cell(_ index: Int32) -> Cell {
        guard !isNull(index) else { return .null }
        let raw = bytes(index)
        switch (binary, type(index)) {
        case (_, AR_PG_TEXT), (_, AR_PG_VARCHAR): return .text(raw)
        case (true, AR_PG_BYTEA): return .blob(raw)
        case (true, AR_PG_INT8): return .integer(raw.count == 8 ? Int64(bigEndian: raw.loadUnaligned(as: Int64.self)) : 0)
        default: break
        }
        switch decode(index) {
        case .null: return .null
        case .integer(let int): return .integer(int)
        case .real(let double): return .real(double)
        case .text(var text): return text.withUTF8 { .text(keep(UnsafeRawBufferPointer($0), terminated: true)) }
        case .blob(let data): return data.withUnsafeBytes { .blob(keep($0, terminated: false)) }
        case .invalid: return .text(raw)
        }
    }

    /// A copy of `bytes` (followed by a NUL when `terminated`) that lasts until the next row.
    private func keep(_ bytes: UnsafeRawBufferPointer, terminated: Bool) -> UnsafeRawBufferPointer {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count + 1, alignment: 1)
        copy.copyMemory(from: bytes)
        copy[bytes.count] = 0
        kept.append(copy)
        return UnsafeRawBufferPointer(rebasing: copy[..<bytes.count])
    }
}

/// A `numeric`'s text from its binary format (PostgreSQL's `numeric_send`): the digits in
/// base 10,000 with a weight, a sign and a display scale; `isInteger` when it has no
/// fraction. `nil` for a malformed value.
private func numericText(_ value: UnsafeRawBufferPointer) -> (text: String, isInteger: Bool)? {
    guard value.count >= 8 else { return nil }
    func int16(_ offset: Int) -> Int { Int(Int16(bigEndian: value.loadUnaligned(fromByteOffset: offset, as: Int16.self))) }
    let count = int16(0), weight = int16(2), scale = int16(6)
    let sign = UInt16(bitPattern: Int16(truncatingIfNeeded: int16(4)))
    switch sign {
    case 0xC000: return ("NaN", false)
    case 0xD000: return ("Infinity", false)
    case 0xF000: return ("-Infinity", false)
    default: break
    }
    guard count >= 0, value.count >= 8 + 2 * count else { return nil }
    func digit(_ position: Int) -> Int { position >= 0 && position < count ? int16(8 + 2 * position) : 0 }
    var text = sign == 0x4000 ? "-" : ""
    if weight < 0 {
        text += "0"
    } else {
        for position in 0...weight {
            let group = String(digit(position))
            text += position == 0 ? group : String(repeating: "0", count: 4 - group.count) + group
        }
    }
    if scale > 0 {
        var fraction = ""
        var position = weight + 1
        while fraction.count < scale {
            let group = String(digit(position))
            fraction += String(repeating: "0", count: 4 - group.count) + group
            position += 1
        }
        text += "." + fraction.prefix(scale)
    }
    return (text, scale == 0)
}

/// A `uuid`'s 16 bytes as PostgreSQL writes it: lower-case hex, 8-4-4-4-12.
private func uuidText(_ bytes: UnsafeRawBufferPointer) -> String {
    let hex = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(36)
    for (offset, byte) in bytes.enumerated() {
        if offset == 4 || offset == 6 || offset == 8 || offset == 10 { text.append(UInt8(ascii: "-")) }
        text.append(hex[Int(byte >> 4)])
        text.append(hex[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
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

/// A floating-point value's text (NUL-terminated, as libpq gives it). The common case — at
/// most 15 significant digits and a power of ten up to 22, as PostgreSQL writes timestamps,
/// scores and the like — is computed exactly from integers (one correctly rounded
/// operation on exact operands); anything else goes to `strtod`.
private func parseDouble(_ text: UnsafeRawBufferPointer) -> Double {
    var mantissa: UInt64 = 0
    var digits = 0, fraction = 0, index = 0
    let negative = text.first == UInt8(ascii: "-")
    if negative { index = 1 }
    var seenPoint = false
    while index < text.count {
        let byte = text[index]
        if byte == UInt8(ascii: ".") && !seenPoint {
            seenPoint = true
        } else if byte &- UInt8(ascii: "0") < 10 {
            mantissa = mantissa &* 10 &+ UInt64(byte &- UInt8(ascii: "0"))
            digits += 1
            if seenPoint { fraction += 1 }
        } else {
            break
        }
        index += 1
    }
    guard index == text.count, digits > 0, digits <= 15, fraction <= 22 else {
        return strtod(text.baseAddress!.assumingMemoryBound(to: CChar.self), nil)
    }
    let value = fraction == 0 ? Double(mantissa) : Double(mantissa) / powersOfTen[fraction]
    return negative ? -value : value
}

/// 1e0 … 1e22, each exact in a Double.
private let powersOfTen: [Double] = (0...22).map { exponent in (0..<exponent).reduce(1.0) { value, _ in value * 10 } }

/// The bytes of `bytea` hex output (`\x0aff`), decoded straight into their `Data`.
private func decodingHex(_ text: UnsafeRawBufferPointer) -> Data {
    guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return Data(text) }
    // PostgreSQL writes hex in lower case; an upper-case letter is read as well.
    @inline(__always) func nibble(_ byte: UInt8) -> UInt8 {
        if byte <= UInt8(ascii: "9") { return byte &- UInt8(ascii: "0") }
        return (byte | 0x20) &- UInt8(ascii: "a") &+ 10
    }
    let count = (text.count - 2) / 2
    var data = Data(count: count)
    data.withUnsafeMutableBytes { bytes in
        guard let output = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
              let input = text.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var index = 0
        while index < count {
            output[index] = nibble(input[2 + 2 &* index]) << 4 | nibble(input[3 + 2 &* index])
            index += 1
        }
    }
    return data
}
