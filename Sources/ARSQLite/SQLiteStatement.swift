import ARSQLite3
@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif


/// A prepared SQLite statement: the `sqlite3_stmt` handle, which ``Statement`` finalizes
/// (``finalize()``), and the cells of its current row. Every method is a direct sqlite3 call.
final class SQLiteStatement: EngineStatement {
    let handle: OpaquePointer
    /// The connection's handle (`sqlite3_db_handle(handle)`), read once.
    private let database: OpaquePointer
    /// The connection's settings its errors name (the statement timeout).
    private unowned let connection: SQLiteConnection
    /// The current row's cells (``row()``), and how many it has room for.
    private var cells: UnsafeMutablePointer<Cell>
    private var capacity: Int32

    init(handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
        database = sqlite3_db_handle(handle)
        capacity = max(1, sqlite3_column_count(handle))
        cells = .allocate(capacity: Int(capacity))
    }

    deinit { cells.deallocate() }

    /// The SQL text, for errors.
    private var sql: String { String(cString: sqlite3_sql(handle)) }

    // MARK: Binding (1-based)

    var parameterCount: Int32 { sqlite3_bind_parameter_count(handle) }

    /// Text and bytes are read in place (`SQLITE_STATIC`): the caller keeps them until the
    /// next bind, reset or finalize.
    @inline(__always)
    func bind(_ parameters: UnsafeBufferPointer<Cell>) throws {
        var index: Int32 = 1
        for parameter in parameters {
            let code: Int32
            switch parameter {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let int): code = sqlite3_bind_int64(handle, index, int)
            case .real(let double): code = sqlite3_bind_double(handle, index, double)
            case .text(let utf8):
                // An empty buffer may have no base address; SQLite would read that as NULL.
                code = utf8.isEmpty
                    ? sqlite3_bind_text(handle, index, "", 0, nil)
                    : sqlite3_bind_text(handle, index, utf8.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(utf8.count), nil)
            case .blob(let bytes):
                code = bytes.isEmpty
                    ? sqlite3_bind_zeroblob(handle, index, 0)
                    : sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), nil)
            }
            if code != SQLITE_OK { try fail(code) }
            index &+= 1
        }
    }

    // MARK: Stepping

    /// Runs one step: `true` when a row is available, `false` when done.
    @inline(__always)
    func step() throws -> Bool {
        let code = sqlite3_step(handle)
        if _fastPath(code == SQLITE_ROW) { return true }  // tested first: a query's every row
        if code == SQLITE_DONE { return false }
        try failStep(code)
    }

    /// Throws ``failure(_:)``: called rather than inlined, the callers keep no room for the
    /// error on their stack (the hot paths' frames stay small).
    @inline(never)
    private func fail(_ code: Int32) throws -> Never { throw failure(code) }

    /// Throws ``stepFailure(_:)``, as ``fail(_:)`` does.
    @inline(never)
    private func failStep(_ code: Int32) throws -> Never { throw stepFailure(code) }

    /// The error of a failed step (the statement reset, as SQLite needs before it runs again).
    @inline(never)
    private func stepFailure(_ code: Int32) -> ActiveRecordError {
        let error = failure(code)
        sqlite3_reset(handle)
        return error
    }

    @inline(never)
    private func failure(_ code: Int32) -> ActiveRecordError {
        var error = SQLiteConnection.error(code, sqlite3_db_handle(handle), sql: sql)
        if code & 0xFF == SQLITE_INTERRUPT, let limit = connection.statementTimeout {
            // SQLite says "interrupted": name the limit that interrupted it.
            error.message = "the statement ran longer than its statement timeout of \(limit.limitDescription) and SQLite "
                + "interrupted it; raise the limit (Database.statementTimeout, withStatementTimeout) or make the statement faster"
        }
        return error
    }

    @inline(__always)
    func step(binding parameters: UnsafeBufferPointer<Cell>) throws -> Bool {
        try bind(parameters)
        return try step()
    }

    @inline(__always)
    func insert(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int64 {
        try bind(parameters)
        return try insert()
    }

    /// The rows changed, as `sqlite3_changes64` counts them (read after the reset, which
    /// leaves them as the run left them).
    @inline(__always)
    func execute(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int? {
        // A delete by id: its one integer bound straight, without the loop over cells and its
        // switch on their kinds (issue 35: every delete and destroy of a record).
        if parameters.count == 1, case .integer(let id) = parameters[0] {
            let code = sqlite3_bind_int64(handle, 1, id)
            if code != SQLITE_OK { try fail(code) }
        } else {
            try bind(parameters)
        }
        while try step() {}
        sqlite3_reset(handle)
        return Int(sqlite3_changes64(database))
    }

    @inline(__always)
    func insert() throws -> Int64 {
        _ = try step()
        return sqlite3_last_insert_rowid(database)
    }

    /// An upsert that updates leaves `sqlite3_last_insert_rowid` as it was (so does any
    /// trigger's insert, once the trigger ends): set to a value no insert of the upsert can
    /// give first (the upsert never names an id, and SQLite's next rowid is never
    /// `Int64.min`), it has changed exactly when the upsert inserted its row.
    func upsert() throws -> Bool {
        sqlite3_set_last_insert_rowid(database, Int64.min)
        guard try step() else {
            throw ActiveRecordError(.misuse, "the upsert returned no row", sql: sql)
        }
        return sqlite3_last_insert_rowid(database) != Int64.min
    }

    @inline(__always)
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    @inline(__always)
    func resetKeepingBindings() { sqlite3_reset(handle) }

    func finalize() { sqlite3_finalize(handle) }

    func expandedSQL() -> String? {
        guard let expanded = sqlite3_expanded_sql(handle) else { return nil }
        defer { sqlite3_free(expanded) }
        return String(cString: expanded)
    }

    // MARK: The row (0-based columns)

    var columnCount: Int32 { sqlite3_column_count(handle) }

    func columnName(_ index: Int32) -> String {
        String(cString: sqlite3_column_name(handle, index))
    }

    /// Each column read once, by `sqlite3_column_value` and the `sqlite3_value_*` readers (see
    /// ``sqliteCell(_:_:)``); the count read again per row, since SQLite may prepare the
    /// statement again after a schema change (`SELECT *` then has more columns).
    @inline(__always)
    func row() -> UnsafeBufferPointer<Cell> {
        let count = sqlite3_column_count(handle)
        if count > capacity { grow(to: count) }
        let cells = self.cells, handle = self.handle
        var index: Int32 = 0
        while index < count {
            cells[Int(index)] = sqliteCell(handle, index)
            index &+= 1
        }
        return UnsafeBufferPointer(start: cells, count: Int(count))
    }

    @inline(never)
    private func grow(to count: Int32) {
        cells.deallocate()
        capacity = count
        cells = .allocate(capacity: Int(count))
    }
}

/// The value of result column `index` (0-based) of the SQLite statement `handle` as a
/// ``Cell``, its text and bytes SQLite's until the next step or reset.
///
/// One call into the statement, then the value's readers: every `sqlite3_column_*` call enters
/// and leaves the connection's mutex and checks for an allocation failure, so a type check and
/// a read through them pay that twice. SQLite calls the value "unprotected" (read without the
/// connection's mutex); the library's connections are opened with `SQLITE_OPEN_NOMUTEX`, so
/// there is no mutex either way, and a connection is used by one thread at a time.
@inline(__always)
func sqliteCell(_ handle: OpaquePointer, _ index: Int32) -> Cell {
    let value = sqlite3_column_value(handle, index)
    switch sqlite3_value_type(value) {
    case SQLITE_NULL: return .null
    case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
    case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
    case SQLITE_TEXT:
        let text = sqlite3_value_text(value)
        return .text(UnsafeRawBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))))
    default:
        let bytes = sqlite3_value_blob(value)
        return .blob(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))))
    }
}
