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

/// One statement on a ``PostgreSQLConnection``, run with the extended protocol: values are
/// sent apart from the SQL.
///
/// A cached statement is prepared on the server the first time it runs (`PQsendPrepare`), and
/// described (`PQsendDescribePrepared`: its parameters' and result columns' types), and then
/// only executed. Its parameters go in binary where their server types allow (see
/// ``ParameterLayout``); when every result column has a type the library decodes from
/// PostgreSQL's binary format (the integers, floating point, booleans, text, `bytea`,
/// `numeric`, `uuid`, JSON), it asks for binary results: no number is formatted on one side
/// and parsed again on the other. A statement that runs once is parsed and run in one round
/// trip (`PQsendQueryParams`) with text parameters and results; a
/// cursor's is declared as a server cursor (`DECLARE … NO SCROLL CURSOR`) and read a batch at
/// a time (`FETCH FORWARD`: 256 rows, then up to 4,096, in binary after the first batch when
/// its columns allow), so that it holds constant memory. Behind a transaction
/// pooler nothing is prepared by name: a cached statement runs unnamed every time (see
/// ``executeUnnamed()``).
///
/// Parameter types: a `REAL` value is declared `double precision` (so that comparing it with
/// a `bigint` column works), a blob `bytea`; every other value's type is left to the server,
/// which infers the type the statement needs there (a boolean, a `numeric`, a `uuid`).
final class PostgreSQLStatement: EngineStatement {
    /// Unowned without checks: the connection owns its statements (its cache) and finalizes
    /// them before it goes; a checked `unowned` paid a strong retain and release per use.
    private unowned(unsafe) let connection: PostgreSQLConnection
    /// ``connection`` for the per-run path: bound to a local, an `unowned(unsafe)` reference is
    /// retained and released; this one is passed on borrowed.
    private let unretainedConnection: Unretained<PostgreSQLConnection>
    /// The SQL as the library wrote it (`?`), for errors.
    private let sql: String
    /// The SQL with numbered placeholders (`$1`).
    private let text: String
    // Unchecked exclusivity on the per-run state below: a statement is used by one thread at a
    // time (its connection is confined), and none of these accesses overlaps another; checked
    // at run time, they cost the client more than its own work on a short statement (see
    // Benchmarks/README.md, Hot-path notes).
    let placeholderCount: Int
    private let use: StatementUse
    /// The parameters last bound: the caller's cells, whose text and bytes stay valid until
    /// the next bind, reset or finalize (see ``EngineStatement/bind(_:)``); fewer than
    /// ``placeholderCount`` (none bound yet, or reset): the others are `NULL`.
    @exclusivity(unchecked) var bound = UnsafeBufferPointer<Cell>(start: nil, count: 0)
    /// The statement's forms prepared on the server, one per set of parameter types it ran
    /// with (rarely more than one: a `REAL` or blob value in one run, `NULL` in another).
    @exclusivity(unchecked) private var prepared: [PreparedForm] = []
    /// The prepared form the statement ran with last (one of ``prepared``, which keeps it), whose
    /// server types its next run encodes with first: a statement run with the same parameter
    /// types as last time (a loop of saves) lays its parameters out once, and finds its form
    /// without a search, a retain or a release.
    @exclusivity(unchecked) private var lastForm: Unmanaged<PreparedForm>?
    /// Behind a transaction pooler (nothing prepared by name): per set of parameter types,
    /// whether to ask for binary results, and the result column types that told it.
    @exclusivity(unchecked) private var unnamed: [(types: [Oid], binary: Bool, columnTypes: [Int])] = []
    /// The prepared form whose result columns ``columnTypes``, ``columnKinds`` and ``kinds``
    /// hold (`nil`: another result's), so that running the same form again copies none of them.
    @exclusivity(unchecked) private var columnsForm: ObjectIdentifier?
    /// Whether the current result is in binary format.
    @exclusivity(unchecked) var binary = false

    /// The current result, its row count, and the row a step is on.
    @exclusivity(unchecked) var result: OpaquePointer?
    @exclusivity(unchecked) var rowCount: Int32 = 0
    @exclusivity(unchecked) var rowIndex: Int32 = -1
    @exclusivity(unchecked) private var hasRun = false
    /// The result's column types (OIDs), read once per result.
    @exclusivity(unchecked) var columnTypes: [Int] = []
    /// How ``row()`` reads each column of the current result (``ResultColumnKind``), and how many
    /// columns it has: set with ``columnTypes``.
    @exclusivity(unchecked) var columnKinds: [ResultColumnKind] = []
    @exclusivity(unchecked) var resultColumnCount: Int32 = 0
    /// For a cursor: its server-side name, and whether its last batch was full (more may follow).
    @exclusivity(unchecked) private var cursorName: String?
    @exclusivity(unchecked) private var cursorMayHaveMore = false
    /// For a cursor: the rows its next `FETCH` asks for, and whether in binary (see ``fetchCursorBatch(_:)``).
    @exclusivity(unchecked) private var cursorBatch = PostgreSQLStatement.firstCursorBatch
    @exclusivity(unchecked) private var cursorBinary = false

    /// Scratch storage for the parameters of one execution (kept to save allocations).
    @exclusivity(unchecked) private var parameters = ParameterLayout()
    /// The current row's cells (``row()``), ``columnKinds`` as ``row()`` reads them (a copy
    /// made per result: reading the array in the row loop retained and released it per row),
    /// and how many columns both have room for.
    @exclusivity(unchecked) var cells = UnsafeMutablePointer<Cell>.allocate(capacity: 1)
    @exclusivity(unchecked) var kinds = UnsafeMutablePointer<ResultColumnKind>.allocate(capacity: 1)
    @exclusivity(unchecked) var cellCapacity: Int32 = 1
    /// What the current row's decoded cells point to (freed at the next row).
    @exclusivity(unchecked) var kept: [UnsafeMutableRawBufferPointer] = []

    /// - Throws: `.misuse` for SQL with a second statement (the extended protocol runs one).
    init(sql: String, use: StatementUse, connection: PostgreSQLConnection) throws {
        self.connection = connection
        unretainedConnection = Unretained(connection)
        self.sql = sql
        self.use = use
        let rewritten = rewritingPlaceholders(sql) { "$\($0)" }
        guard !rewritten.hasMoreStatements else {
            throw ActiveRecordError(.misuse, "only one SQL statement may run at a time", sql: sql)
        }
        (text, placeholderCount) = (rewritten.sql, rewritten.count)
    }

    deinit {
        clearResult()
        for bytes in kept { bytes.deallocate() }
        cells.deallocate()
        kinds.deallocate()
        parameters.deallocate()
    }

    // MARK: Binding

    var parameterCount: Int32 { Int32(placeholderCount) }

    /// Keeps the caller's cells, read when the statement runs: laid out for libpq then, in one
    /// pass that also refuses a text holding a NUL character, which PostgreSQL's text cannot
    /// (``layOut(serverTypes:)``).
    func bind(_ parameters: UnsafeBufferPointer<Cell>) throws {
        bound = parameters
    }

    /// Lays the bound parameters out (``ParameterLayout/encode(_:count:serverTypes:)``) for the
    /// first `count`, encoded for `serverTypes`.
    /// - Throws: `.invalidValue` for a text holding a NUL character (nothing is sent).
    @inline(__always)
    private func layOut(count: Int, serverTypes: UnsafePointer<Oid>?) throws {
        if parameters.encodeOneInteger(bound, count: count, serverTypes: serverTypes) { return }
        let nul = parameters.encode(bound, count: count, serverTypes: serverTypes)
        if nul != 0 { throw nulInText(nul) }
    }

    @inline(never)
    private func nulInText(_ index: Int) -> ActiveRecordError {
        bound = UnsafeBufferPointer(start: nil, count: 0)
        return ActiveRecordError(
            .invalidValue, "PostgreSQL text cannot hold a NUL character (parameter \(index)); store the bytes as Data", sql: sql)
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
        try fetchCursorBatch(cursorName)
        return rowCount > 0
    }

    func step(binding parameters: UnsafeBufferPointer<Cell>) throws -> Bool {
        bound = parameters
        return try step()
    }

    func insert(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int64 {
        bound = parameters
        return try insert()
    }

    /// Runs a statement that returns no rows (a `DELETE` by id) and clears its result at once,
    /// its parameters kept: the rows it changed (its command tag's count).
    func execute(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int? {
        bound = parameters
        guard use != .cursor else {
            if try step() { while try step() {} }
            resetKeepingBindings()
            return nil
        }
        try execute()
        clearResult()
        hasRun = false
        return connection.lastChanged
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
        try unretainedConnection.with { try execute(on: $0) }
    }

    @inline(__always)
    private func execute(on connection: PostgreSQLConnection) throws {
        if !connection.deallocations.isEmpty { try connection.deallocateEvicted() }
        switch use {
        case .once:
            try run(text, parameters: true)
        case .cursor:
            try declareCursor(on: connection)
        case .cached:
            let count = placeholderCount
            // Laid out for the form run last (none behind a transaction pooler), and again for
            // another one when the parameter types changed since.
            try layOut(count: count, serverTypes: lastForm?._withUnsafeGuaranteedRef { UnsafePointer($0.parameterTypes) })
            if connection.transactionPooling { return try executeUnnamed() }
            // The form run last, reached without a retain and release (the connection's forms
            // keep it alive): every find, save and delete by id runs it.
            if let last = lastForm, last._withUnsafeGuaranteedRef({ $0.matches(parameters, count: count) }) {
                return try last._withUnsafeGuaranteedRef { try run(form: $0, count: count, on: connection) }
            }
            let form = try preparedForm()
            lastForm = Unmanaged.passUnretained(form)
            try layOut(count: count, serverTypes: UnsafePointer(form.parameterTypes))
            try run(form: form, count: count, on: connection)
        }
    }

    /// Runs prepared `form` with the parameters laid out for it, and keeps its result.
    @inline(__always)
    private func run(form: PreparedForm, count: Int, on connection: PostgreSQLConnection) throws {
        let layout = parameters
        let executed = try connection.exchange {
            PQsendQueryPrepared(
                connection.handle, form.cString, Int32(count), layout.values, layout.lengths, layout.formats, form.binary ? 1 : 0)
        }
        try adopt(executed, form: form, on: connection)
    }

    /// Declares the statement's server cursor (its first batch is fetched by the next step).
    /// Out of line: the SQL it builds would widen the cached statements' path.
    @inline(never)
    private func declareCursor(on connection: PostgreSQLConnection) throws {
        let name = connection.makeName("cursor")
        try run("DECLARE \(name.quotedIdentifier) NO SCROLL CURSOR FOR \(text)", parameters: true)
        cursorName = name
        cursorMayHaveMore = true
        (cursorBatch, cursorBinary) = (Self.firstCursorBatch, false)
        rowCount = 0
    }

    /// The prepared form for the parameter types just laid out (``ParameterLayout/encode(_:count:serverTypes:)``),
    /// prepared now if there is none yet.
    @inline(never)
    private func preparedForm() throws -> PreparedForm {
        let count = placeholderCount
        for form in prepared where form.matches(parameters, count: count) { return form }
        let form = try prepareOnServer()
        prepared.append(form)
        return form
    }

    /// Prepares the statement for the current parameter types, and describes it: its
    /// parameters' types (binary parameters where they allow), its result columns' (binary
    /// results when the library decodes every one of their types).
    private func prepareOnServer() throws -> PreparedForm {
        let connection = self.connection
        let name = connection.makeName("statement")
        let types = parameters.types, count = placeholderCount
        let prepareResult = try connection.exchange {
            PQsendPrepare(connection.handle, name, text, Int32(count), types)
        }
        try check(prepareResult)
        PQclear(prepareResult)
        // The description lists the parameters too, in one message; libpq before 17 takes a
        // message over 30,000 bytes for a lost connection. Many parameters: text parameters
        // and results.
        guard placeholderCount <= Self.maximumDescribedParameters else {
            return PreparedForm(name: name, types: types, count: count, signature: parameters.signature, description: nil)
        }
        let description = try connection.exchange { PQsendDescribePrepared(connection.handle, name) }
        try check(description)  // clears it when it failed
        defer { PQclear(description) }
        return PreparedForm(name: name, types: types, count: count, signature: parameters.signature, description: description)
    }

    /// Behind a transaction pooler: runs the statement unnamed (`PQsendQueryParams`: parsed,
    /// planned and run in one round trip, nothing left on the server connection), with text
    /// results the first time for its parameter types, and then binary ones when that first
    /// result's columns all have types the library decodes from binary (what describing a
    /// named statement tells elsewhere, without a round trip of its own).
    ///
    /// Unnamed, the statement is planned again each time, so a table changed meanwhile (by a
    /// migration elsewhere) may give other column types than those seen first: a query is then
    /// run again with text results; a write, which must not run twice, fails with `.engine`
    /// after it ran.
    private func executeUnnamed() throws {
        let types = Array(UnsafeBufferPointer(start: parameters.types, count: placeholderCount))
        let knownIndex = unnamed.firstIndex { $0.types == types }
        let known = knownIndex.map { unnamed[$0] }
        let binary = known?.binary ?? false
        try runUnnamed(binary: binary)
        if let known, let knownIndex {
            guard binary, columnTypes != known.columnTypes else { return }
            let decodable = columnTypes.allSatisfy(Self.binaryTypes.contains)
            unnamed[knownIndex] = (types, decodable, columnTypes)
            guard !decodable else { return }
            let tag = PQcmdStatus(result).map { String(cString: $0) } ?? ""
            clearResult()
            guard tag.hasPrefix("SELECT") else {
                throw ActiveRecordError(
                    .engine,
                    "the statement's result columns changed type since it first ran on this connection (the table was "
                        + "changed meanwhile): it ran (outside a transaction, it committed), but its returned values cannot "
                        + "be read; read them again", sql: sql)
            }
            try runUnnamed(binary: false)
        } else {
            unnamed.append((types, columnCount > 0 && columnTypes.allSatisfy(Self.binaryTypes.contains), columnTypes))
        }
    }

    /// Runs the statement unnamed with the encoded parameters, results in binary or text.
    private func runUnnamed(binary: Bool) throws {
        let connection = self.connection, layout = parameters
        let executed = try connection.exchange(for: text) {
            PQsendQueryParams(
                connection.handle, text, Int32(placeholderCount), layout.types, layout.values, layout.lengths, layout.formats,
                binary ? 1 : 0)
        }
        try adopt(executed, binary: binary)
    }

    /// Statements with more parameters are not described (see ``prepareOnServer()``).
    private static let maximumDescribedParameters = 5_000

    /// The types whose binary format ``value(_:)`` decodes.
    static let binaryTypes: Set<Int> = [
        AR_PG_BOOL, AR_PG_BYTEA, AR_PG_NAME, AR_PG_INT8, AR_PG_INT2, AR_PG_INT4, AR_PG_TEXT, AR_PG_OID, AR_PG_JSON,
        AR_PG_FLOAT4, AR_PG_FLOAT8, AR_PG_BPCHAR, AR_PG_VARCHAR, AR_PG_NUMERIC, AR_PG_UUID, AR_PG_JSONB,
    ]

    /// Runs `sql` (with the bound parameters, or none) in one round trip and keeps its result.
    @inline(never)
    private func run(_ sql: String, parameters: Bool) throws {
        clearResult()
        let count = parameters ? placeholderCount : 0
        try layOut(count: count, serverTypes: nil)
        let connection = self.connection, layout = self.parameters
        let executed = try connection.exchange(for: sql) {
            PQsendQueryParams(
                connection.handle, sql, Int32(count), parameters ? layout.types : nil, layout.values, layout.lengths, layout.formats, 0)
        }
        try adopt(executed)
    }

    /// Throws the error of a failed result (clearing it).
    @inline(__always)
    private func check(_ result: OpaquePointer?) throws {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw failure(of: result) }
    }

    /// ``check(_:)``'s error (the result cleared), out of line.
    @inline(never)
    private func failure(of result: OpaquePointer?) -> any Error {
        let error = postgreSQLError(result, connection, sql: sql)
        PQclear(result)
        return error
    }

    private func adopt(_ executed: OpaquePointer?, binary: Bool = false) throws {
        columnsForm = nil
        try check(executed)
        result = executed
        self.binary = binary
        rowCount = PQntuples(executed)
        rowIndex = -1
        Self.readColumnTypes(of: executed, into: &columnTypes)
        ResultColumnKind.kinds(of: columnTypes, binary: binary, into: &columnKinds)
        resultColumnCount = Int32(columnTypes.count)
        prepareRows()
        // The command tag (`INSERT 0 1`, `UPDATE 3`): the rows a write changed.
        if let tag = PQcmdStatus(executed), Self.isWrite(tag) {
            connection.lastChanged = Self.changedRows(executed)
        }
    }

    /// Keeps the result of a prepared form's execution: its column types and whether it writes
    /// are the form's, known since it was described and first ran.
    private func adopt(_ executed: OpaquePointer?, form: PreparedForm, on connection: PostgreSQLConnection) throws {
        try check(executed)
        result = executed
        binary = form.binary
        rowCount = PQntuples(executed)
        rowIndex = -1
        if columnsForm == ObjectIdentifier(form) {
            // The form's columns are those of the statement's last result already (a loop of
            // saves): nothing to copy.
            resultColumnCount = Int32(columnTypes.count)
            if form.writes { connection.lastChanged = form.changedRows(executed) }
            return
        }
        if let known = form.columnTypes {
            columnTypes = known
            columnKinds = form.columnKinds
        } else {
            Self.readColumnTypes(of: executed, into: &columnTypes)
            ResultColumnKind.kinds(of: columnTypes, binary: form.binary, into: &columnKinds)
            form.columnTypes = columnTypes
            form.columnKinds = columnKinds
            form.writes = Self.isWrite(PQcmdStatus(executed))
        }
        resultColumnCount = Int32(columnTypes.count)
        prepareRows()
        columnsForm = ObjectIdentifier(form)
        if form.writes { connection.lastChanged = form.changedRows(executed) }
    }

    /// The rows a write's result changed: the number ending its command tag (`INSERT 0 1`,
    /// `UPDATE 3`, `DELETE 0`, `MERGE 2`), what `PQcmdTuples` reads with more checks.
    @inline(__always)
    static func changedRows(_ result: OpaquePointer?) -> Int {
        guard let tag = PQcmdStatus(result) else { return 0 }
        return lastNumber(of: tag).value
    }

    /// The number ending a command tag, and where its last word begins.
    @inline(__always)
    static func lastNumber(of tag: UnsafePointer<CChar>) -> (value: Int, start: Int) {
        var value = 0, index = 0, start = 0
        while tag[index] != 0 {
            let byte = tag[index]
            if byte == 32 {
                value = 0
                start = index &+ 1
            } else if byte >= 48, byte <= 57 {
                value = value &* 10 &+ Int(byte &- 48)
            }
            index &+= 1
        }
        return (value, start)
    }

    /// The result's column types, into `types` (one access to the property, not one per column).
    private static func readColumnTypes(of result: OpaquePointer?, into types: inout [Int]) {
        types.removeAll(keepingCapacity: true)
        for column in 0..<PQnfields(result) { types.append(Int(PQftype(result, column))) }
    }

    /// Whether a command tag is an `INSERT`, `UPDATE`, `DELETE` or `MERGE`'s.
    private static func isWrite(_ tag: UnsafePointer<CChar>) -> Bool {
        strncmp(tag, "INSERT", 6) == 0 || strncmp(tag, "UPDATE", 6) == 0 || strncmp(tag, "DELETE", 6) == 0
            || strncmp(tag, "MERGE", 5) == 0
    }

    private func clearResult() {
        if let result { PQclear(result) }
        result = nil
        resultColumnCount = 0
        rowCount = 0
        rowIndex = -1
    }

    func reset() {
        resetKeepingBindings()
        bound = UnsafeBufferPointer(start: nil, count: 0)
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
        connection.deallocations += prepared.map(\.name)
        lastForm = nil
        prepared.removeAll()
        columnsForm = nil
    }

    func expandedSQL() -> String? {
        rewritingPlaceholders(sql) { number in
            switch number <= bound.count ? bound[number - 1] : .null {
            case .null: "NULL"
            case .integer(let int): String(int)
            case .real(let double): "\(double)"
            case .text(let utf8): quoteSQL(String(decoding: utf8, as: UTF8.self), with: "'")
            case .blob(let bytes): "'\\x" + bytes.hexDigits() + "'::bytea"
            }
        }.sql
    }

    // MARK: Cursor batches

    /// A cursor's first `FETCH` asks for this many rows (a consumer that stops early reads
    /// little), each next one for 4 times more, up to ``largestCursorBatch``: a round trip per
    /// batch, and memory for one batch only.
    static let firstCursorBatch: Int32 = 256
    static let largestCursorBatch: Int32 = 4_096

    /// Reads the cursor's next batch (`FETCH FORWARD n`): in text the first time, in binary
    /// next when the first batch's columns all have types the library decodes from binary (a
    /// `FETCH` returns its rows in the format its own execution asks for).
    private func fetchCursorBatch(_ name: String) throws {
        clearResult()
        let batch = cursorBatch, binary = cursorBinary, connection = self.connection
        let sql = "FETCH FORWARD \(batch) FROM \(name.quotedIdentifier)"
        let executed = try connection.exchange(for: sql) {
            PQsendQueryParams(connection.handle, sql, 0, nil, nil, nil, nil, binary ? 1 : 0)
        }
        try adopt(executed, binary: binary)
        cursorMayHaveMore = rowCount == batch
        rowIndex = 0
        cursorBinary = !columnTypes.isEmpty && columnTypes.allSatisfy(Self.binaryTypes.contains)
        cursorBatch = min(batch &* 4, Self.largestCursorBatch)
    }

    // MARK: Columns

    var columnCount: Int32 { result.map(PQnfields) ?? 0 }

    /// The current result's rows (a cursor's: its batch's, a lower bound).
    var rowCountHint: Int { Int(rowCount) }

    func columnName(_ index: Int32) -> String {
        guard let result, let name = PQfname(result, index) else { return "" }
        return String(cString: name)
    }

    var current: OpaquePointer { result.unsafelyUnwrapped }

    func isNull(_ index: Int32) -> Bool { PQgetisnull(current, rowIndex, index) == 1 }

    /// The column's type (OID), read once per result.
    func type(_ index: Int32) -> Int { columnTypes[Int(index)] }

    /// The column's value as libpq holds it: text (NUL-terminated) or binary.
    func bytes(_ index: Int32) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: PQgetvalue(current, rowIndex, index), count: Int(PQgetlength(current, rowIndex, index)))
    }

    func int64(_ index: Int32) -> Int64 {
        // A binary `bigint` (an id returned by an INSERT) read in place.
        if binary, columnTypes[Int(index)] == AR_PG_INT8, PQgetlength(current, rowIndex, index) == 8,
            let value = PQgetvalue(current, rowIndex, index)
        {
            return Int64(bigEndian: UnsafeRawPointer(value).loadUnaligned(as: Int64.self))
        }
        switch decode(index) {
        case .integer(let int): return int
        case .real(let double): return Int64(exactly: double.rounded(.towardZero)) ?? 0
        case .text(let text): return Int64(text) ?? 0
        default: return 0
        }
    }
}

/// One form of a statement prepared on the server: its name, the parameter types it was
/// prepared with and those the server gave them, whether it asks for binary results, and (once
/// it ran) its result's column types and whether it writes.
final class PreparedForm {
    let name: String
    /// ``name`` as a C string, for libpq.
    private let cName: UnsafeMutablePointer<CChar>
    /// The types the statement was prepared with (0: left to the server).
    private let types: UnsafeMutablePointer<Oid>
    /// The server's types of the parameters (`nil`: not described, all sent as text).
    let parameterTypes: UnsafeMutablePointer<Oid>?
    /// ``ParameterLayout/signature`` of ``types``.
    let signature: UInt64
    let binary: Bool
    var columnTypes: [Int]?
    var columnKinds: [ResultColumnKind] = []
    var writes = false
    /// Where the count begins in the command tag of the form's last write (`INSERT 0 1`: 9), so
    /// that the next one reads it without walking the tag; 0 before the first.
    private var countOffset = 0

    init(name: String, types: UnsafePointer<Oid>, count: Int, signature: UInt64, description: OpaquePointer?) {
        self.name = name
        self.signature = signature
        cName = strdup(name)
        self.types = .allocate(capacity: max(count, 1))
        self.types.initialize(from: types, count: count)
        if let description, PQnparams(description) == Int32(count) {
            let parameterTypes = UnsafeMutablePointer<Oid>.allocate(capacity: max(count, 1))
            for index in 0..<count { parameterTypes[index] = PQparamtype(description, Int32(index)) }
            self.parameterTypes = parameterTypes
            let columns = PQnfields(description)
            binary = columns > 0
                && (0..<columns).allSatisfy { PostgreSQLStatement.binaryTypes.contains(Int(PQftype(description, $0))) }
        } else {
            parameterTypes = nil
            binary = false
        }
    }

    deinit {
        free(cName)
        types.deallocate()
        parameterTypes?.deallocate()
    }

    /// The name for libpq.
    var cString: UnsafePointer<CChar> { UnsafePointer(cName) }

    /// Whether the form was prepared with the types `layout` holds for its `count` parameters.
    @inline(__always)
    func matches(_ layout: ParameterLayout, count: Int) -> Bool {
        signature == layout.signature && (count <= ParameterLayout.exactSignatureCount || hasTypes(layout.types, count: count))
    }

    /// The rows a write of this form changed: the number ending its command tag, read from
    /// where it began in the last one when the tag has a space just before it and nothing but
    /// digits after (the number ends the tag, so it is the count), else found by walking the
    /// whole tag and remembered.
    @inline(__always)
    func changedRows(_ result: OpaquePointer?) -> Int {
        guard let tag = PQcmdStatus(result) else { return 0 }
        let start = countOffset
        if start > 0, tag[start &- 1] == 32 {
            var character = tag + start
            var count = 0
            while true {
                let byte = character.pointee
                if byte == 0 { return count }
                guard byte >= 48, byte <= 57 else { break }
                count = count &* 10 &+ Int(byte &- 48)
                character += 1
            }
        }
        return changedRowsFindingCount(tag)
    }

    /// ``changedRows(_:)`` without a known offset: the whole tag walked, and the offset of its
    /// last word kept.
    @inline(never)
    private func changedRowsFindingCount(_ tag: UnsafePointer<CChar>) -> Int {
        let (count, start) = PostgreSQLStatement.lastNumber(of: tag)
        countOffset = start
        return count
    }

    /// Whether the form was prepared with these `count` types.
    @inline(__always)
    func hasTypes(_ other: UnsafePointer<Oid>, count: Int) -> Bool {
        memcmp(types, other, count * MemoryLayout<Oid>.stride) == 0
    }
}
