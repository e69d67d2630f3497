import ARSQLiteMutexes
import ARSQLite3
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

/// One SQLite connection: opened with WAL, `synchronous=NORMAL`, foreign keys on, a finite
/// busy timeout and extended result codes, and checked with a probe query so that a file
/// that is not a database fails at open. A reader is `query_only`. Opening waits for other
/// processes up to the busy timeout, the switch to WAL included (see `whileBusy`).
///
/// The `sqlite3` handle: ``Connection`` owns it and closes it.
final class SQLiteConnection: EngineConnection {
    let handle: OpaquePointer
    /// The limit ``setStatementTimeout(_:)`` set (for the error of a statement it interrupts).
    private(set) var statementTimeout: Duration?

    /// How long a connection waits for a lock held by another connection.
    package static let busyTimeoutMilliseconds: Int32 = 10_000

    /// Opens (and for a new path creates) the database at `path`.
    ///
    /// - Parameters:
    ///   - readOnly: open without write access.
    ///   - uri: read `path` as an SQLite URI filename (only for ``DatabaseLocation/uri(_:)``).
    ///   - role: a reader connection is `PRAGMA query_only`.
    /// - Throws: `.cannotOpen`, `.notADatabase` or `.readOnly` with the path; the file is not
    ///   modified when opening fails.
    package init(path: String, readOnly: Bool = false, uri: Bool = false, role: ConnectionRole = .writer) throws {
        _ = Self.processConfigured
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
            throw Self.openError(code: code, path: path, detail: message)
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Self.busyTimeoutMilliseconds)
        do {
            try configure(readOnly: readOnly, role: role)
        } catch let error as ActiveRecordError {
            sqlite3_close_v2(handle)
            throw Self.openError(code: error.engineCode ?? SQLITE_ERROR, path: path, detail: error.message)
        }
    }

    /// Done once, before the process's first connection (unless the program asked to keep
    /// SQLite's defaults; when it initialized SQLite already, this changes nothing):
    /// - SQLite's process-wide memory statistics off, which spares every allocation SQLite
    ///   makes a global mutex. Measured: finds in one read transaction 10–18% faster per thread.
    /// - SQLite's mutexes as adaptive ones, which spin briefly before they sleep
    ///   (``Database/keepSQLiteMutexes()`` says why).
    private static let processConfigured: Bool = {
        if !Database.keepsMutexes.load(ordering: .relaxed) { _ = arsqlite_use_spinning_mutexes() }
        guard !Database.keepsMemoryStatistics.load(ordering: .relaxed) else { return false }
        return ar_sqlite_set_memory_statistics(0) == SQLITE_OK
    }()

    /// Whether SQLite in this process uses the library's adaptive mutexes (its settings
    /// applied first).
    package static var usesSpinningMutexes: Bool {
        _ = processConfigured
        return arsqlite_spinning_mutexes_installed() != 0
    }

    private func configure(readOnly: Bool, role: ConnectionRole) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(Self.busyTimeoutMilliseconds))
        // The probe reads the header before anything writes to the file,
        // so a file that is not a database is left exactly as it was.
        try whileBusy(until: deadline) { try execute("SELECT count(*) FROM sqlite_master") }
        if !readOnly, sqlite3_db_readonly(handle, "main") == 1 {
            throw ActiveRecordError(.readOnly, "the file is read-only", engineCode: SQLITE_READONLY)
        }
        // Switching to WAL writes the file's header under an exclusive lock, which other
        // processes opening the same new file may hold or block: the switch is made only when
        // the file is not in WAL already (the probe has read which mode it is in), and retried.
        if !readOnly, try whileBusy(until: deadline, journalMode) != "wal" {
            try whileBusy(until: deadline) { try execute("PRAGMA journal_mode=WAL") }
        }
        try execute("PRAGMA synchronous=NORMAL")
        try execute("PRAGMA foreign_keys=ON")
        if role == .reader { try execute("PRAGMA query_only=1") }
    }

    /// The connection's journal mode ("wal", "delete", ...), as the last read of the file set it.
    private func journalMode() throws -> String {
        let statement = try prepareStatement("PRAGMA journal_mode", .once)
        defer { statement.finalize() }
        guard try statement.step(), case .text(let utf8) = statement.row()[0] else { return "" }
        return String(decoding: utf8, as: UTF8.self).lowercased()
    }

    /// Runs `body` again after a short pause while it fails with SQLITE_BUSY or SQLITE_LOCKED
    /// (any extended code), until `deadline`; then its last error is thrown.
    ///
    /// Why the busy timeout is not enough: SQLite calls the busy handler only while a
    /// connection holds no lock of its own. `PRAGMA journal_mode=WAL` first reads the file
    /// (a shared lock) and then upgrades to the exclusive lock it writes the header under; the
    /// upgrade fails at once with SQLITE_BUSY when another connection holds a shared lock
    /// (SQLite refuses to wait there, as two upgrading readers would wait for each other).
    /// Processes opening one new file together each hold a shared lock in turn, so without
    /// this one of them would fail to open with "database is locked".
    private func whileBusy<R>(until deadline: ContinuousClock.Instant, _ body: () throws -> R) throws -> R {
        while true {
            do {
                return try body()
            } catch let error as ActiveRecordError {
                guard let code = error.engineCode, code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED,
                    ContinuousClock.now < deadline
                else { throw error }
                // A pause of 1 to 5 ms, random so that processes retrying together fall out of step.
                usleep(UInt32.random(in: 1_000...5_000))
            }
        }
    }

    /// Runs one statement with no parameters, its rows ignored.
    package func execute(_ sql: String) throws {
        let statement = try prepareStatement(sql, .once)
        defer { statement.finalize() }
        while try statement.step() {}
    }

    private static func openError(code: Int32, path: String, detail: String) -> ActiveRecordError {
        switch code & 0xFF {
        case SQLITE_NOTADB:
            return ActiveRecordError(
                .notADatabase,
                "\(path) is not an SQLite database (\(detail)); it was left untouched. "
                    + "Point the configuration at a database file or at a new path.",
                engineCode: code)
        case SQLITE_READONLY:
            return ActiveRecordError(
                .readOnly,
                "the database file \(path) is read-only; make it writable or open it read-only.",
                engineCode: code)
        case SQLITE_CANTOPEN:
            let directory = parentDirectory(of: path)
            let reason = FileManager.default.fileExists(atPath: directory.isEmpty ? "." : directory)
                ? "check that the path is a file and that it is readable and writable"
                : "the directory \(directory) does not exist; create it first"
            return ActiveRecordError(.cannotOpen, "cannot open database at \(path): \(reason).", engineCode: code)
        default:
            return ActiveRecordError(.cannotOpen, "cannot open database at \(path): \(detail)", engineCode: code)
        }
    }

    // MARK: EngineConnection

    package func prepare(_ sql: String, _ use: StatementUse) throws -> any EngineStatement {
        try prepareStatement(sql, use)
    }

    /// Prepares exactly one statement; SQL with a second statement is refused.
    func prepareStatement(_ sql: String, _ use: StatementUse) throws -> SQLiteStatement {
        var statement: OpaquePointer?
        let flags = use == .cached ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        // The tail points into the C string, which lives only inside this closure.
        let (code, hasMore) = sql.withCString { text -> (Int32, Bool) in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(handle, text, -1, flags, &statement, &tail)
            guard code == SQLITE_OK, let tail else { return (code, false) }
            return (code, String(cString: tail).contains { !$0.isWhitespace && $0 != ";" })
        }
        guard code == SQLITE_OK else { throw Self.error(code, handle, sql: sql) }
        guard let statement else {
            throw ActiveRecordError(.misuse, "the SQL text holds no statement", sql: sql)
        }
        if hasMore {
            sqlite3_finalize(statement)
            throw ActiveRecordError(.misuse, "only one SQL statement may run at a time", sql: sql)
        }
        return SQLiteStatement(handle: statement, connection: self)
    }

    package var changedRowCount: Int { Int(sqlite3_changes64(handle)) }

    /// SQLite's transactions survive a failed statement.
    package var isInFailedTransaction: Bool { false }

    package var hasOpenTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    package var isUsable: Bool { true }

    /// A deadline `timeout` from now for the statements that run next (a progress handler
    /// that interrupts them: `.timeout`); `nil` removes it.
    package func setStatementTimeout(_ timeout: Duration?) {
        statementTimeout = timeout
        guard let timeout else { return ar_sqlite_set_statement_timeout(handle, 0) }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let total = nanoseconds.overflow ? Int64.max / 2 : nanoseconds.partialValue + attoseconds / 1_000_000_000
        ar_sqlite_set_statement_timeout(handle, max(1, min(total, Int64.max / 2)))
    }

    /// `sqlite3_interrupt`, which SQLite allows from any thread while the connection is open.
    package func interrupt() { sqlite3_interrupt(handle) }

    package func close() { sqlite3_close_v2(handle) }

    /// Turns SQLite's legacy reading of a double-quoted unknown name as a string on or off.
    package func setDoubleQuotedStrings(_ enabled: Bool) {
        _ = ar_sqlite_set_double_quoted_strings(handle, enabled ? 1 : 0)
    }

    // MARK: Errors

    /// An error for result `code` on connection `handle`, with SQLite's message and the SQL text.
    package static func error(_ code: Int32, _ handle: OpaquePointer?, sql: String?) -> ActiveRecordError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
        let kind: ActiveRecordError.Code
        switch code & 0xFF {
        case SQLITE_CONSTRAINT: kind = .constraint
        case SQLITE_NOTADB: kind = .notADatabase
        case SQLITE_READONLY: kind = .readOnly
        case SQLITE_CANTOPEN: kind = .cannotOpen
        case SQLITE_MISMATCH: kind = .typeMismatch
        case SQLITE_BUSY: kind = .busy
        // Interrupted by the statement timeout's progress handler (the only interrupt the library makes).
        case SQLITE_INTERRUPT: kind = .timeout
        default: kind = .engine
        }
        var error = ActiveRecordError(kind, message, engineCode: code, sql: sql)
        switch code {
        case AR_SQLITE_CONSTRAINT_UNIQUE, AR_SQLITE_CONSTRAINT_PRIMARYKEY: error.constraint = .unique
        case AR_SQLITE_CONSTRAINT_FOREIGNKEY: error.constraint = .foreignKey
        case AR_SQLITE_CONSTRAINT_NOTNULL: error.constraint = .notNull
        case AR_SQLITE_CONSTRAINT_CHECK: error.constraint = .check
        default: break
        }
        return error
    }
}

/// The directory part of `path`, as `NSString.deletingLastPathComponent` gives it: `a/b/c` →
/// `a/b`, `/a` → `/`, `a` → `` (trailing slashes ignored).
func parentDirectory(of path: String) -> String {
    var trimmed = Substring(path)
    while trimmed.count > 1, trimmed.last == "/" { trimmed.removeLast() }
    guard let slash = trimmed.lastIndex(of: "/") else { return "" }
    var parent = trimmed[..<slash]
    while parent.last == "/" { parent.removeLast() }
    return parent.isEmpty && path.hasPrefix("/") ? "/" : String(parent)
}
