import CSQLiteRaw
import Foundation

/// `SQLITE_TRANSIENT`: SQLite copies bound text and blobs before the bind call returns.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A failure on the raw side, with SQLite's own message.
struct RawSQLiteError: Error, CustomStringConvertible {
    let description: String
}

/// One raw sqlite3 connection, opened with the pragmas the library uses:
/// `journal_mode=WAL`, `synchronous=NORMAL`, `foreign_keys=ON`.
final class RawDatabase {
    let handle: OpaquePointer
    let path: String

    /// Opens (and for a new path creates) the database file at `path`.
    /// - Parameter pragmas: set the library's pragmas; `false` opens the file
    ///   as it is, to inspect it.
    init(path: String, pragmas: Bool = true) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw RawSQLiteError(description: "cannot open \(path): \(message)")
        }
        self.handle = handle
        self.path = path
        guard pragmas else { return }
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=NORMAL")
        try execute("PRAGMA foreign_keys=ON")
    }

    deinit { sqlite3_close_v2(handle) }

    /// An error for result `code`, naming what was being done.
    func error(_ code: Int32, _ context: String) -> RawSQLiteError {
        RawSQLiteError(description: "\(context): \(String(cString: sqlite3_errmsg(handle))) (code \(code))")
    }

    /// Runs SQL that needs no parameters (rows it returns are ignored).
    func execute(_ sql: String) throws {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw error(code, sql) }
    }

    /// Prepares one statement for repeated use.
    func prepare(_ sql: String) throws -> RawStatement {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code, "prepare \(sql)") }
        return RawStatement(handle: statement, database: self, sql: sql)
    }

    var beginSQL: String { "BEGIN IMMEDIATE" }
    var beginReadSQL: String { "BEGIN" }

    /// The first column of the first row of a query, as an integer (0 when there is no row).
    func integer(_ sql: String, _ arguments: [Double] = []) throws -> Int64 {
        let statement = try prepare(sql)
        for (offset, value) in arguments.enumerated() {
            sqlite3_bind_double(statement.handle, Int32(offset + 1), value)
        }
        return try statement.step() ? sqlite3_column_int64(statement.handle, 0) : 0
    }

    /// The first column of the first row of a query, as text (`nil` for no row or `NULL`).
    func text(_ sql: String) throws -> String? {
        let statement = try prepare(sql)
        guard try statement.step(), let text = sqlite3_column_text(statement.handle, 0) else { return nil }
        return String(cString: text)
    }

    /// The rowid of the last successful `INSERT` on this connection.
    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// How many rows the last `INSERT`, `UPDATE` or `DELETE` changed.
    var changedRowCount: Int64 { sqlite3_changes64(handle) }
}

/// A prepared statement owned by a ``RawDatabase``, finalized on `deinit`.
/// Callers bind and read with the sqlite3 C functions on ``handle`` directly.
final class RawStatement {
    let handle: OpaquePointer
    let database: RawDatabase
    let sql: String

    init(handle: OpaquePointer, database: RawDatabase, sql: String) {
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Steps once: `true` for a row, `false` when done; throws on any error.
    @inline(__always)
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw database.error(code, sql)
        }
    }

    /// Resets the statement for its next use (bindings are all rebound by callers).
    @inline(__always)
    func reset() { sqlite3_reset(handle) }

    /// Binds UTF-8 text (copied by SQLite).
    @inline(__always)
    func bind(_ text: String, at index: Int32) throws {
        var text = text
        let code = text.withUTF8 { bytes -> Int32 in
            // An empty buffer may have no address; a nil pointer would bind NULL, not ''.
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_text(handle, index, "", 0, nil)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(handle, index, $0, Int32(bytes.count), sqliteTransient)
            }
        }
        guard code == SQLITE_OK else { throw database.error(code, "bind text to \(sql)") }
    }

    /// Binds a blob (copied by SQLite).
    @inline(__always)
    func bind(_ data: Data, at index: Int32) throws {
        let code = data.withUnsafeBytes { bytes -> Int32 in
            // Likewise, an empty blob is a zero-length blob, not NULL.
            guard let base = bytes.baseAddress, bytes.count > 0 else { return sqlite3_bind_zeroblob(handle, index, 0) }
            return sqlite3_bind_blob(handle, index, base, Int32(bytes.count), sqliteTransient)
        }
        guard code == SQLITE_OK else { throw database.error(code, "bind blob to \(sql)") }
    }

    /// Result column `index` as text.
    @inline(__always)
    func text(_ index: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Result column `index` as a blob (empty for `NULL` or a zero-length blob).
    @inline(__always)
    func data(_ index: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(handle, index))
        guard count > 0, let bytes = sqlite3_column_blob(handle, index) else { return Data() }
        return Data(bytes: bytes, count: count)
    }
}

extension RawDatabase: RawTransactions {}

/// A raw side's connection: it runs SQL, and so transactions.
protocol RawTransactions {
    func execute(_ sql: String) throws
    /// How a transaction begins (`BEGIN IMMEDIATE` takes SQLite's write lock at once).
    var beginSQL: String { get }
    /// How a read transaction begins: one snapshot for a loop of reads.
    var beginReadSQL: String { get }
}

extension RawTransactions {
    /// Runs `body` between `beginSQL` and `COMMIT`, rolling back when it throws.
    func transaction(_ body: () throws -> Void) throws { try transaction(beginning: beginSQL, body) }

    /// Runs `body` in a read transaction, as a careful C programmer reads a loop of rows.
    func read(_ body: () throws -> Void) throws { try transaction(beginning: beginReadSQL, body) }

    private func transaction(beginning begin: String, _ body: () throws -> Void) throws {
        try execute(begin)
        do {
            try body()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        try execute("COMMIT")
    }
}
