import ActiveRecordSQLite
import Foundation

/// `SQLITE_TRANSIENT`: SQLite copies the bytes before the bind call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared SQLite statement: a value around the `sqlite3_stmt` handle, which
/// ``Statement`` owns and finalizes. Every method is a direct sqlite3 call.
package struct SQLiteStatement: EngineStatement {
    package let handle: OpaquePointer

    /// The SQL text, for errors.
    private var sql: String { String(cString: sqlite3_sql(handle)) }

    // MARK: Binding (1-based)

    @inline(__always)
    package func bind(_ value: DatabaseValue, at index: Int32) throws {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(handle, index)
        case .integer(let int): code = sqlite3_bind_int64(handle, index, int)
        case .real(let double): code = sqlite3_bind_double(handle, index, double)
        case .text(let string): code = bindText(string, at: index)
        case .blob(let data): code = bindBlob(data, at: index)
        }
        if code != SQLITE_OK { throw failure(code) }
    }

    /// Binds text that the caller keeps valid until the parameter is bound again or the
    /// statement is finalized: SQLite reads it in place (`SQLITE_STATIC`), no copy.
    @inline(__always)
    package func bindText(borrowing utf8: UnsafeRawBufferPointer, at index: Int32) throws {
        // An empty buffer may have no base address; SQLite would read that as NULL.
        let code = utf8.isEmpty
            ? sqlite3_bind_text(handle, index, "", 0, nil)
            : sqlite3_bind_text(handle, index, utf8.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(utf8.count), nil)
        if code != SQLITE_OK { throw failure(code) }
    }

    /// Binds bytes as ``bindText(borrowing:at:)`` binds text.
    @inline(__always)
    package func bindBlob(borrowing bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        let code = bytes.isEmpty
            ? sqlite3_bind_zeroblob(handle, index, 0)
            : sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), nil)
        if code != SQLITE_OK { throw failure(code) }
    }

    private func bindText(_ string: String, at index: Int32) -> Int32 {
        // A native string's bytes are read in place, without a copy of the string (which
        // `withUTF8` needs, being mutating); a bridged one is made contiguous first.
        if string.isContiguousUTF8,
            let code = string.utf8.withContiguousStorageIfAvailable({ bindText(UnsafeRawBufferPointer($0), at: index) })
        {
            return code
        }
        var string = string
        return string.withUTF8 { bindText(UnsafeRawBufferPointer($0), at: index) }
    }

    /// Binds UTF-8 bytes, which SQLite copies.
    @inline(__always)
    private func bindText(_ bytes: UnsafeRawBufferPointer, at index: Int32) -> Int32 {
        // An empty buffer may have no base address; SQLite would read that as NULL.
        guard let base = bytes.baseAddress, bytes.count > 0 else { return sqlite3_bind_text(handle, index, "", 0, nil) }
        return sqlite3_bind_text(handle, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), transient)
    }

    private func bindBlob(_ data: Data, at index: Int32) -> Int32 {
        guard !data.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
        return data.withUnsafeBytes { bytes in
            sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), transient)
        }
    }

    // MARK: Stepping

    /// Runs one step: `true` when a row is available, `false` when done.
    @inline(__always)
    package func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw stepFailure(code)
        }
    }

    /// The error of a failed step (the statement reset, as SQLite needs before it runs again).
    @inline(never)
    private func stepFailure(_ code: Int32) -> ActiveRecordError {
        let error = failure(code)
        sqlite3_reset(handle)
        return error
    }

    @inline(never)
    private func failure(_ code: Int32) -> ActiveRecordError {
        SQLiteConnection.error(code, sqlite3_db_handle(handle), sql: sql)
    }

    @inline(__always)
    package func insert() throws -> Int64 {
        _ = try step()
        return sqlite3_last_insert_rowid(sqlite3_db_handle(handle))
    }

    /// An upsert that updates leaves `sqlite3_last_insert_rowid` as it was (so does any
    /// trigger's insert, once the trigger ends): set to a value no insert of the upsert can
    /// give first (the upsert never names an id, and SQLite's next rowid is never
    /// `Int64.min`), it has changed exactly when the upsert inserted its row.
    package func upsert() throws -> Bool {
        let database = sqlite3_db_handle(handle)
        sqlite3_set_last_insert_rowid(database, Int64.min)
        guard try step() else {
            throw ActiveRecordError(.misuse, "the upsert returned no row", sql: sql)
        }
        return sqlite3_last_insert_rowid(database) != Int64.min
    }

    @inline(__always)
    package func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Resets without clearing the bindings (the caller binds every parameter again).
    @inline(__always)
    package func resetKeepingBindings() { sqlite3_reset(handle) }

    package func finalize() { sqlite3_finalize(handle) }

    package func expandedSQL() -> String? {
        guard let expanded = sqlite3_expanded_sql(handle) else { return nil }
        defer { sqlite3_free(expanded) }
        return String(cString: expanded)
    }

    // MARK: Columns (0-based), decoded straight from SQLite's result row
    //
    // Each column is reached by one `sqlite3_column_value` and read with `sqlite3_value_*`:
    // every `sqlite3_column_*` call enters and leaves the connection's mutex and checks for
    // an allocation failure, so a type check and a read through them pay that twice (about
    // 30 instructions a column). SQLite calls the value "unprotected" (read without the
    // connection's mutex); our connections are opened with `SQLITE_OPEN_NOMUTEX`, so there is
    // no mutex either way, and a connection is used by one thread at a time.

    package var columnCount: Int32 { sqlite3_column_count(handle) }

    package func columnName(_ index: Int32) -> String {
        String(cString: sqlite3_column_name(handle, index))
    }

    @inline(__always)
    package func isNull(_ index: Int32) -> Bool {
        sqlite3_value_type(sqlite3_column_value(handle, index)) == SQLITE_NULL
    }

    @inline(__always)
    package func int64(_ index: Int32) -> Int64 { sqlite3_value_int64(sqlite3_column_value(handle, index)) }

    @inline(__always)
    package func double(_ index: Int32) -> Double { sqlite3_value_double(sqlite3_column_value(handle, index)) }

    /// The column as a `Double`, or `nil` when it is NULL.
    @inline(__always)
    package func optionalDouble(_ index: Int32) -> Double? {
        let value = sqlite3_column_value(handle, index)
        return sqlite3_value_type(value) == SQLITE_NULL ? nil : sqlite3_value_double(value)
    }

    /// The column's TEXT; `nil` when its bytes are not valid UTF-8 (written by another
    /// program): read as a String they would be changed, so they are a mismatch instead.
    @inline(__always)
    package func string(_ index: Int32) -> String? {
        Self.string(sqlite3_column_value(handle, index))
    }

    @inline(__always)
    private static func string(_ value: OpaquePointer?) -> String? {
        guard let text = sqlite3_value_text(value) else { return "" }
        let count = Int(sqlite3_value_bytes(value))
        // SQLite ends TEXT with a NUL: without a NUL inside, the C-string initializer validates
        // on its fast path (the generic `String(validating:as:)` looks up type metadata per call).
        return text.withMemoryRebound(to: CChar.self, capacity: count + 1) { cString in
            if strlen(cString) == count { return String(validatingCString: cString) }
            return String(validating: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
        }
    }

    @inline(__always)
    package func data(_ index: Int32) -> Data {
        Self.data(sqlite3_column_value(handle, index))
    }

    @inline(__always)
    private static func data(_ value: OpaquePointer?) -> Data {
        let count = Int(sqlite3_value_bytes(value))
        guard count > 0, let bytes = sqlite3_value_blob(value) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    /// The column as a ``DatabaseValue``, by its storage class in this row.
    /// - Throws: `.typeMismatch` for TEXT that is not valid UTF-8.
    @inline(__always)
    package func value(_ index: Int32) throws -> DatabaseValue {
        let value = sqlite3_column_value(handle, index)
        switch sqlite3_value_type(value) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            guard let text = Self.string(value) else { throw invalidUTF8(index) }
            return .text(text)
        default: return .blob(Self.data(value))
        }
    }

    /// The bytes stay SQLite's until the next step or reset (the column's type is not converted).
    @inline(__always)
    package func cell(_ index: Int32) -> Cell { sqliteCell(handle, index) }

    /// The error for TEXT that is not valid UTF-8 (kept out of line: it is rare).
    @inline(never)
    private func invalidUTF8(_ index: Int32) -> ActiveRecordError {
        invalidUTF8Error(column: index, bytes: Int(sqlite3_column_bytes(handle, index)))
    }
}

/// The error for a result column holding text that is not valid UTF-8 (any engine).
package func invalidUTF8Error(column: Int32, bytes: Int) -> ActiveRecordError {
    ActiveRecordError(
        .typeMismatch,
        "result column \(column) holds TEXT that is not valid UTF-8 (\(bytes) bytes); it cannot be read as text")
}

/// The value of result column `index` (0-based) of the SQLite statement `handle` as a
/// ``Cell``, its text and bytes SQLite's until the next step or reset. Public only as SPI and
/// inlinable, so that the C shim's getters read a row with no call between them and SQLite.
@_spi(Engines) @inlinable @inline(__always)
public func sqliteCell(_ handle: OpaquePointer, _ index: Int32) -> Cell {
    // One call into the statement, then the value's readers (see `SQLiteStatement`'s columns).
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
