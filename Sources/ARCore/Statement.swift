import ActiveRecordSQLite
import Foundation

/// `SQLITE_TRANSIENT`: SQLite copies the bytes before the bind call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Identifies a statement the engine generates for a table, so that the
/// statement cache is keyed by a few integers rather than by SQL text.
package struct StatementKey: Hashable {
    package enum Kind: Hashable {
        case insert, find, delete, all
        /// An `UPDATE` of these column indexes.
        case update([Int])
    }

    /// The ``TableEngine/serial`` of the table.
    package var table: UInt64
    package var kind: Kind

    package init(table: UInt64, kind: Kind) {
        self.table = table
        self.kind = kind
    }
}

/// A prepared SQLite statement, owned by one ``Connection``.
///
/// The statement is finalized in `deinit`, so no handle leaks on an error
/// path. Parameters are 1-based; result columns are 0-based, as in SQLite.
package final class Statement {
    package let handle: OpaquePointer
    /// The SQL text, with `?` placeholders.
    package let sql: String
    unowned let connection: Connection
    /// Set while a caller steps the statement, so that re-entrant use prepares a copy.
    @exclusivity(unchecked) var isInUse = false
    /// The key it is cached under, for statements the engine generates.
    @exclusivity(unchecked) var cacheKey: StatementKey?

    init(handle: OpaquePointer, sql: String, connection: Connection) {
        self.handle = handle
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    // MARK: Binding (1-based)

    package func bind(_ value: DatabaseValue, at index: Int32) throws {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(handle, index)
        case .integer(let int): code = sqlite3_bind_int64(handle, index, int)
        case .real(let double): code = sqlite3_bind_double(handle, index, double)
        case .text(let string): code = bindText(string, at: index)
        case .blob(let data): code = bindBlob(data, at: index)
        }
        if code != SQLITE_OK { throw connection.error(code, sql: sql) }
    }

    package func bind(_ values: [DatabaseValue], from start: Int32 = 1) throws {
        for (offset, value) in values.enumerated() {
            try bind(value, at: start + Int32(offset))
        }
    }

    private func bindText(_ string: String, at index: Int32) -> Int32 {
        var string = string
        return string.withUTF8 { bytes in
            // An empty buffer may have no base address; SQLite would read that as NULL.
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_text(handle, index, "", 0, nil)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(handle, index, $0, Int32(bytes.count), transient)
            }
        }
    }

    private func bindBlob(_ data: Data, at index: Int32) -> Int32 {
        guard !data.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
        return data.withUnsafeBytes { bytes in
            sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), transient)
        }
    }

    // MARK: Stepping

    /// Runs one step: `true` when a row is available, `false` when done.
    package func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code:
            var error = connection.error(code, sql: sql)
            if connection.includesBoundValuesInErrors, let expanded = sqlite3_expanded_sql(handle) {
                error.expandedSQL = String(cString: expanded)
                sqlite3_free(expanded)
            }
            sqlite3_reset(handle)
            connection.evict(self)
            throw error
        }
    }

    /// Resets the statement and clears its bindings, ready for reuse.
    package func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    // MARK: Columns (0-based), decoded straight from sqlite3_column_*

    package var columnCount: Int32 { sqlite3_column_count(handle) }

    package func columnName(_ index: Int32) -> String {
        String(cString: sqlite3_column_name(handle, index))
    }

    package func isNull(_ index: Int32) -> Bool {
        sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    package func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    package func double(_ index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// The column's TEXT; `nil` when its bytes are not valid UTF-8 (written by another
    /// program): read as a String they would be changed, so they are a mismatch instead.
    @inline(__always)
    package func string(_ index: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        // SQLite ends TEXT with a NUL: without a NUL inside, the C-string initializer validates
        // on its fast path (the generic `String(validating:as:)` looks up type metadata per call).
        return text.withMemoryRebound(to: CChar.self, capacity: count + 1) { cString in
            if strlen(cString) == count { return String(validatingCString: cString) }
            return String(validating: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
        }
    }

    package func data(_ index: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(handle, index))
        guard count > 0, let bytes = sqlite3_column_blob(handle, index) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    /// The column as a ``DatabaseValue``, by its storage class in this row.
    /// - Throws: `.typeMismatch` for TEXT that is not valid UTF-8.
    @inline(__always)
    package func value(_ index: Int32) throws -> DatabaseValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .integer(int64(index))
        case SQLITE_FLOAT: return .real(double(index))
        case SQLITE_TEXT:
            guard let text = string(index) else { throw invalidUTF8(index) }
            return .text(text)
        default: return .blob(data(index))
        }
    }

    /// The error for TEXT that is not valid UTF-8 (kept out of line: it is rare).
    @inline(never)
    private func invalidUTF8(_ index: Int32) -> ActiveRecordError {
        ActiveRecordError(
            .typeMismatch,
            "result column \(index) holds TEXT that is not valid UTF-8 (\(sqlite3_column_bytes(handle, index)) bytes); "
                + "it cannot be read as text")
    }
}

@available(*, unavailable, message: "A statement belongs to its connection's thread")
extension Statement: Sendable {}
