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
import ARLibPQ
@_spi(Engines) import ARCore

/// One libpq connection: every call sends one command to the server and waits for its whole
/// result. Confined to one thread at a time (``Database`` hands it out).
///
/// At connect it asks for UTF-8, exact floating-point text (`extra_float_digits = 3`),
/// standard strings and hex `bytea` output, whatever the server's defaults; a connection to
/// a database opened read-only makes every transaction read-only. Behind a pooler in
/// transaction mode it sets nothing for the session (see
/// `PostgreSQLConnection+TransactionPooling.swift`).
///
/// Commands are sent with libpq's asynchronous calls (`PQsendQuery`, `PQsendPrepare`, …) on a
/// non-blocking connection, and every answer is awaited in one loop (``result(ofSent:)``),
/// which polls the socket up to the statement timeout's deadline when one applies. The server
/// enforces the limit itself (`statement_timeout`); the deadline is for a server that does not
/// answer at all, whose connection is then closed.
final class PostgreSQLConnection: EngineConnection {
    let handle: OpaquePointer
    /// Where the connection goes, for messages (no password).
    let description: String
    /// Masks the connection string's passwords in libpq's text.
    let mask: PasswordMask
    // Unchecked exclusivity on the two fields every statement reads or writes: a connection
    // is confined to one thread at a time, and none of these accesses overlaps another.
    /// How many rows the last `INSERT`, `UPDATE` or `DELETE` changed.
    @exclusivity(unchecked) var lastChanged = 0
    /// Prepared statements no longer used, deallocated before the next statement runs (a
    /// round trip of their own would slow every eviction).
    @exclusivity(unchecked) var deallocations: [String] = []
    private var nextName = 0
    /// What the bulk inserts know of each table (its columns' types, its statement prepared on
    /// the server), by the one-row SQL (PostgreSQLConnection+BulkInsert.swift).
    var bulkStatements: [String: BulkInsertForm] = [:]
    /// libpq's cancel object for the connection's server process (see ``interrupt()``); made at
    /// connect, used from other threads, freed at close.
    private let cancelRequest: OpaquePointer?
    /// Where the connection's server process is known as the database's own (so that the
    /// observers' listener skips its notifications), from the engine's ``PostgreSQLEngine/connect(_:)``
    /// until ``close()``.
    var backends: BackendRegistry? {
        didSet { backends?.insert(PQbackendPID(handle)) }
    }

    // The statement timeout. The server's `statement_timeout` is set (or reset to the
    // session's own) only when the limit changes: `SET` in a transaction is undone by its
    // rollback, so one set there is taken as unknown once the transaction has ended, and
    // none is set in a failed transaction (only its rollback can run).
    /// The limit on the statements that run next (see ``setStatementTimeout(_:)``).
    private(set) var statementTimeout: Duration?
    /// ``statementTimeout`` in milliseconds, 0 for none.
    private(set) var wantedMilliseconds: Int64 = 0
    /// How long the client waits for an answer (``clientLimit(for:)``) in nanoseconds, 0 for
    /// no limit.
    private(set) var clientLimitNanoseconds: UInt64 = 0
    /// The server's `statement_timeout` as the library last set it (0: the session's own);
    /// `nil` when unknown.
    private var serverMilliseconds: Int64? = 0
    /// Whether the library last set the server's limit inside a transaction.
    private var setInTransaction = false
    /// The error of the command that the server did not answer in time: the connection was
    /// closed, and every later command fails with it.
    private var closedError: ActiveRecordError?
    /// Whether ``closedError`` is set (read per statement: a flag, not an optional's copy).
    private var isClosed = false
    /// Whether the next command must first settle the above (one flag on the hot path).
    var needsPreparation = false

    // Behind a pooler in transaction mode (see PostgreSQLConnection+TransactionPooling.swift).
    /// Whether a pooler in transaction mode is in front of the server: nothing may outlive a
    /// transaction on the server connection.
    let transactionPooling: Bool
    /// Whether every transaction must be read-only (a database opened read-only).
    let readOnly: Bool
    /// The `statement_timeout` (milliseconds, 0: the server's own) and `transaction_read_only`
    /// the library set with `set_config(…, true)` in the server's current transaction.
    var localMilliseconds: Int64 = 0
    var localReadOnly = false

    /// Connects with libpq's `keywords` and `values` (the connection string among them, as
    /// `dbname`, expanded).
    /// - Throws: `.cannotOpen` with libpq's reason (no server, refused login, no database,
    ///   no answer within the connect timeout), its passwords masked.
    init(
        keywords: [String], values: [String], readOnly: Bool, description: String, mask: PasswordMask, transactionPooling: Bool = false
    ) throws {
        self.description = description
        self.mask = mask
        self.transactionPooling = transactionPooling
        self.readOnly = readOnly
        let handle = withCStrings(keywords) { keywords in
            withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let handle else {
            throw ActiveRecordError(.cannotOpen, "cannot connect to PostgreSQL at \(description): out of memory")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let reason = mask.mask(String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines)
            PQfinish(handle)
            // Transient: a server down, restarting or being replaced is what a failover looks
            // like (libpq gives no SQLSTATE here to tell a refused login apart; retrying one
            // fails again, after a few seconds of backoff).
            var error = ActiveRecordError(.cannotOpen, "cannot connect to PostgreSQL at \(description): \(reason)")
            error.transient = true
            throw error
        }
        self.handle = handle
        cancelRequest = PQgetCancel(handle)
        ar_pg_silence_notices(handle)
        // Sends never block: a server that stops reading cannot hold a write past the deadline.
        _ = PQsetnonblocking(handle, 1)
        var settings = "SET extra_float_digits = 3; SET standard_conforming_strings = on; SET bytea_output = 'hex'"
        if readOnly { settings += "; SET default_transaction_read_only = on" }
        do {
            if transactionPooling {
                try checkServerDefaults()
                needsPreparation = readOnly
            } else {
                try run(settings)
            }
        } catch {
            if let cancelRequest { PQfreeCancel(cancelRequest) }
            PQfinish(handle)
            throw error
        }
    }

    /// Runs SQL without parameters through the simple protocol (several statements allowed).
    /// Not behind a transaction pooler once connected (a statement there may need the
    /// transaction's settings before it, which the simple protocol cannot carry).
    func run(_ sql: String) throws {
        PQclear(try checked(sql, exchange { PQsendQuery(handle, sql) }))
    }

    /// `result` when it succeeded (a command, or rows); else throws its error (clearing it).
    func checked(_ sql: String, _ result: OpaquePointer?) throws -> OpaquePointer {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard let result, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let error = postgreSQLError(result, self, sql: sql)
            PQclear(result)
            throw error
        }
        return result
    }

    /// A name for a server-side statement or cursor, unique on this connection.
    func makeName(_ prefix: String) -> String {
        nextName += 1
        return "activerecord_\(prefix)\(nextName)"
    }

    /// Deallocates the prepared statements evicted since the last statement (when the
    /// transaction can still run statements; otherwise they live until the connection closes).
    func deallocateEvicted() throws {
        guard !deallocations.isEmpty, !isInFailedTransaction else { return }
        let sql = deallocations.map { "DEALLOCATE \($0.quotedIdentifier)" }.joined(separator: "; ")
        deallocations.removeAll()
        PQclear(try exchange { PQsendQuery(handle, sql) })
    }

    // MARK: Sending and waiting

    /// Sends one command with `send` (a `PQsend…` call) and returns its result as `PQexec`
    /// would (see ``result(ofSent:)``).
    /// - Throws: `.timeout` when the server did not answer in time (the connection is closed);
    ///   the error of setting the server's statement timeout.
    ///
    /// `sql` is the command's text, read only behind a transaction pooler (see
    /// ``pooledExchange(_:_:)``).
    @inline(__always)
    func exchange(for sql: @autoclosure () -> String = "", _ send: () -> Int32) throws -> OpaquePointer? {
        if needsPreparation {
            if transactionPooling { return try pooledExchange(sql(), send) }
            try prepareCommand()
        }
        return try result(ofSent: send())
    }

    /// The answer to the command just sent (`sent`: what the `PQsend…` call returned), as
    /// `PQexec` gives it: the last of its results (`nil` when it could not be sent, or the
    /// connection was lost: `PQerrorMessage` then says why). Stops at a `COPY` result, and
    /// when the connection is lost, as `PQexec` does.
    ///
    /// Without a statement timeout, `PQgetResult` waits as `PQexec` would (no clock is read).
    /// With one, each result is first awaited here, by `poll` on the socket up to the deadline
    /// (and `PQconsumeInput`) until libpq has it whole.
    /// - Throws: `.timeout` when a statement timeout applies and no answer came within it and
    ///   its grace: the connection is closed (not canceled: a cancel request to a server that
    ///   does not answer would wait for it too).
    func result(ofSent sent: Int32) throws -> OpaquePointer? {
        guard sent == 1 else { return nil }
        let deadline = clientLimitNanoseconds == 0 ? 0 : monotonicNanoseconds() &+ clientLimitNanoseconds
        var last: OpaquePointer?
        while true {
            if deadline != 0 { try awaitResult(until: deadline) }
            guard let result = PQgetResult(handle) else { break }
            if let last { PQclear(last) }
            last = result
            let status = PQresultStatus(result)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH || PQstatus(handle) == CONNECTION_BAD {
                break
            }
        }
        return last
    }

    /// Waits until the next result is whole in libpq (what is left to send sent first), or
    /// the deadline (`CLOCK_MONOTONIC` nanoseconds) passes.
    /// - Throws: `.timeout` when the deadline passed (the connection is then closed).
    func awaitResult(until deadline: UInt64) throws {
        // Whatever libpq could not write at once (a large command; a server that stops reading).
        while PQflush(handle) == 1 {
            if try wait(for: Int16(POLLIN | POLLOUT), until: deadline) & Int16(POLLIN) != 0 { _ = PQconsumeInput(handle) }
        }
        while PQisBusy(handle) != 0 {
            _ = try wait(for: Int16(POLLIN), until: deadline)
            // A lost connection: libpq noted why, and PQgetResult returns it at once.
            if PQconsumeInput(handle) == 0 { return }
        }
    }

    /// Waits until the socket is ready for `events` (`poll`), or the deadline passes.
    /// - Returns: the events that are ready.
    /// - Throws: `.timeout` when the deadline passed (the connection is then closed).
    func wait(for events: Int16, until deadline: UInt64) throws -> Int16 {
        var descriptor = pollfd(fd: PQsocket(handle), events: events, revents: 0)
        // No socket: libpq reports the lost connection on its next call.
        guard descriptor.fd >= 0 else { return events }
        while true {
            let now = monotonicNanoseconds()
            guard now < deadline else { throw closeUnanswered() }
            let milliseconds = Int32(clamping: (deadline - now + 999_999) / 1_000_000)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return descriptor.revents }
            if ready < 0, errno != EINTR { return events }
        }
    }

    /// The server did not answer within the deadline: shuts the socket down (the server sees
    /// the connection end, and rolls back its transaction), so that the pool drops the
    /// connection, and returns the error this and every later command gets.
    private func closeUnanswered() -> ActiveRecordError {
        let timeout = statementTimeout ?? .zero
        return shutDown(with: ActiveRecordError(
            .timeout,
            "the PostgreSQL server at \(description) did not answer within \(Self.clientLimit(for: timeout).limitDescription) "
                + "(the statement timeout of \(timeout.limitDescription) and a grace for the answer): the connection was "
                + "closed, so the server rolls back any transaction on it, and the database opens another for the next work. "
                + "The server may be stopped, overloaded or cut off"))
    }

    /// Shuts the socket down (the server sees the connection end, and rolls back its
    /// transaction), so that the pool drops the connection, and returns `error`, which this
    /// and every later command gets.
    func shutDown(with error: ActiveRecordError) -> ActiveRecordError {
        shutdown(PQsocket(handle), Int32(SHUT_RDWR))
        closedError = error
        isClosed = true
        needsPreparation = true
        return error
    }

    /// How long the client waits for an answer under a statement timeout: the limit, which
    /// the server enforces itself, plus 1 s and 10% for its answer to arrive.
    static func clientLimit(for timeout: Duration) -> Duration {
        timeout + .seconds(1) + timeout / 10
    }

    /// Throws the error that closed the connection, if one did.
    func throwIfClosed() throws {
        if let closedError { throw closedError }
    }

    /// Before a command: fails on a closed connection; sets the server's statement timeout
    /// when the wanted one differs (or may, after a transaction that set it ended).
    private func prepareCommand() throws {
        try throwIfClosed()
        let status = PQtransactionStatus(handle)
        if setInTransaction, status == PQTRANS_IDLE {
            // Committed or rolled back: the setting kept or undone, unknown here.
            setInTransaction = false
            serverMilliseconds = nil
        }
        if serverMilliseconds != wantedMilliseconds, status != PQTRANS_INERROR {
            let sql = wantedMilliseconds == 0 ? "RESET statement_timeout" : "SET statement_timeout = \(wantedMilliseconds)"
            let result = try self.result(ofSent: PQsendQuery(handle, sql))
            defer { PQclear(result) }
            guard result.map(PQresultStatus) == PGRES_COMMAND_OK else { throw postgreSQLError(result, self, sql: sql) }
            serverMilliseconds = wantedMilliseconds
            if status == PQTRANS_INTRANS { setInTransaction = true }
        }
        needsPreparation = setInTransaction || serverMilliseconds != wantedMilliseconds
    }

    // MARK: EngineConnection

    func prepare(_ sql: String, _ use: StatementUse) throws -> any EngineStatement {
        try PostgreSQLStatement(sql: sql, use: use, connection: self)
    }

    var changedRowCount: Int { lastChanged }

    var isInFailedTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INERROR }

    var hasOpenTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    var isUsable: Bool { !isClosed && !isRetired && PQstatus(handle) == CONNECTION_OK }

    /// Whether the connection was found of no use any more (see ``retire()``).
    private var isRetired = false

    /// Takes the connection out of use: the pool closes it when it comes back, and opens
    /// another (to the primary, which a multi-host connection string finds again).
    func retire() { isRetired = true }

    /// Whether the server is a hot standby (in recovery), as it last reported it: PostgreSQL
    /// 14 and later report `in_hot_standby` to the client, at connect and when it changes (a
    /// promotion); `false` for an older server, which does not.
    var isOnStandby: Bool {
        guard let value = PQparameterStatus(handle, "in_hot_standby") else { return false }
        return strcmp(value, "on") == 0
    }

    func setStatementTimeout(_ timeout: Duration?) {
        statementTimeout = timeout
        // PostgreSQL's `statement_timeout` is an `int` of milliseconds (about 24.8 days at most).
        wantedMilliseconds = timeout.map { min($0.limitMilliseconds, Int64(Int32.max)) } ?? 0
        clientLimitNanoseconds = wantedMilliseconds == 0
            ? 0 : UInt64(Self.clientLimit(for: .milliseconds(wantedMilliseconds)).limitMilliseconds) * 1_000_000
        if transactionPooling {
            needsPreparation = pooledNeedsPreparation
        } else if serverMilliseconds != wantedMilliseconds {
            needsPreparation = true
        }
    }

    /// Whether the server has not closed the connection: its socket is polled without waiting,
    /// and what arrived is read (a server that stopped or restarted has sent its goodbye, or
    /// closed the socket, which libpq then reports as a lost connection).
    func checkAlive() -> Bool {
        guard isUsable else { return false }
        // A few rounds: a stopping server's goodbye (an error message) is read first, and the
        // end of the stream, which marks the connection lost, only by the next read.
        for _ in 0..<4 {
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 0) > 0, PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else { break }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// How far the server's data goes: on a standby, the primary's WAL it has replayed
    /// (`pg_last_wal_replay_lsn()`); on a primary, where its WAL is inserted
    /// (`pg_current_wal_insert_lsn()`, past every commit made so far, acknowledged or not), as
    /// bytes from the start of the WAL (the same numbering on the primary and its standbys).
    func replicationPosition() throws -> UInt64? {
        let sql = "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END "
            + "- '0/0'::pg_lsn)::int8"
        let result = try exchange { PQsendQuery(handle, sql) }
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_TUPLES_OK else { throw postgreSQLError(result, self, sql: sql) }
        guard PQntuples(result) == 1, PQgetisnull(result, 0, 0) == 0, let text = PQgetvalue(result, 0, 0) else { return 0 }
        return UInt64(String(cString: text)) ?? 0
    }

    /// Sends the server a cancel request for the command this connection runs (`PQcancel`,
    /// which libpq allows from any thread: it opens a connection of its own to send it). The
    /// command fails with SQLSTATE 57014; a server that runs nothing for the connection ignores it.
    func interrupt() {
        guard let cancelRequest else { return }
        var reason = [CChar](repeating: 0, count: 256)
        _ = PQcancel(cancelRequest, &reason, Int32(reason.count))
    }

    func close() {
        backends?.remove(PQbackendPID(handle))
        if let cancelRequest { PQfreeCancel(cancelRequest) }
        PQfinish(handle)
    }
}

/// `CLOCK_MONOTONIC` now, in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// Calls `body` with `strings` as a NULL-terminated array of C strings.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer<CChar>($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
