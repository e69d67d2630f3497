import ARLibPQ
import Dispatch
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

// Commits made by other processes and other app instances, for observers: LISTEN/NOTIFY.
//
// Who sends: a statement-level trigger on each observed table (`AFTER INSERT OR UPDATE OR
// DELETE OR TRUNCATE … FOR EACH STATEMENT`) calls `pg_notify('activerecord_changes',
// '<schema>.<table>')`. The writer needs to know nothing (raw SQL, psql and other programs
// are heard too) and pays no round trip: the notification travels with its commit. The
// server delivers it only when the transaction commits (never for a rolled-back one), once
// per transaction and table (identical notifications of one transaction are folded). A table
// never observed has no trigger, so its writers pay nothing; once a table has been observed,
// its trigger stays (other app instances may be observing it): each write statement then
// queues a notification, and a committing transaction that queued any takes the server's
// notification lock briefly.
//
// Who listens: one connection per `Database`, not from the pool, on a thread of its own,
// started with the first observer and stopped with the last. It skips the notifications of
// the database's own backends (``BackendRegistry``): the library publishes its own commits
// itself, at once, so that each is delivered once. When its connection is lost, it
// reconnects (with backoff, each attempt bounded by `connect_timeout`) through the primary's
// connection string (a multi-host string with `target_session_attrs=read-write` finds the
// new primary after a failover), and then tells every observer once: what was committed
// while it was away was not heard.

/// The server processes of one database's own connections (``PostgreSQLConnection``s of its
/// pool), whose notifications the listener skips.
final class BackendRegistry: Sendable {
    private let pids = Lock<Set<Int32>>([])

    func insert(_ pid: Int32) { _ = pids.withLock { $0.insert(pid) } }
    func remove(_ pid: Int32) { _ = pids.withLock { $0.remove(pid) } }
    func contains(_ pid: Int32) -> Bool { pids.withLock { $0.contains(pid) } }
}

extension PostgreSQLEngine {
    /// A ``PostgreSQLListener`` on the primary (see the comment at the top of this file).
    func listenForCommits(
        _ heard: @escaping @Sendable (ExternalCommit) -> Void, warn: @escaping @Sendable (String) -> Void
    ) throws -> (any CommitListener)? {
        // An idle listener sends nothing, so keepalives alone notice a server that vanished:
        // tighter than the pool's (about 25 s instead of a minute), unless the environment sets them.
        let tighter = ["keepalives_idle": "10", "keepalives_interval": "5"]
        let values = zip(keywords, values).map { keyword, value in tighter[keyword] ?? value }
        return try PostgreSQLListener(
            ListenerSettings(
                keywords: keywords, values: values, readOnly: readOnly, description: description, mask: mask,
                backends: backends),
            heard: heard, warn: warn)
    }
}

/// What a listener connects with, and whose notifications it skips.
struct ListenerSettings: Sendable {
    let keywords: [String]
    let values: [String]
    let readOnly: Bool
    let description: String
    let mask: PasswordMask
    let backends: BackendRegistry
}

/// Listens on its own connection and thread for the commits of other processes (see the
/// comment at the top of this file). Releasing it stops it. Its thread is named `ar.listener`.
final class PostgreSQLListener: CommitListener {
    private let core: ListenerCore

    /// - Throws: `.engine` when its thread cannot be started.
    init(
        _ settings: ListenerSettings, heard: @escaping @Sendable (ExternalCommit) -> Void,
        warn: @escaping @Sendable (String) -> Void
    ) throws {
        let core = ListenerCore(settings, heard: heard, warn: warn)
        self.core = core
        try startThread(name: "ar.listener", for: "the PostgreSQL listener for commits made elsewhere") { core.run() }
    }

    func watch(_ tables: Set<String>, timeout: Duration) { core.watch(tables, timeout: timeout) }

    func stop() { core.stop() }

    deinit { core.stop() }
}

/// The listener's connection and loop, on its thread; what other threads ask of it goes
/// through ``shared`` and a wake-up pipe.
private final class ListenerCore: @unchecked Sendable {
    // @unchecked Sendable: `shared` is mutex-guarded and the pipe is written from any thread;
    // everything else is immutable, or touched only by `run` on the listener's thread.
    /// What other threads ask, and whether the listener is stopped.
    private struct Shared {
        var stopped = false
        /// Every table observed so far.
        var watched: Set<String> = []
        /// `watch` calls waiting for their tables to be heard.
        var waiting: [(tables: Set<String>, done: DispatchSemaphore)] = []
        /// A `watch` call stopped waiting before its tables were heard: its first fetch may have
        /// missed a commit.
        var missed = false
    }

    private let settings: ListenerSettings
    private let heard: @Sendable (ExternalCommit) -> Void
    private let warn: @Sendable (String) -> Void
    private let shared = Lock(Shared())
    /// A pipe whose read end wakes the listener's `poll` when another thread asks something.
    private let wakeRead: Int32
    private let wakeWrite: Int32

    // The listener's thread only.
    private var connection: OpaquePointer?
    /// `<current schema>.`: the prefix of the notifications for this database's tables.
    private var prefix = ""
    /// The tables whose trigger is there (on the server the connection reaches).
    private var installed: Set<String> = []
    /// Tables observed whose trigger could not be made yet (no such table yet, or a lock
    /// not granted in time): tried again every second.
    private var pending: Set<String> = []
    /// Tables whose trigger cannot be made (no privilege, read-only database): tried again
    /// after a reconnect only, said once.
    private var refused: Set<String> = []

    /// The channel of the library's notifications.
    static let channel = "activerecord_changes"
    /// The trigger each observed table gets, and the function it runs.
    static let trigger = "activerecord_observe"
    static let function = "activerecord_notify_change"

    init(
        _ settings: ListenerSettings, heard: @escaping @Sendable (ExternalCommit) -> Void,
        warn: @escaping @Sendable (String) -> Void
    ) {
        self.settings = settings
        self.heard = heard
        self.warn = warn
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    deinit {
        if let connection { PQfinish(connection) }
        close(wakeRead)
        close(wakeWrite)
    }

    // MARK: Other threads

    func watch(_ tables: Set<String>, timeout: Duration) {
        let done = DispatchSemaphore(value: 0)
        let asked = shared.withLock { shared -> Bool in
            guard !shared.stopped, !tables.isSubset(of: shared.watched) || !shared.waiting.isEmpty else { return false }
            shared.watched.formUnion(tables)
            shared.waiting.append((tables, done))
            return true
        }
        guard asked else { return }
        wake()
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard done.wait(timeout: .now() + .milliseconds(milliseconds)) == .timedOut else { return }
        shared.withLock { $0.missed = true }
        wake()
    }

    func stop() {
        shared.withLock { $0.stopped = true }
        wake()
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: The listener's thread

    private var isStopped: Bool { shared.withLock { $0.stopped } }

    /// Tells the observers, unless the listener was stopped (then never after `stop` returns:
    /// `stop` waits for the lock this holds).
    private func tell(_ change: ExternalCommit) {
        shared.withLock { shared in
            if !shared.stopped { heard(change) }
        }
    }

    func run() {
        var connectedBefore = false
        var backoff = 0.1
        var saidDown = false
        var nextRetry = ContinuousClock.now
        while !isStopped {
            guard connection != nil else {
                if let reason = connect() {
                    if !saidDown {
                        warn(
                            "observers do not hear other processes' commits for now: the listener cannot connect to "
                                + "PostgreSQL at \(settings.description) (\(reason)); it tries again, and observers fetch "
                                + "again once it is back")
                        saidDown = true
                    }
                    sleep(seconds: backoff)
                    backoff = min(backoff * 2, 5)
                    continue
                }
                backoff = 0.1
                saidDown = false
                installed = []
                pending = []
                refused = []
                install(shared.withLock { $0.watched })
                answerWaiting()
                // Commits made while it was not listening were not heard (and a `watch` that
                // timed out let its first fetch run before): every observer looks again.
                let missed = shared.withLock { shared in defer { shared.missed = false }; return shared.missed }
                if connectedBefore || missed { tell(.anyTable) }
                connectedBefore = true
                continue
            }
            let asked = shared.withLock { $0.waiting.reduce(into: Set<String>()) { $0.formUnion($1.tables) } }
            if !asked.isEmpty {
                install(asked.subtracting(installed).subtracting(refused).subtracting(pending))
                answerWaiting()
            }
            if shared.withLock({ shared in defer { shared.missed = false }; return shared.missed }) { tell(.anyTable) }
            deliver()
            guard let connection else { continue }
            var descriptors = [
                pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, pending.isEmpty ? -1 : 1000)
            if ready > 0, descriptors[1].revents != 0 { drainWakeUps() }
            if ready > 0, descriptors[0].revents != 0, PQconsumeInput(connection) == 0 || PQstatus(connection) != CONNECTION_OK {
                lose()
                warn(
                    "the observers' listener lost its connection to PostgreSQL at \(settings.description): it reconnects, "
                        + "and observers fetch again once it is back (commits made meanwhile are not heard)")
                // A server that just went away is restarting or failing over: an attempt at once
                // would mostly fail.
                sleep(seconds: 0.1)
                continue
            }
            if !pending.isEmpty, ContinuousClock.now >= nextRetry {
                retryPending()
                nextRetry = ContinuousClock.now + .seconds(1)
            }
        }
        if let connection { PQfinish(connection) }
        connection = nil
    }

    /// Connects, listens, and reads the current schema.
    /// - Returns: why it could not (`nil`: connected).
    private func connect() -> String? {
        let handle = withCStrings(settings.keywords) { keywords in
            withCStrings(settings.values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let handle else { return "out of memory" }
        guard PQstatus(handle) == CONNECTION_OK else {
            let reason = settings.mask.mask(String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines)
            PQfinish(handle)
            return reason
        }
        ar_pg_silence_notices(handle)
        connection = handle
        // Bounded waits (a table another transaction holds; a server that stalls); the
        // listener named in pg_stat_activity after the program.
        var setup = "SET lock_timeout = 2000; SET statement_timeout = 10000; "
            + "SELECT set_config('application_name', left(current_setting('application_name'), 54) || ' listener', false); "
            + "LISTEN \(Self.channel)"
        if settings.readOnly { setup = "SET default_transaction_read_only = on; " + setup }
        if let error = execute(setup) {
            lose()
            return error.message
        }
        guard let schema = query("SELECT current_schema()", []).first ?? nil else {
            lose()
            return "its search_path names no schema that exists"
        }
        prefix = schema + "."
        return nil
    }

    /// The connection was lost (or refused what it needed at connect): closes it; the loop
    /// reconnects.
    private func lose() {
        if let connection { PQfinish(connection) }
        connection = nil
    }

    /// Signals every waiting `watch` whose tables are all installed, refused or pending (no
    /// table yet: its observers fetch again once it has its trigger).
    private func answerWaiting() {
        shared.withLock { shared in
            for (_, done) in shared.waiting { done.signal() }
            shared.waiting.removeAll()
        }
    }

    /// Tells the observers of the tables other processes' commits changed, from the
    /// notifications libpq has read.
    private func deliver() {
        guard let connection else { return }
        var tables: Set<String> = []
        while let notification = PQnotifies(connection) {
            defer { PQfreemem(notification) }
            guard !settings.backends.contains(notification.pointee.be_pid), let extra = notification.pointee.extra else {
                continue
            }
            let payload = String(cString: extra)
            if payload.hasPrefix(prefix) { tables.insert(String(payload.dropFirst(prefix.count))) }
        }
        if !tables.isEmpty { tell(.tables(tables)) }
    }

    // MARK: Triggers

    /// Makes sure each of `tables` has the trigger (see the comment at the top of this file).
    private func install(_ tables: Set<String>) {
        for table in tables.sorted() {
            guard connection != nil else { return }
            switch installTrigger(table) {
            case .installed: installed.insert(table)
            case .later: pending.insert(table)
            case .refused(let reason):
                refused.insert(table)
                warn(
                    "observers of \(table) do not hear other processes' commits to it: its notification trigger "
                        + "cannot be made (\(reason)). Make it as the table's owner, or grant TRIGGER on the table and "
                        + "CREATE on its schema to the database's role")
            }
        }
    }

    /// Tries the pending tables again; tells the observers of each that gets its trigger
    /// (commits made before it were not heard).
    private func retryPending() {
        let tables = pending
        pending = []
        install(tables)
        let now = tables.intersection(installed)
        if !now.isEmpty { tell(.tables(now)) }
    }

    private enum Installation {
        case installed
        /// No such table yet, or its lock was not granted in time.
        case later
        case refused(String)
    }

    /// Installs `table`'s trigger (and the function) when it lacks it, under the schema lock
    /// that migrations take, so that two processes do not make it at once.
    private func installTrigger(_ table: String) -> Installation {
        let state = query(
            """
            SELECT c.oid IS NOT NULL,
                   EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname = $2),
                   EXISTS (SELECT 1 FROM pg_proc p WHERE p.proname = $3 AND p.pronamespace = n.oid)
            FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = $1 AND c.relkind IN ('r', 'p')
            WHERE n.nspname = current_schema()
            """, [table, Self.trigger, Self.function])
        guard state.count == 3 else { return connection == nil ? .later : .refused("its schema cannot be read") }
        guard state[0] == "t" else { return .later }
        if state[1] == "t" { return .installed }
        let schema = String(prefix.dropLast())
        let function = "\(schema.quotedIdentifier).\(Self.function)"
        var sql = "SELECT pg_advisory_xact_lock(\(PostgreSQLDialect.schemaLockKey)); "
        if state[2] != "t" {
            sql += """
                CREATE OR REPLACE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_notify('\(Self.channel)', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME); RETURN NULL; END $$; 
                """
        }
        sql += "CREATE OR REPLACE TRIGGER \(Self.trigger) AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "
            + "\(schema.quotedIdentifier).\(table.quotedIdentifier) FOR EACH STATEMENT EXECUTE FUNCTION \(function)()"
        guard let error = execute(sql) else { return .installed }
        // Not granted within lock_timeout (55P03), or a table dropped meanwhile (42P01): later.
        if error.state == "55P03" || error.state == "42P01" || connection == nil { return .later }
        return .refused(error.message)
    }

    // MARK: Statements (blocking: the listener's thread has nothing else to do meanwhile)

    /// Runs `sql` (statements without parameters, as one transaction).
    /// - Returns: the error, `nil` when it ran.
    private func execute(_ sql: String) -> (state: String?, message: String)? {
        guard let connection else { return (nil, "no connection") }
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        return failure(result, accepting: PGRES_COMMAND_OK, PGRES_TUPLES_OK)
    }

    /// The first row of `sql` with `parameters` bound, as text (`nil` for NULL); empty when it
    /// failed or returned no row.
    private func query(_ sql: String, _ parameters: [String]) -> [String?] {
        guard let connection else { return [] }
        let result = withCStrings(parameters) { values in
            PQexecParams(connection, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        defer { PQclear(result) }
        guard failure(result, accepting: PGRES_TUPLES_OK) == nil, let result, PQntuples(result) > 0 else { return [] }
        return (0..<PQnfields(result)).map { column in
            PQgetisnull(result, 0, column) == 1 ? nil : String(cString: PQgetvalue(result, 0, column))
        }
    }

    /// The error of `result` unless its status is one of `accepted`; a lost connection is closed.
    private func failure(_ result: OpaquePointer?, accepting accepted: ExecStatusType...) -> (state: String?, message: String)? {
        if let result, accepted.contains(PQresultStatus(result)) { return nil }
        let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
        let message = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "M"))) }.map { String(cString: $0) }
            ?? connection.map { settings.mask.mask(String(cString: PQerrorMessage($0)).trimmingTrailingNewlines) }
            ?? "no connection"
        if let connection, PQstatus(connection) != CONNECTION_OK { lose() }
        return (state, message)
    }

    // MARK: Waiting

    /// Sleeps up to `seconds`, or until another thread asks something (a stop).
    private func sleep(seconds: Double) {
        var descriptor = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, Int32(seconds * 1000)) > 0 { drainWakeUps() }
    }

    private func drainWakeUps() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &bytes, bytes.count) > 0 {}
    }
}
