import ActiveRecordSQLite
import Foundation

/// One SQLite connection: opened with WAL, `synchronous=NORMAL`, foreign keys
/// on, a finite busy timeout and extended result codes, and checked with a
/// probe query so that a file that is not a database fails at open.
///
/// A connection is confined: ``Database`` serializes every use of it.
package final class Connection {
    package let handle: OpaquePointer
    package let path: String
    // Unchecked exclusivity on the per-statement state: a connection is confined (see
    // ``Database``), and none of these accesses overlaps another.
    @exclusivity(unchecked) private var statements: [String: Statement] = [:]
    @exclusivity(unchecked) private var keyedStatements: [StatementKey: Statement] = [:]
    /// The keyed statement used last: a loop of saves finds it without hashing its key.
    @exclusivity(unchecked) private var lastKeyed: Statement?
    /// Called with the SQL text of every statement run, before it runs.
    package var tracer: (@Sendable (String) -> Void)?
    /// Whether step errors carry the SQL with its bound values written in.
    package var includesBoundValuesInErrors = false
    /// The tables automatic migration is preparing on this thread's call stack, so that a
    /// cycle of parents (A belongs to B, B to A) is prepared once.
    package var preparing: Set<UInt64> = []
    /// Tables automatic migration prepared inside the current transaction: published to
    /// every thread when it commits, forgotten when any level rolls back.
    @exclusivity(unchecked) package var preparedInTransaction: Set<UInt64> = []
    /// The records a destroy cascade is destroying, so that each is destroyed once.
    package var destroyingRecords: Set<DestroyKey> = []
    /// How deep the current transaction is: 0 outside, 1 in `BEGIN`, 2+ in savepoints.
    @exclusivity(unchecked) package var transactionDepth = 0
    /// Per transaction level, what to undo in memory if it rolls back (records' ids, saved values).
    @exclusivity(unchecked) package var rollbackActions: [[UndoEntry]] = []

    /// Registers `entry` to undo if the current transaction level rolls back; outside a
    /// transaction there is nothing to undo and the entry is dropped.
    package func onRollback(_ entry: UndoEntry) {
        guard transactionDepth > 0, !rollbackActions.isEmpty else { return }
        rollbackActions[rollbackActions.count - 1].append(entry)
    }

    /// Registers `action` to run if the current transaction level rolls back.
    package func onRollback(_ action: @escaping () -> Void) { onRollback(.action(action)) }

    /// How long a connection waits for a lock held by another connection.
    package static let busyTimeoutMilliseconds: Int32 = 10_000

    /// Opens (and for a new path creates) the database at `path`.
    ///
    /// - Throws: `.cannotOpen`, `.notADatabase` or `.readOnly` with the path;
    ///   the file is not modified when opening fails.
    /// - Parameter uri: read `path` as an SQLite URI filename (only for ``DatabaseLocation/uri(_:)``).
    package init(path: String, readOnly: Bool = false, uri: Bool = false) throws {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE | (uri ? SQLITE_OPEN_URI : 0)
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard let handle else {
            throw ActiveRecordError(.cannotOpen, "cannot open database at \(path): out of memory")
        }
        guard code == SQLITE_OK else {
            let message = String(cString: sqlite3_errmsg(handle))
            sqlite3_close_v2(handle)
            throw Connection.openError(code: code, path: path, detail: message)
        }
        self.handle = handle
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Connection.busyTimeoutMilliseconds)
        do {
            try configure(readOnly: readOnly)
        } catch let error as ActiveRecordError {
            // The object is fully initialised here, so deinit finalizes and closes the
            // handle; closing it here too would close it twice (found by valgrind).
            throw Connection.openError(code: error.resultCode ?? SQLITE_ERROR, path: path, detail: error.message)
        }
    }

    deinit {
        statements.removeAll()
        keyedStatements.removeAll()
        lastKeyed = nil
        sqlite3_close_v2(handle)
    }

    private func configure(readOnly: Bool) throws {
        // The probe reads the header before anything writes to the file,
        // so a file that is not a database is left exactly as it was.
        try execute("SELECT count(*) FROM sqlite_master")
        if !readOnly, sqlite3_db_readonly(handle, "main") == 1 {
            throw ActiveRecordError(.readOnly, "the file is read-only", resultCode: SQLITE_READONLY)
        }
        if !readOnly { try execute("PRAGMA journal_mode=WAL") }
        try execute("PRAGMA synchronous=NORMAL")
        try execute("PRAGMA foreign_keys=ON")
    }

    private static func openError(code: Int32, path: String, detail: String) -> ActiveRecordError {
        switch code & 0xFF {
        case SQLITE_NOTADB:
            return ActiveRecordError(
                .notADatabase,
                "\(path) is not an SQLite database (\(detail)); it was left untouched. "
                    + "Point the configuration at a database file or at a new path.",
                resultCode: code)
        case SQLITE_READONLY:
            return ActiveRecordError(
                .readOnly,
                "the database file \(path) is read-only; make it writable or open it read-only.",
                resultCode: code)
        case SQLITE_CANTOPEN:
            let directory = (path as NSString).deletingLastPathComponent
            let reason = FileManager.default.fileExists(atPath: directory.isEmpty ? "." : directory)
                ? "check that the path is a file and that it is readable and writable"
                : "the directory \(directory) does not exist; create it first"
            return ActiveRecordError(.cannotOpen, "cannot open database at \(path): \(reason).", resultCode: code)
        default:
            return ActiveRecordError(.cannotOpen, "cannot open database at \(path): \(detail)", resultCode: code)
        }
    }

    // MARK: Statements

    /// The cached prepared statement for `sql`, preparing it on first use.
    package func statement(_ sql: String) throws -> Statement {
        if let statement = statements[sql] { return statement }
        let statement = try prepare(sql, persistent: true)
        statements[sql] = statement
        return statement
    }

    /// Prepares exactly one statement; SQL with a second statement is refused.
    package func prepare(_ sql: String, persistent: Bool = false) throws -> Statement {
        var handle: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        // The tail points into the C string, which lives only inside this closure.
        let (code, hasMore) = sql.withCString { text -> (Int32, Bool) in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(self.handle, text, -1, flags, &handle, &tail)
            guard code == SQLITE_OK, let tail else { return (code, false) }
            return (code, String(cString: tail).contains { !$0.isWhitespace && $0 != ";" })
        }
        guard code == SQLITE_OK else { throw error(code, sql: sql) }
        guard let handle else {
            throw ActiveRecordError(.misuse, "the SQL text holds no statement", sql: sql)
        }
        let statement = Statement(handle: handle, sql: sql, connection: self)
        if hasMore {
            throw ActiveRecordError(.misuse, "only one SQL statement may run at a time", sql: sql)
        }
        return statement
    }

    /// Drops a statement from the cache after a failed step.
    func evict(_ statement: Statement) {
        if let key = statement.cacheKey {
            if keyedStatements[key] === statement { keyedStatements[key] = nil }
            if lastKeyed === statement { lastKeyed = nil }
        } else if statements[statement.sql] === statement {
            statements[statement.sql] = nil
        }
    }

    /// Runs `sql` with `arguments` bound, then `body` with the statement
    /// (not yet stepped), and always resets the statement afterwards.
    package func withStatement<R>(
        _ sql: String, _ arguments: [DatabaseValue] = [], _ body: (Statement) throws -> R
    ) throws -> R {
        try run(statement(sql), arguments, body)
    }

    /// ``withStatement(_:_:_:)`` for SQL the engine generates, cached by
    /// `key`: the per-row paths hash a small key, never the SQL text, and
    /// make the text only the first time.
    package func withStatement<R>(
        _ key: StatementKey, sql: () -> String, _ arguments: [DatabaseValue] = [], _ body: (Statement) throws -> R
    ) throws -> R {
        if let lastKeyed, lastKeyed.cacheKey == key { return try run(lastKeyed, arguments, body) }
        if let statement = keyedStatements[key] {
            lastKeyed = statement
            return try run(statement, arguments, body)
        }
        let statement = try prepare(sql(), persistent: true)
        statement.cacheKey = key
        keyedStatements[key] = statement
        lastKeyed = statement
        return try run(statement, arguments, body)
    }

    private func run<R>(_ cached: Statement, _ arguments: [DatabaseValue], _ body: (Statement) throws -> R) throws -> R {
        var statement = cached
        if statement.isInUse {
            // Re-entered while the cached statement is still stepping
            // (a nested query with the same SQL): use a private copy.
            statement = try prepare(cached.sql)
        }
        statement.isInUse = true
        defer {
            statement.reset()
            statement.isInUse = false
        }
        try statement.bind(arguments)
        tracer?(statement.sql)
        return try body(statement)
    }

    /// Runs a statement that returns no rows (or whose rows are ignored).
    package func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        try withStatement(sql, arguments) { statement in
            while try statement.step() {}
        }
    }

    /// Runs a query and returns every row as values.
    package func rows(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> [[DatabaseValue]] {
        try withStatement(sql, arguments) { statement in
            var rows: [[DatabaseValue]] = []
            let count = statement.columnCount
            while try statement.step() {
                rows.append(try (0..<count).map { try statement.value($0) })
            }
            return rows
        }
    }

    /// Turns SQLite's legacy reading of a double-quoted unknown name as a string on or off,
    /// for the statements this connection runs.
    package func setDoubleQuotedStrings(_ enabled: Bool) {
        _ = ar_sqlite_set_double_quoted_strings(handle, enabled ? 1 : 0)
    }

    /// The rowid of the last successful `INSERT`.
    package var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// How many rows the last `INSERT`, `UPDATE` or `DELETE` changed.
    package var changedRowCount: Int { Int(sqlite3_changes64(handle)) }

    // MARK: Errors

    /// An error for result `code`, with SQLite's message and the SQL text.
    package func error(_ code: Int32, sql: String?) -> ActiveRecordError {
        let message = String(cString: sqlite3_errmsg(handle))
        let kind: ActiveRecordError.Code
        switch code & 0xFF {
        case SQLITE_CONSTRAINT: kind = .constraint
        case SQLITE_NOTADB: kind = .notADatabase
        case SQLITE_READONLY: kind = .readOnly
        case SQLITE_CANTOPEN: kind = .cannotOpen
        case SQLITE_MISMATCH: kind = .typeMismatch
        default: kind = .sqlite
        }
        return ActiveRecordError(kind, message, resultCode: code, sql: sql)
    }
}

@available(*, unavailable, message: "A connection is confined; use Database, which serializes access")
extension Connection: Sendable {}
