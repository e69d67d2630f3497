#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A prepared statement, owned by one ``Connection``, whatever the engine.
///
/// The statement is finalized in `deinit`, so nothing leaks on an error path. Parameters
/// are 1-based; result columns are 0-based.
///
/// It calls its engine's statement once per row, not once per value: parameters are
/// gathered here (``bind(_:at:)``) and handed over together before the statement runs, and
/// each row the engine returns is read here from its cells (``row``).
@_spi(Engines) public final class Statement {
    private let engine: any EngineStatement
    /// The SQL text, with `?` placeholders.
    package let sql: String
    unowned let connection: Connection
    // Unchecked exclusivity on the per-use state below: a statement belongs to its
    // connection, which one thread uses at a time, and none of these accesses overlaps
    // another; they are read on every bind and step (a dynamic check on each access; see
    // Benchmarks/README.md, Hot-path notes).
    /// The parameters bound since the statement last ran, handed to the engine when it runs
    /// (``parameterCount`` of them; all `NULL` at first).
    private let parameters: UnsafeMutablePointer<Cell>
    /// Where the texts and bytes of bound values are copied, until the statement's next use.
    @exclusivity(unchecked) private var parameterBytes = ParameterBytes()
    /// How many parameters the statement has.
    package let parameterCount: Int32
    /// Whether a parameter was bound since the engine last received them.
    @exclusivity(unchecked) private var hasNewBindings = false
    /// The current row's cells: valid after a step that returned `true`, until the next
    /// step, reset or finalize.
    @exclusivity(unchecked) package private(set) var row = UnsafeBufferPointer<Cell>(start: nil, count: 0)
    /// Set while a caller steps the statement, so that re-entrant use prepares a copy.
    @exclusivity(unchecked) var isInUse = false
    /// The key it is cached under, for statements the library generates.
    @exclusivity(unchecked) var cacheKey: StatementKey? {
        didSet { cacheCode = cacheKey?.code ?? 0 }
    }
    /// ``cacheKey``'s ``StatementKey/code``.
    @exclusivity(unchecked) private(set) var cacheCode: UInt64 = 0
    /// Whether every use binds all its parameters again (the library's own SQL, cached by
    /// key), so that resetting it need not clear the bindings first (see the benchmark docs).
    @exclusivity(unchecked) var rebindsEveryParameter = false
    /// The engine statement as a ``DirectRowReading`` when it is one, else one that reads
    /// nothing (read path, issue 35). Not optional: an optional's unwrapped copy was retained
    /// and released around every call, where a `let` is borrowed as ``engine`` is.
    private let directReader: any DirectRowReading
    /// Whether ``directReader`` is the engine statement.
    package let readsRowsDirectly: Bool
    /// Its operation and table, read off the SQL the first time it runs instrumented
    /// (``Instruments``); never while nothing is bootstrapped.
    @exclusivity(unchecked) var instrumentationDescription: StatementDescription?

    init(engine: any EngineStatement, sql: String, connection: Connection) {
        self.engine = engine
        self.sql = sql
        self.connection = connection
        parameterCount = engine.parameterCount
        if let reader = engine as? any DirectRowReading {
            (directReader, readsRowsDirectly) = (reader, true)
        } else {
            (directReader, readsRowsDirectly) = (NoDirectRowReading.shared, false)
        }
        parameters = .allocate(capacity: Int(parameterCount))
        parameters.initialize(repeating: .null, count: Int(parameterCount))
    }

    deinit {
        engine.finalize()
        parameters.deallocate()
        parameterBytes.release()
    }

    // MARK: Binding (1-based)

    /// Binds `value` to parameter `index` (its text or bytes copied, for the engine to read
    /// in place).
    /// - Throws: `.misuse` for an index beyond the statement's parameters.
    @inline(__always)
    package func bind(_ value: DatabaseValue, at index: Int32) throws {
        switch value {
        case .null: try set(.null, at: index)
        case .integer(let int): try set(.integer(int), at: index)
        case .real(let real): try set(.real(real), at: index)
        case .text, .blob: try bindCopying(value, at: index)
        }
    }

    /// ``bind(_:at:)`` of a text or blob: out of line, so that the copy's stack space and
    /// checks stay out of the other values' binds (the function other modules call).
    @inline(never)
    private func bindCopying(_ value: DatabaseValue, at index: Int32) throws {
        switch value {
        case .text(let text): try set(.text(parameterBytes.copy(text)), at: index)
        case .blob(let data): try set(.blob(parameterBytes.copy(data)), at: index)
        case .null, .integer, .real: try bind(value, at: index)
        }
    }

    /// Binds the text of the string at `text` (a record's field), its UTF-8 copied as
    /// ``bind(_:at:)`` copies a ``DatabaseValue/text(_:)``'s, without making that value first:
    /// a record's insert or update binds its texts through here (issue 35).
    @inline(__always)
    package func bindText(copying text: UnsafePointer<String>, at index: Int32) throws {
        guard index >= 1, index <= parameterCount else { throw parameterOutOfRange(index) }
        parameters[Int(index &- 1)] = .text(parameterBytes.copy(text.pointee))
        hasNewBindings = true
    }

    /// Binds the bytes of the `Data` at `bytes` as ``bindText(copying:at:)`` binds a text.
    /// Out of line: `Data`'s access to its bytes is inlined here, where inlined into a caller's
    /// loop it was not (and cost a call to its storage's).
    @inline(never)
    package func bindBlob(copying bytes: UnsafePointer<Data>, at index: Int32) throws {
        guard index >= 1, index <= parameterCount else { throw parameterOutOfRange(index) }
        parameters[Int(index &- 1)] = .blob(parameterBytes.copy(bytes.pointee))
        hasNewBindings = true
    }

    /// Binds text the caller keeps valid until this parameter is bound again or the
    /// statement is finalized (an engine may read it in place).
    @inline(__always)
    package func bindText(borrowing utf8: UnsafeRawBufferPointer, at index: Int32) throws {
        try set(.text(utf8), at: index)
    }

    /// Binds bytes as ``bindText(borrowing:at:)`` binds text.
    @inline(__always)
    package func bindBlob(borrowing bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        try set(.blob(bytes), at: index)
    }

    package func bind(_ values: [DatabaseValue], from start: Int32 = 1) throws {
        for index in values.indices { try bind(values[index], at: start + Int32(index)) }
    }

    @inline(__always)
    private func set(_ parameter: Cell, at index: Int32) throws {
        guard index >= 1, index <= parameterCount else { throw parameterOutOfRange(index) }
        parameters[Int(index &- 1)] = parameter
        hasNewBindings = true
    }

    @inline(never)
    private func parameterOutOfRange(_ index: Int32) -> ActiveRecordError {
        ActiveRecordError(
            .misuse, "parameter \(index) is out of range: the statement has \(parameterCount) parameter(s)", sql: sql)
    }

    /// The parameters, as the engine reads them.
    private var boundParameters: UnsafeBufferPointer<Cell> {
        @inline(__always) get { UnsafeBufferPointer(start: parameters, count: Int(parameterCount)) }
    }

    /// Hands the parameters bound since the last run to the engine.
    @inline(__always)
    private func bindPending() throws {
        if hasNewBindings {
            hasNewBindings = false
            try engine.bind(boundParameters)
        }
    }

    // MARK: Stepping

    /// Runs one step: `true` when a row is available (``row``), `false` when done. Parameters
    /// bound since the last run go to the engine with the step, in one call.
    /// - Throws: the engine's error; the statement is dropped from its connection's cache.
    @inline(__always)
    package func step() throws -> Bool {
        guard try advance() else { return false }
        row = engine.row()
        return true
    }

    /// The engine's step, with the parameters bound since the last run.
    @inline(__always)
    private func advance() throws -> Bool {
        do {
            if hasNewBindings {
                hasNewBindings = false
                return try engine.step(binding: boundParameters)
            }
            return try engine.step()
        } catch {
            throw failed(error)
        }
    }

    // MARK: Reading rows straight into records (read path, issue 35: the "read" helper's)

    /// ``step()`` without making the row's cells, for a caller that reads the row through
    /// ``readColumns(_:from:at:into:)`` and makes them (``loadCells()``) only for the columns
    /// the engine leaves to them. Until then ``row`` is empty.
    @inline(__always)
    package func stepLeavingCells() throws -> Bool {
        row = UnsafeBufferPointer(start: nil, count: 0)
        return try advance()
    }

    /// ``stepLeavingCells()`` after a row read so: within the result the engine holds, the next
    /// row without the engine's step (``DirectRowReading/advanceInResult()``).
    @inline(__always)
    package func stepLeavingCellsAfterRow() throws -> Bool {
        if !hasNewBindings, directReader.advanceInResult() {
            row = UnsafeBufferPointer(start: nil, count: 0)
            return true
        }
        return try stepLeavingCells()
    }

    /// Reads the current row's header columns straight into `header` (see
    /// ``DirectRowReading/readHeader(into:)``); only when ``readsRowsDirectly``.
    @inline(__always)
    package func readHeader(into header: UnsafeMutablePointer<ModelMapping.HeaderValues>) -> Bool {
        directReader.readHeader(into: header)
    }

    /// ``stepLeavingCellsAfterRow()`` to a row the caller knows the engine's result holds
    /// (counted by ``rowsLeftInResult``).
    @inline(__always)
    package func moveToNextRowOfResult() throws {
        guard try stepLeavingCellsAfterRow() else {
            preconditionFailure("a row counted in the engine's result is not there")
        }
    }

    /// Reads the current row's header and columns straight into `header` and fields (see
    /// ``DirectRowReading/readRow(header:fields:into:)``); only when ``readsRowsDirectly``.
    @inline(__always)
    package func readRow(
        header: UnsafeMutablePointer<ModelMapping.HeaderValues>, fields: UnsafeBufferPointer<ModelMapping.Field>,
        into base: UnsafeMutableRawPointer
    ) -> Int? {
        directReader.readRow(header: header, fields: fields, into: base)
    }

    /// ``readRow(header:fields:into:)`` of a row selected by its `id` (see
    /// ``DirectRowReading/readRow(foundByID:header:fields:into:)``).
    @inline(__always)
    package func readRow(
        foundByID id: Int64, header: UnsafeMutablePointer<ModelMapping.HeaderValues>,
        fields: UnsafeBufferPointer<ModelMapping.Field>, into base: UnsafeMutableRawPointer
    ) -> Int? {
        directReader.readRow(foundByID: id, header: header, fields: fields, into: base)
    }

    /// The rows left in the result the engine holds (see ``DirectRowReading/rowsLeftInResult``).
    @inline(__always)
    package var rowsLeftInResult: Int { directReader.rowsLeftInResult }

    /// Reads the rows left in the engine's result column after column (see
    /// ``DirectRowReading/readRows(into:headers:fields:)``); only when ``readsRowsDirectly``.
    @inline(__always)
    package func readRows(
        into records: UnsafeBufferPointer<Model>, headers: UnsafeMutablePointer<ModelMapping.HeaderValues>,
        fields: UnsafeBufferPointer<ModelMapping.Field>
    ) -> Bool {
        directReader.readRows(into: records, headers: headers, fields: fields)
    }

    /// Reads the current row's columns straight into fields (see
    /// ``DirectRowReading/readColumns(_:from:at:into:)``); only when ``readsRowsDirectly``.
    @inline(__always)
    package func readColumns(
        _ fields: UnsafeBufferPointer<ModelMapping.Field>, from start: Int, at first: Int32, into base: UnsafeMutableRawPointer
    ) -> Int {
        directReader.readColumns(fields, from: start, at: first, into: base)
    }

    /// Makes the current row's cells if ``stepLeavingCells()`` left them unmade.
    @inline(__always)
    package func loadCells() {
        if row.baseAddress == nil { row = engine.row() }
    }

    /// Runs an `INSERT` made by ``SQLDialect/insertSQL(into:columns:)`` and returns the new row's id.
    @inline(__always)
    package func insert() throws -> Int64 {
        do {
            if hasNewBindings {
                hasNewBindings = false
                return try engine.insert(binding: boundParameters)
            }
            return try engine.insert()
        } catch {
            throw failed(error)
        }
    }

    /// Runs a statement whose first parameter is an integer and which returns no rows (a
    /// `DELETE` by id) with `value` bound, and leaves it ready to run again, its parameters as
    /// bound (``endUse()`` has nothing left to do but for a statement whose every use does not
    /// bind them all again): the rows it changed, or `nil` when the connection says.
    /// - Throws: `.misuse` for a statement without parameters; the engine's error, the
    ///   statement dropped from its connection's cache.
    @inline(__always)
    package func execute(binding value: Int64) throws -> Int? {
        guard parameterCount >= 1 else { throw parameterOutOfRange(1) }
        parameters[0] = .integer(value)
        hasNewBindings = false
        do {
            return try engine.execute(binding: boundParameters)
        } catch {
            throw failed(error)
        }
    }

    /// Runs an upsert made by ``SQLDialect/upsertSQL(into:columns:conflictColumns:updateColumns:returning:)``
    /// to its row (readable next) and says whether it inserted the row rather than updated one.
    package func upsert() throws -> Bool {
        do {
            try bindPending()
            let inserted = try engine.upsert()
            row = engine.row()
            return inserted
        } catch {
            throw failed(error)
        }
    }

    /// A step's error, with the bound values when the database is asked for them; the
    /// statement leaves the cache (a failed statement is prepared afresh next time).
    @inline(never)
    private func failed(_ error: any Error) -> any Error {
        connection.evict(self)
        guard var failure = error as? ActiveRecordError else { return error }
        if connection.includesBoundValuesInErrors { failure.expandedSQL = expandedSQL() }
        return failure
    }

    /// The SQL with the bound values written in (`nil` when the engine cannot say).
    package func expandedSQL() -> String? {
        try? bindPending()
        return engine.expandedSQL()
    }

    /// After a run through ``Connection``: reset for the next use (keeping the bindings of a
    /// statement whose every use binds all its parameters again), no longer in use.
    @inline(__always)
    func endUse() {
        if rebindsEveryParameter { resetForRebinding() } else { reset() }
        isInUse = false
    }

    /// Resets the statement and binds every parameter to `NULL`, ready for reuse.
    package func reset() {
        engine.reset()
        row = UnsafeBufferPointer(start: nil, count: 0)
        parameters.update(repeating: .null, count: Int(parameterCount))
        parameterBytes.reset()
        hasNewBindings = false
    }

    /// Resets the statement for a caller that binds every parameter again (a batch's next
    /// row): the engine keeps the old bindings rather than clearing them first.
    @inline(__always)
    package func resetForRebinding() {
        engine.resetKeepingBindings()
        row = UnsafeBufferPointer(start: nil, count: 0)
        parameterBytes.reset()
    }

    // MARK: Columns (0-based), read from the current row's cells

    package var columnCount: Int32 { engine.columnCount }

    /// After a step, how many rows the statement returns at least (0: the engine cannot say;
    /// see ``EngineStatement/rowCountHint``). (Read path: the "read" helper's, issue 35.)
    package var rowCountHint: Int { engine.rowCountHint }

    package func columnName(_ index: Int32) -> String { engine.columnName(index) }

    @inline(__always)
    package func isNull(_ index: Int32) -> Bool {
        if case .null = row[Int(index)] { return true }
        return false
    }

    /// The column as an integer, converted as SQLite converts (a real truncated toward zero,
    /// text by its leading number, `NULL` as 0).
    @inline(__always)
    package func int64(_ index: Int32) -> Int64 {
        if case .integer(let int) = row[Int(index)] { return int }
        return row[Int(index)].convertedInt64
    }

    /// The column as a double, converted as SQLite converts (`NULL` as 0).
    @inline(__always)
    package func double(_ index: Int32) -> Double {
        if case .real(let real) = row[Int(index)] { return real }
        return row[Int(index)].convertedDouble
    }

    /// The column as a `Double`, or `nil` when it is NULL.
    @inline(__always)
    package func optionalDouble(_ index: Int32) -> Double? {
        switch row[Int(index)] {
        case .null: nil
        case .real(let real): real
        case let other: other.convertedDouble
        }
    }

    /// The column's text; `nil` when its bytes are not valid UTF-8 (written by another
    /// program): read as a String they would be changed, so they are a mismatch instead.
    @inline(__always)
    package func string(_ index: Int32) -> String? {
        switch row[Int(index)] {
        case .text(let utf8): decodedText(utf8)
        case .null: ""
        case .integer(let int): String(int)
        case .real(let real): "\(real)"
        case .blob(let bytes): String(validating: bytes.bindMemory(to: UInt8.self), as: UTF8.self)
        }
    }

    package func data(_ index: Int32) -> Data {
        switch row[Int(index)] {
        case .text(let bytes), .blob(let bytes): Data(cellBytes: bytes)
        case .null: Data()
        case .integer(let int): Data(String(int).utf8)
        case .real(let real): Data("\(real)".utf8)
        }
    }

    /// The column as a ``DatabaseValue``.
    /// - Throws: `.typeMismatch` for text that is not valid UTF-8.
    @inline(__always)
    package func value(_ index: Int32) throws -> DatabaseValue {
        try row[Int(index)].databaseValue(column: index)
    }

    /// The column's value with text and bytes borrowed from the row, not copied: valid until
    /// the next step or reset.
    @inline(__always)
    package func cell(_ index: Int32) -> Cell { row[Int(index)] }
}

@available(*, unavailable, message: "A statement belongs to its connection's thread")
extension Statement: Sendable {}
