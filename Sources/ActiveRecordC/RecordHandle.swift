import ActiveRecord
import ActiveRecordSQLite

/// `ar_record`: a record, with scratch storage for what getters return.
///
/// A record from ar_query_next on a cursor is a *row record*: its getters read the
/// cursor's current row, with nothing decoded or allocated. It gets a `DynamicRecord` of its
/// own when it is changed, saved, reloaded or destroyed, or when C still holds it as the
/// cursor moves on (``detach()``).
final class RecordHandle: Handle {
    let model: ModelHandle
    let frozen: ModelHandle.Frozen
    @exclusivity(unchecked) private var stored: DynamicRecord?
    /// The cursor statement whose current row this record reads, while it has no `stored`,
    /// and its sqlite3_stmt (read by the getters without retaining the statement).
    @exclusivity(unchecked) private var row: Statement? {
        didSet { rowHandle = row?.handle }
    }
    @exclusivity(unchecked) private var rowHandle: OpaquePointer?
    /// The text or bytes a getter returned last: a copy, because a row's bytes change at the
    /// cursor's next step and a small `Data` is stored inline (its address would not outlive
    /// the call). Made on first use: most records never return any.
    @exclusivity(unchecked) private var keptStorage: KeptBytes?
    var kept: KeptBytes {
        if let keptStorage { return keptStorage }
        let made = KeptBytes()
        keptStorage = made
        return made
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
        stored = record
        super.init(kind: .record)
    }

    init(model: ModelHandle, frozen: ModelHandle.Frozen, row: Statement) {
        self.model = model
        self.frozen = frozen
        self.row = row
        rowHandle = row.handle
        super.init(kind: .record)
    }

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
        stored = record
        undecodable = nil
        errors = []
    }

    /// The row id (`nil`: unsaved).
    var id: Int64? {
        if let rowHandle { return sqlite3_column_int64(rowHandle, 0) }
        return try? record.id
    }

    /// Calls `body` with the value at `position` in the schema's `allColumnNames`; text and
    /// bytes point into the row or the record and are valid only during the call.
    func withCell<R>(at position: Int, _ body: (Cell) throws -> R) throws -> R {
        if let statement = rowHandle {
            let column = Int32(position)
            switch sqlite3_column_type(statement, column) {
            case SQLITE_NULL: return try body(.null)
            case SQLITE_INTEGER: return try body(.integer(sqlite3_column_int64(statement, column)))
            case SQLITE_FLOAT: return try body(.real(sqlite3_column_double(statement, column)))
            case SQLITE_TEXT:
                let text = sqlite3_column_text(statement, column)
                return try body(.text(UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column)))))
            default:
                let bytes = sqlite3_column_blob(statement, column)
                return try body(.blob(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column)))))
            }
        }
        switch try record.value(at: position) {
        case .null: return try body(.null)
        case .integer(let int): return try body(.integer(int))
        case .real(let real): return try body(.real(real))
        case .text(var text): return try text.withUTF8 { try body(.text(UnsafeRawBufferPointer($0))) }
        case .blob(let data): return try data.withUnsafeBytes { try body(.blob($0)) }
        }
    }
}

/// A column's value as a getter sees it, without copying: text and bytes are borrowed.
enum Cell {
    case null
    case integer(Int64)
    case real(Double)
    case text(UnsafeRawBufferPointer)
    case blob(UnsafeRawBufferPointer)

    /// `NULL`, `INTEGER`, `REAL`, `TEXT` or `BLOB`, for messages.
    var storageClassName: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}
