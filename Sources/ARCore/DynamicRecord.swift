#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A record of a ``DynamicModel``: column values by name.
public final class DynamicRecord: RecordStorage {
    /// The model this record belongs to.
    public let model: DynamicModel
    // Unchecked exclusivity: a record is confined to one thread, and no access to these
    // overlaps another (the dynamic checks cost more than the accesses on the C API's paths).
    @exclusivity(unchecked) package var header = RecordHeader()
    /// The declared columns' values, typed, their text and bytes owned by the record.
    private let slots: UnsafeMutablePointer<OwnedValue>
    /// Where the values' text and bytes are copied: first into the allocation of ``slots``.
    @exclusivity(unchecked) private var arena: ByteArena
    /// For a saved record, the original (last loaded or saved) value of each column changed
    /// since, `.absent` for the others; allocated on the first change. A value set back to
    /// its original makes the column unchanged again.
    @exclusivity(unchecked) private var originals: UnsafeMutablePointer<OwnedValue>?
    /// Set by ``discardValues()``: the values are gone, only the header is left.
    @exclusivity(unchecked) private var isDiscarded = false
    private var columnCount: Int { model.columnTypes.count }

    init(model: DynamicModel) {
        self.model = model
        let count = model.columnTypes.count
        (slots, arena) = Self.allocate(count, arenaSize: model.arenaSize)
        if model.defaultsHaveBytes {
            for index in 0..<count { (slots + index).initialize(to: model.defaultSlots[index].copy(into: &arena)) }
        } else {
            slots.initialize(from: model.defaultSlots, count: count)
        }
    }

    /// A record about to be decoded from a row: no defaults to build and overwrite.
    init(decodingFor model: DynamicModel) {
        self.model = model
        (slots, arena) = Self.allocate(model.columnTypes.count, arenaSize: model.arenaSize)
        slots.initialize(repeating: .null, count: model.columnTypes.count)
    }

    /// `count` slots (not initialized) and an arena after them, in one allocation.
    private static func allocate(_ count: Int, arenaSize: Int) -> (UnsafeMutablePointer<OwnedValue>, ByteArena) {
        let slotBytes = count * MemoryLayout<OwnedValue>.stride
        let storage = UnsafeMutableRawPointer.allocate(
            byteCount: slotBytes + arenaSize, alignment: MemoryLayout<OwnedValue>.alignment)
        return (storage.bindMemory(to: OwnedValue.self, capacity: count), ByteArena(storage + slotBytes, count: arenaSize))
    }

    /// The record of the row `statement` is on, selected with ``TableSchema/selectList``.
    /// - Throws: `.typeMismatch` for TEXT that is not valid UTF-8.
    package convenience init(model: DynamicModel, decodingRowOf statement: Statement) throws {
        self.init(decodingFor: model)
        header = RecordHeader(decoding: statement)
        for index in 0..<columnCount { try decodeColumn(index, from: statement, at: Int32(index + 3)) }
    }

    deinit { discardValues() }

    /// Frees the values now, keeping the header: for a record that nothing can read any more
    /// but a transaction's undo log (which only resets its header on rollback). The C API
    /// calls it when the last handle to the record goes, so that a long transaction does not
    /// keep every inserted record's values until it commits.
    package func discardValues() {
        guard !isDiscarded else { return }
        isDiscarded = true
        for index in 0..<columnCount { slots[index].release() }
        UnsafeMutableRawPointer(slots).deallocate()
        if let originals {
            for index in 0..<columnCount { originals[index].release() }
            originals.deallocate()
            self.originals = nil
        }
    }

    /// The row id, assigned on first save; `nil` for a new record.
    public var id: Int64? { header.id }
    /// When the record was first saved.
    public var createdAt: Date? { header.createdAt }
    /// When the record was last saved with changes.
    public var updatedAt: Date? { header.updatedAt }
    /// Whether the record was never saved.
    public var isNewRecord: Bool { header.id == nil }
    /// Whether the record was destroyed.
    public var isDestroyed: Bool { header.isDestroyed }
    /// The failures of the record's last validation (its model's ``DynamicModel/validationHook``),
    /// as ``Model/errors`` are a model class's. Unchecked exclusivity, as the values': read on
    /// every save of the C API.
    @exclusivity(unchecked) package var errors: [ValidationFailure] = []
    /// Whether any column differs from its value as last loaded or saved (for a new record:
    /// from its default).
    public var hasChanges: Bool {
        if isNewRecord, originals == nil {
            return (0..<columnCount).contains { !OwnedValue.same(slots[$0], model.defaultSlots[$0]) }
        }
        return (0..<columnCount).contains { isColumnChanged($0) }
    }

    private func index(_ column: String) throws -> Int {
        guard let index = model.schema.columnIndex(named: column) else { throw model.schema.unknownColumn(column) }
        return index
    }

    /// The current value of `column`.
    /// - Throws: `.unknownColumn`.
    public func value(_ column: String) throws -> DatabaseValue {
        switch column {
        case "id": return value(at: 0)
        case "createdAt": return value(at: 1)
        case "updatedAt": return value(at: 2)
        default: return slots[try index(column)].databaseValue
        }
    }

    /// The value at `position` in ``TableSchema/allColumnNames`` (0–2: id, createdAt, updatedAt).
    package func value(at position: Int) -> DatabaseValue {
        switch position {
        case 0: id.map { .integer($0) } ?? .null
        case 1: createdAt.map { .real($0.timeIntervalSince1970) } ?? .null
        case 2: updatedAt.map { .real($0.timeIntervalSince1970) } ?? .null
        default: slots[position - 3].databaseValue
        }
    }

    /// Sets `column` to `value`. An integer is accepted for a `REAL` column.
    /// - Throws: `.unknownColumn`; `.typeMismatch` for a value of another
    ///   storage class, or `NULL` in a non-nullable column. The record is
    ///   unchanged on error.
    public func set(_ column: String, _ value: DatabaseValue) throws {
        try set(at: try index(column), value)
    }

    /// ``set(_:_:)`` by declared column index.
    package func set(at index: Int, _ value: DatabaseValue) throws {
        switch value {
        case .null: try setNull(at: index)
        case .integer(let int): try setInteger(at: index, int)
        case .real(let real): try setReal(at: index, real)
        case .text(var text): try text.withUTF8 { try setText(at: index, UnsafeRawBufferPointer($0)) }
        case .blob(let data): try data.withUnsafeBytes { try setBlob(at: index, $0) }
        }
    }

    /// Sets a nullable column to `NULL`.
    /// - Throws: `.typeMismatch` for a column that is not nullable.
    package func setNull(at index: Int) throws {
        guard model.columnNullability[index] else {
            throw ActiveRecordError(
                .typeMismatch, "\(model.schema.name).\(model.schema.columns[index].name) is not nullable; it cannot be set to NULL")
        }
        store(.null, at: index)
    }

    /// Sets an `INTEGER` column, or a `REAL` one to the integer converted.
    /// - Throws: `.typeMismatch` for a column of another type.
    package func setInteger(at index: Int, _ int: Int64) throws {
        switch model.columnTypes[index] {
        case .integer: store(.integer(int), at: index)
        case .real: store(.real(Double(int)), at: index)
        default: throw mismatch(index, DatabaseValue.integer(0))
        }
    }

    /// Sets a `REAL` column.
    /// - Throws: `.invalidValue` for NaN and -0.0 (see ``DatabaseValue/checkStorable()``),
    ///   `.typeMismatch` for a column of another type.
    package func setReal(at index: Int, _ real: Double) throws {
        guard model.columnTypes[index] == .real else { throw mismatch(index, DatabaseValue.real(0)) }
        do {
            try DatabaseValue.real(real).checkStorable()
        } catch let error as ActiveRecordError {
            throw error.with(message: "\(model.schema.name).\(model.schema.columns[index].name): \(error.message)")
        }
        store(.real(real), at: index)
    }

    /// Sets a `TEXT` column to a copy of `utf8`, which the caller checked is valid UTF-8.
    /// - Throws: `.typeMismatch` for a column of another type.
    package func setText(at index: Int, _ utf8: UnsafeRawBufferPointer) throws {
        guard model.columnTypes[index] == .text else { throw mismatch(index, DatabaseValue.text("")) }
        store(.text(copying: utf8, into: &arena), at: index)
    }

    /// Sets a `BLOB` column to a copy of `bytes`.
    /// - Throws: `.typeMismatch` for a column of another type.
    package func setBlob(at index: Int, _ bytes: UnsafeRawBufferPointer) throws {
        guard model.columnTypes[index] == .blob else { throw mismatch(index, DatabaseValue.blob(Data())) }
        store(.blob(copying: bytes, into: &arena), at: index)
    }

    private func mismatch(_ index: Int, _ value: DatabaseValue) -> ActiveRecordError {
        ActiveRecordError(
            .typeMismatch,
            "\(model.schema.name).\(model.schema.columns[index].name) holds \(model.columnTypes[index].rawValue); "
                + "a \(value.storageClassName) value cannot be stored in it")
    }

    /// Makes `value` (now the record's) column `index`'s value, keeping the original of a
    /// saved record's column as it first changes.
    private func store(_ value: OwnedValue, at index: Int) {
        if let originals, originals[index].kind != .absent {
            slots[index].release()
            if OwnedValue.same(value, originals[index]) {
                value.release()
                slots[index] = originals[index]
                originals[index] = .absent
            } else {
                slots[index] = value
            }
            return
        }
        if isNewRecord {  // a new record is inserted whole: nothing to track
            slots[index].release()
            slots[index] = value
            return
        }
        guard !OwnedValue.same(value, slots[index]) else { return value.release() }
        originalsMade()[index] = slots[index]
        slots[index] = value
    }

    private func originalsMade() -> UnsafeMutablePointer<OwnedValue> {
        if let originals { return originals }
        let made = UnsafeMutablePointer<OwnedValue>.allocate(capacity: columnCount)
        made.initialize(repeating: .absent, count: columnCount)
        originals = made
        return made
    }

    /// Saves the record: `INSERT` when new, else an `UPDATE` of the changed columns; no SQL
    /// at all when nothing changed. When the model has validations (those the C API
    /// declares), they run first, in the save's transaction, as a model class's do.
    /// - Throws: `.validationFailed`, `.constraint`,
    ///   `.notFound`, `.misuse` (the record was destroyed). The record is unchanged on error.
    public func save() throws { try Database.withCurrent { try save(in: $0) } }

    /// ``save()`` on `database` rather than the current one.
    package func save(in database: Database) throws {
        // The table through an unretained reference (the model keeps it): the C API's save path.
        try Unretained(model.table).with { table in
            guard model.hasValidations else { return try table.save(self, in: database) }
            try database.use { try RecordLifecycle.save(self, SavePlan(table: table, validates: true)) }
        }
    }

    /// Destroys the record: deletes its row (`DELETE FROM "T" WHERE "id" = ?`).
    /// - Throws: `.misuse` for a new or already destroyed record; `.notFound` when the row
    ///   was deleted elsewhere (the record counts as destroyed).
    public func destroy() throws { try model.table.delete(self) }

    /// Reads the record's row again, discarding unsaved changes.
    public func reload() throws { try model.table.reload(self) }

    // MARK: RecordStorage

    /// Binds the text and bytes where the record holds them (see ``OwnedValue/bind(to:at:)``):
    /// the record outlives the statement's run.
    package func bindColumn(_ index: Int, to statement: Statement, at parameter: Int32) throws {
        try slots[index].bind(to: statement, at: parameter)
    }

    package func decodeColumn(_ index: Int, from statement: Statement, at column: Int32) throws {
        let decoded = try OwnedValue.decoding(statement, at: column, into: &arena)
        slots[index].release()
        slots[index] = decoded
    }

    /// After a whole row was decoded: every column as loaded.
    package func didDecode() { markAllColumnsSaved(count: columnCount) }

    package func currentValue(_ index: Int) throws -> DatabaseValue { value(at: index + 3) }

    package func assignColumn(_ index: Int, _ value: DatabaseValue) throws { try set(at: index, value) }

    package func isColumnChanged(_ index: Int) -> Bool {
        guard let originals else { return false }
        return originals[index].kind != .absent
    }

    package func markColumnSaved(_ index: Int) {
        guard let originals, originals[index].kind != .absent else { return }
        originals[index].release()
        originals[index] = .absent
    }

    package func markAllColumnsSaved(count: Int) {
        guard originals != nil else { return }
        for index in 0..<count { markColumnSaved(index) }
    }

    package func originalValue(_ index: Int) -> DatabaseValue {
        if let originals, originals[index].kind != .absent { return originals[index].databaseValue }
        return slots[index].databaseValue
    }

    package func restoreOriginal(_ index: Int, _ value: DatabaseValue) {
        guard !isDiscarded else { return }  // a rollback reaching a record no one holds
        let original = OwnedValue(value, into: &arena)
        markColumnSaved(index)
        guard !OwnedValue.same(original, slots[index]) else { return original.release() }
        originalsMade()[index] = original
    }
}

@available(*, unavailable, message: "Records are confined to one thread at a time")
extension DynamicRecord: Sendable {}
