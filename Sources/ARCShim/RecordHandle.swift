import ActiveRecord
@_spi(Engines) import ARCore

/// `ar_record`: a record, with scratch storage for what getters return.
///
/// A record from ar_query_next on a cursor is a *row record*: its getters read the
/// cursor's current row, with nothing decoded or allocated. It gets a `DynamicRecord` of its
/// own when it is changed, saved, reloaded or destroyed, or when C still holds it as the
/// cursor moves on (``detach()``).
final class RecordHandle: Handle {
    let model: ModelHandle
    let frozen: ModelHandle.Frozen
    /// Whether the model has a decimal column (which an integer cell may have to read as text).
    private let hasDecimalColumn: Bool
    // Unchecked exclusivity on the record's state: a record handle is used by one thread at a
    // time (the C API's rule), and every getter and setter reads it (a dynamic check would
    // be a sizeable share of those short calls; see Benchmarks/README.md, Hot-path notes).
    @exclusivity(unchecked) private var stored: DynamicRecord? {
        didSet { unretainedStored = stored.map(Unretained.init) }
    }
    /// ``stored``, read by the setters without a retain and release (``stored`` keeps it alive).
    @exclusivity(unchecked) private var unretainedStored: Unretained<DynamicRecord>?
    /// The cursor statement whose current row this record reads, while it has no `stored`.
    @exclusivity(unchecked) private var row: Statement? {
        didSet {
            unretainedRow = row.map(Unretained.init)
            rowCells = row?.row.baseAddress
        }
    }
    /// ``row``, read by the getters without a retain and release (``row`` keeps it alive).
    @exclusivity(unchecked) private var unretainedRow: Unretained<Statement>?
    /// ``row``'s current row, which the getters read in place.
    @exclusivity(unchecked) private var rowCells: UnsafePointer<Cell>?
    /// The text or bytes a getter returned last: a copy, because a row's bytes change at the
    /// cursor's next step and a small `Data` is stored inline (its address would not outlive
    /// the call). Allocated on first use: most records never return any.
    @exclusivity(unchecked) private var kept = KeptBuffer()
    /// Keeps a copy of `bytes` (NUL-terminated) until the next getter, and returns it.
    func keep(_ bytes: UnsafeRawBufferPointer) -> UnsafePointer<CChar> { kept.set(bytes) }
    /// Where the next column by name is looked for first (see `Frozen.position(of:guess:)`):
    /// at first the first declared column, which a new record's setters start with.
    @exclusivity(unchecked) private var positionGuess = 3
    /// The first column looked up on the cursor's current row (-1: none yet), where the
    /// look-ups on the next row start.
    @exclusivity(unchecked) private var firstPositionOnRow = -1

    /// The position of `column` in the schema's `allColumnNames`, or `nil`; cheapest when
    /// columns are looked up in declaration order.
    @inline(__always)
    func position(of column: UnsafePointer<CChar>) -> Int? {
        let found = frozen.position(of: column, guess: &positionGuess)
        if firstPositionOnRow < 0, let found { firstPositionOnRow = found }
        return found
    }
    /// The validation failures of the last save, as C reads them.
    @exclusivity(unchecked) var errors: [(property: KeptBytes, key: KeptBytes, message: KeptBytes)] = []

    /// Keeps `failures` as the record's errors and returns the save's error.
    func failed(_ failures: [ValidationFailure]) -> ActiveRecordError {
        errors = failures.map { failure in
            let property = KeptBytes(), key = KeptBytes(), message = KeptBytes()
            _ = property.set(failure.property)
            _ = key.set(failure.key)
            _ = message.set(failure.message)
            return (property, key, message)
        }
        return ActiveRecordError.validationFailed(model.name, failures)
    }

    init(model: ModelHandle, frozen: ModelHandle.Frozen, record: DynamicRecord) {
        self.model = model
        self.frozen = frozen
        hasDecimalColumn = frozen.hasDecimalColumn
        stored = record
        unretainedStored = Unretained(record)
        super.init(kind: .record)
    }

    init(model: ModelHandle, frozen: ModelHandle.Frozen, row: Statement) {
        self.model = model
        self.frozen = frozen
        hasDecimalColumn = frozen.hasDecimalColumn
        self.row = row
        unretainedRow = Unretained(row)
        rowCells = row.row.baseAddress
        super.init(kind: .record)
    }

    /// The handle is the record's only holder outside the library: once it goes, nothing can
    /// read the record's values (a transaction's undo log, which may still hold the record,
    /// only resets its header), so they are freed now rather than at commit.
    deinit { stored?.discardValues() }

    /// Why a row record could not be decoded when the cursor left its row (TEXT that is not
    /// valid UTF-8): every later call on the record fails with it.
    @exclusivity(unchecked) private var undecodable: (any Error)?

    /// The record; a row record decodes its row into one first.
    /// - Throws: `.typeMismatch` for a row holding TEXT that is not valid UTF-8.
    var record: DynamicRecord {
        get throws {
            if let stored { return stored }
            if let undecodable { throw undecodable }
            guard let row else { preconditionFailure("a record handle with neither a record nor a row") }
            let decoded = try DynamicRecord(model: frozen.model, decodingRowOf: row)
            stored = decoded
            self.row = nil
            return decoded
        }
    }

    /// Calls `body` with ``record``; a record with values of its own is passed without a
    /// retain and release.
    @inline(__always)
    func withRecord<R>(_ body: (DynamicRecord) throws -> R) throws -> R {
        if let unretainedStored { return try unretainedStored.with(body) }
        return try body(record)
    }

    /// Forgets the validation failures of an earlier save.
    func clearErrors() {
        if !errors.isEmpty { errors = [] }
    }

    /// After `record`'s save failed with `error`: the failures its validations found, when
    /// they failed (the record holds them too); else none, on the record too.
    func keepErrors(of record: DynamicRecord, failed error: any Error) {
        if (error as? ActiveRecordError)?.code == .validationFailed, !record.errors.isEmpty {
            _ = failed(record.errors)
        } else {
            if !record.errors.isEmpty { record.errors = [] }
            clearErrors()
        }
    }

    /// Takes `record`'s validation failures (those of its last validation, which C's saves
    /// keep the same as the handle's) as the record's errors.
    func keepErrors(of record: DynamicRecord) {
        if record.errors.isEmpty { clearErrors() } else { _ = failed(record.errors) }
    }

    /// Gives a row record a record of its own, before the cursor leaves its row.
    func detach() {
        guard stored == nil, row != nil else { return }
        do {
            _ = try record
        } catch {
            undecodable = error
            row = nil
        }
    }

    /// Reuses this handle (which C released) for another row or record.
    func reset(row: Statement?, record: DynamicRecord?) {
        self.row = row
        if stored != nil || record != nil { stored = record }
        if undecodable != nil { undecodable = nil }
        if !errors.isEmpty { errors = [] }
    }

    /// Whether the record reads `statement`'s row in place, with no values of its own.
    func readsRow(of statement: Statement) -> Bool { stored == nil && row === statement }

    /// After the statement the record reads moved to its next row: column look-ups start again.
    func movedToNextRow() {
        if firstPositionOnRow >= 0 { positionGuess = firstPositionOnRow }
        firstPositionOnRow = -1
    }

    /// The row id (`nil`: unsaved).
    var id: Int64? {
        if let unretainedStored { return unretainedStored.with { $0.id } }
        if let unretainedRow { return unretainedRow.with { $0.int64(0) } }
        return try? record.id
    }

    /// Calls `body` with the record's own values (not a row's), the declared index of
    /// `column` and its C type, for a column C may set; `false` when there is no such
    /// record or column, or `body` returns `false` (the setter then takes its general path,
    /// which explains the error).
    @inline(__always)
    func withSettableColumn(_ column: UnsafePointer<CChar>, _ body: (DynamicRecord, Int, ar_type?) -> Bool) -> Bool {
        guard let unretainedStored, let position = position(of: column), position >= 3 else { return false }
        let type = frozen.typeByPosition[position]
        return unretainedStored.with { body($0, position &- 3, type) }
    }

    /// The row and result column a getter reads `column` from directly: for a record reading
    /// a cursor's row, a column of the model that is not decimal.
    /// `nil` otherwise (and for an unknown column): the getter then takes ``withCell(at:_:)``.
    @inline(__always)
    func rowLocation(of column: UnsafePointer<CChar>) -> (row: UnsafePointer<Cell>, index: Int32)? {
        guard let rowCells, let position = position(of: column),
            !hasDecimalColumn || !isDecimal(position)
        else { return nil }
        return (rowCells, Int32(truncatingIfNeeded: position))
    }

    /// Calls `body` with the value at `position` in the schema's `allColumnNames`; text and
    /// bytes point into the row or the record and are valid only during the call.
    /// A decimal column reads as text on every engine: PostgreSQL's NUMERIC hands a whole
    /// number back as an integer, which a decimal column shows as its digits.
    func withCell<R>(at position: Int, _ body: (Cell) throws -> R) throws -> R {
        let cell: Cell
        if let rowCells {
            cell = rowCells[position]
        } else if let unretainedRow {
            cell = unretainedRow.with { $0.cell(Int32(position)) }
        } else {
            return try withRecordCell(at: position, body)
        }
        if case .integer(let int) = cell, hasDecimalColumn, isDecimal(position) { return try decimal(int, body) }
        return try body(cell)
    }

    private func withRecordCell<R>(at position: Int, _ body: (Cell) throws -> R) throws -> R {
        switch try record.value(at: position) {
        case .null: return try body(.null)
        case .integer(let int) where isDecimal(position): return try decimal(int, body)
        case .integer(let int): return try body(.integer(int))
        case .real(let real): return try body(.real(real))
        case .text(var text): return try text.withUTF8 { try body(.text(UnsafeRawBufferPointer($0))) }
        case .blob(let data): return try data.withUnsafeBytes { try body(.blob($0)) }
        }
    }

    // Out of line, so that reading a row retains neither `frozen` nor its array.
    @inline(never)
    private func isDecimal(_ position: Int) -> Bool { frozen.typeByPosition[position] == .decimal }

    private func decimal<R>(_ int: Int64, _ body: (Cell) throws -> R) rethrows -> R {
        var text = String(int)
        return try text.withUTF8 { try body(.text(UnsafeRawBufferPointer($0))) }
    }
}
