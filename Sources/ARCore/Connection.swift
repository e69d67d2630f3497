#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// One connection to the database, whatever the engine: its statement cache and the state
/// of the transaction running on it (depth, what to undo in memory on rollback, tables
/// prepared inside it, the records a destroy cascade is destroying).
///
/// A connection is confined: ``Database`` hands it to one thread at a time.
@_spi(Engines) public final class Connection {
    /// The engine's connection.
    private let engine: any EngineConnection
    /// The engine's connection, for its own dialect's use (settings of its own).
    package var engineConnection: any EngineConnection { engine }
    /// The engine's SQL dialect.
    package let dialect: any SQLDialect
    // Unchecked exclusivity on the state below: a connection is confined (see ``Database``),
    // none of these accesses overlaps another, and they are read on every statement (a
    // dynamic check on each access; see Benchmarks/README.md, Hot-path notes).
    /// On a pool, the holding thread's holds of the connection (``ConnectionPool/hold()``).
    @exclusivity(unchecked) var poolHold = PoolHold()
    /// The prepared statements, by SQL text and by key.
    @exclusivity(unchecked) var statements = StatementCache()
    /// The transaction running on the connection (depth, isolation, what to undo).
    @exclusivity(unchecked) package var transaction = TransactionState()
    /// The tables written, for observers: by transaction level, and committed but not yet published.
    @exclusivity(unchecked) package var changes = ChangeTracker()
    // The settings below are read on every statement. They change only where no statement
    // runs on the connection: the writer's under its lock, a reader's or pooled connection's
    // before its next use.
    /// Called with the SQL text of every statement run, before it runs.
    @exclusivity(unchecked) package var tracer: (@Sendable (String) -> Void)?
    /// The database's logger when it logs SQL (`.trace`), else `nil`.
    @exclusivity(unchecked) package var sqlLogger: Logger? {
        didSet { runsAside = sqlLogger != nil || instruments != nil }
    }
    /// What the statements report to metrics and tracing (``DatabaseInstrumentation``), `nil`
    /// when nothing is bootstrapped.
    @exclusivity(unchecked) package var instruments: Instruments? {
        didSet { runsAside = sqlLogger != nil || instruments != nil }
    }
    /// Whether statements run through ``runAside(_:_:_:)``, which logs and instruments them: the
    /// one flag the hot path tests for both.
    @exclusivity(unchecked) private var runsAside = false
    /// The database's logger when it logs connection events (`.debug`), else `nil`.
    @exclusivity(unchecked) package var eventLogger: Logger?
    /// Whether ``sqlLogger``'s lines carry the bound values.
    @exclusivity(unchecked) package var logsBoundValues = false
    /// Whether step errors carry the SQL with its bound values written in.
    @exclusivity(unchecked) package var includesBoundValuesInErrors = false
    /// How many of its database's settings (tracer, error verbosity) this connection has applied.
    @exclusivity(unchecked) package var appliedSettings = 0
    /// The tables automatic migration is migrating on this thread's call stack, so that a
    /// cycle of parents (A belongs to B, B to A) is migrated once.
    package var migrating: Set<UInt64> = []
    /// The records a destroy cascade is destroying, so that each is destroyed once.
    package var destroyingRecords: Set<DestroyKey> = []
    /// The database's limit for every statement (``Database/statementTimeout``).
    @exclusivity(unchecked) package var statementTimeout: Duration? {
        didSet { updateChecks() }
    }
    /// The async call running on the connection (set by the executor's worker while it runs
    /// the call): its statements stop once the call is cancelled or over its deadline.
    @exclusivity(unchecked) var runningJob: ExecutorJob? {
        didSet { updateChecks() }
    }
    /// The database's per-call limits (``Database/withStatementTimeout(_:_:)``).
    @exclusivity(unchecked) package var timeoutScopes: StatementTimeoutScopes? {
        didSet { unretainedTimeoutScopes = timeoutScopes.map(Unretained.init) }
    }
    /// ``timeoutScopes``, read per statement without a retain and release (it holds them).
    @exclusivity(unchecked) private var unretainedTimeoutScopes: Unretained<StatementTimeoutScopes>?
    /// The limit set on the engine for the statement running (`nil`: none).
    @exclusivity(unchecked) package private(set) var activeTimeout: Duration?
    /// Whether a statement must look for its limit or its call's end: the database has a
    /// limit, the engine still holds one (a per-call limit, to be lifted), or an async call
    /// runs on the connection. Per-call limits: see ``startStatement()``.
    @exclusivity(unchecked) private var checksTimeout = false

    private func updateChecks() {
        checksTimeout = statementTimeout != nil || activeTimeout != nil || runningJob != nil
    }

    /// Wraps an engine's connection (which it closes when released).
    package init(_ connection: any EngineConnection, dialect: any SQLDialect) {
        engine = connection
        self.dialect = dialect
    }

    deinit {
        statements.removeAll()
        engine.close()
        // Records destroyed in a transaction that never ended (the connection dropped with
        // it): given up, as the log holds them retained by hand.
        transaction.forgetDestroyed()
    }

    // MARK: Statement timeouts

    /// Before a statement runs (or a cursor steps): sets its limit on the engine when one
    /// applies, or lifts the one set before; in an async call that was cancelled or ran out
    /// of time, throws instead (`CancellationError`, `.timeout`). Without any limit or call, a
    /// flag and one relaxed atomic load (no per-call block is open on any thread), no
    /// thread-local look-up.
    @inline(__always)
    package func startStatement() throws {
        if checksTimeout || unretainedTimeoutScopes?.with({ $0.anyOpen }) == true { try applyTimeout() }
    }

    /// The limit of the calling thread's innermost per-call block, else the database's.
    @inline(never)
    private func applyTimeout() throws {
        if let runningJob, runningJob.isStopped { throw runningJob.stopError() }
        let timeout = unretainedTimeoutScopes?.with { $0.innermost() } ?? statementTimeout
        guard timeout != nil || activeTimeout != nil else { return }
        activeTimeout = timeout
        engine.setStatementTimeout(timeout)
        updateChecks()
    }

    /// Stops the statement running on the connection (see ``EngineConnection/interrupt()``):
    /// from another thread.
    func interrupt() { engine.interrupt() }

    /// Notes that a write changed `table` (``TableChanges/everyTable`` for SQL the library
    /// did not write): observers of it hear of it once the change is committed.
    @inline(__always)
    package func noteChange(_ table: String) { changes.note(table, inTransaction: transaction.depth > 0) }

    /// ``noteChange(_:)-(String)`` for one of the library's tables: a loop of writes to it
    /// compares a number, without reading (and retaining) its name.
    @inline(__always)
    package func noteChange(_ table: TableOperations) { changes.note(table, inTransaction: transaction.depth > 0) }

    /// Forgets the table noted last: the set changes go to changed (a transaction level
    /// began or ended, changes were published).
    package func forgetNotedTable() { changes.forgetNotedTable() }

    /// Notes that SQL the library did not write ran: it may have changed any table.
    package func noteChangeOfAnyTable() { changes.noteAnyTable(inTransaction: transaction.depth > 0) }

    /// Keeps `record` for its `afterCommit` or `afterRollback` callback, which runs when the
    /// transaction ends (nothing outside one).
    package func awaitOutcome(_ record: Model) { transaction.awaitOutcome(record) }

    /// Registers `entry` to undo if the current transaction level rolls back; outside a
    /// transaction there is nothing to undo and the entry is dropped.
    @inline(__always)
    package func onRollback(_ entry: consuming UndoEntry) { transaction.onRollback(entry) }

    /// Registers `action` to run if the current transaction level rolls back.
    package func onRollback(_ action: @escaping () -> Void) { transaction.onRollback(.action(action)) }

    /// Registers that `record` was destroyed: if the current transaction level rolls back,
    /// it is not destroyed any more. Outside a transaction there is nothing to undo.
    @inline(__always)
    package func undestroyOnRollback(_ record: any RecordStorage) { transaction.undestroyOnRollback(record) }

    // MARK: Statements

    /// The cached prepared statement for `sql`, preparing it on first use.
    package func statement(_ sql: String) throws -> Statement {
        if let statement = statements.byText[sql] { return statement }
        let statement = try prepare(sql, .cached)
        statements.byText[sql] = statement
        return statement
    }

    /// How many statements this connection prepared, for tests that check a statement is
    /// prepared once and reused.
    package private(set) var preparedCount = 0

    /// Prepares exactly one statement; SQL with a second statement is refused.
    package func prepare(_ sql: String, _ use: StatementUse = .once) throws -> Statement {
        preparedCount &+= 1
        do {
            return Statement(engine: try engine.prepare(sql, use), sql: sql, connection: self)
        } catch {
            // A statement that fails to prepare has its failed span too.
            instruments?.recordFailure(sql, error)
            throw error
        }
    }

    /// Drops a statement from the cache after a failed step.
    func evict(_ statement: Statement) { statements.evict(statement) }

    /// Runs `sql` with `arguments` bound, then `body` with the statement
    /// (not yet stepped), and always resets the statement afterwards.
    package func withStatement<R>(
        _ sql: String, _ arguments: [DatabaseValue] = [], _ body: (Statement) throws -> R
    ) throws -> R {
        try run(statement(sql), arguments, body)
    }

    /// ``withStatement(_:_:_:)`` for SQL the library generates, cached by
    /// `key`: the per-row paths hash a small key, never the SQL text, and
    /// make the text only the first time. Never inlined: in a caller, its closures would
    /// capture with retains and releases (see Benchmarks/README.md, Hot-path notes).
    @inline(never)
    package func withStatement<R>(
        _ key: StatementKey, sql: () -> String, _ arguments: [DatabaseValue], _ body: (Statement) throws -> R
    ) throws -> R {
        try keyedStatement(key, sql: sql).with { try run($0, arguments, body) }
    }

    /// ``withStatement(_:sql:_:_:)`` with no arguments (a default argument of a function that
    /// is never inlined is computed by a call and released; see Benchmarks/README.md,
    /// Hot-path notes).
    @inline(__always)
    package func withStatement<R>(_ key: StatementKey, sql: () -> String, _ body: (Statement) throws -> R) throws -> R {
        try withStatement(key, sql: sql, [], body)
    }

    /// The statement cached under `key`: the one used last when it is that one, else the
    /// cached one, else a new one. Unretained: the caches hold it, and a run of a statement
    /// that leaves them meanwhile keeps it in the cache's retired ones.
    @inline(__always)
    package func keyedStatement(_ key: StatementKey, sql: () -> String) throws -> Unretained<Statement> {
        if let lastKeyed = statements.lastKeyed {
            let code = key.code
            if lastKeyed.with({ code != 0 ? $0.cacheCode == code : $0.cacheKey == key }) { return lastKeyed }
        }
        return try cachedStatement(key, sql: sql)
    }

    /// ``keyedStatement(_:sql:)`` when it is not the one used last.
    @inline(never)
    private func cachedStatement(_ key: StatementKey, sql: () -> String) throws -> Unretained<Statement> {
        let isQuery = if case .query = key.kind { true } else { false }
        let statement = try statements.cached(key, isQuery: isQuery) ?? cacheNewStatement(key, sql: sql, isQuery: isQuery)
        let unretained = Unretained(statement)
        statements.lastKeyed = unretained
        return unretained
    }

    /// Prepares `sql` and caches it under `key`, as the statement used last.
    @inline(never)
    private func cacheNewStatement(_ key: StatementKey, sql: () -> String, isQuery: Bool) throws -> Statement {
        let statement = try prepare(sql(), .cached)
        statement.cacheKey = key
        statement.rebindsEveryParameter = true
        statements.insert(statement, under: key, isQuery: isQuery)
        return statement
    }

    /// Runs `body` with `statement` (a ``keyedStatement(_:sql:)``, not yet stepped) with `value`
    /// bound as its one parameter, and resets it afterwards: ``withStatement(_:sql:_:_:)`` for a
    /// find by id, inlined into its caller (no call through a closure, no array of arguments).
    @inline(__always)
    package func run<R>(_ statement: Unretained<Statement>, binding value: Int64, _ body: (Statement) throws -> R) throws -> R {
        try statement.with { statement in
            try run(statement, []) { statement in
                try statement.bind(.integer(value), at: 1)
                return try body(statement)
            }
        }
    }

    /// Runs `statement` (a ``keyedStatement(_:sql:)``), whose one parameter is an integer and
    /// which returns no rows (a `DELETE` by id), with `value` bound, and returns how many rows
    /// it changed: ``withStatement(_:sql:_:_:)`` without a closure to call.
    @inline(__always)
    package func execute(_ statement: Unretained<Statement>, binding value: Int64) throws -> Int {
        let changed = try statement.with { statement -> Int? in
            // ``run(_:_:_:)``, ended on each path rather than in a `defer` (compiled out of
            // line and called, on every delete; `run` keeps its `defer`, with which the
            // compiler makes faster inserts and updates; see Benchmarks/README.md, Hot-path notes).
            if statement.isInUse || runsAside {
                return try runAside(statement, []) { statement in
                    try statement.bind(.integer(value), at: 1)
                    while try statement.step() {}
                    return nil
                }
            }
            try startStatement()
            statement.isInUse = true
            let changed: Int?
            do {
                if let tracer { tracer(statement.sql) }
                // Run and reset, its parameter kept, in one call to the engine.
                changed = try statement.execute(binding: value)
            } catch {
                endRun(statement)
                throw error
            }
            if statement.rebindsEveryParameter {
                statement.isInUse = false
                if statements.hasRetired { statements.releaseRetired() }
            } else {
                endRun(statement)
            }
            return changed
        }
        return changed ?? changedRowCount
    }

    /// Ends a run of `statement` (see ``Statement/endUse()``), and lets go of the retired
    /// statements that have ended.
    @inline(__always)
    private func endRun(_ statement: Statement) {
        statement.endUse()
        if statements.hasRetired { statements.releaseRetired() }
    }

    @inline(__always)
    private func run<R>(_ statement: Statement, _ arguments: [DatabaseValue], _ body: (Statement) throws -> R) throws -> R {
        // Re-entered while the cached statement is still stepping (a nested query with the
        // same SQL): a private copy. Logged or instrumented SQL: its own path. Both rare, out
        // of line.
        if statement.isInUse || runsAside { return try runAside(statement, arguments, body) }
        statement.isInUse = true
        defer { endRun(statement) }
        try startStatement()
        if !arguments.isEmpty { try statement.bind(arguments) }
        if let tracer { tracer(statement.sql) }
        return try body(statement)
    }

    /// ``run(_:_:_:)`` for a statement already in use (on a private copy), with SQL logged, or
    /// instrumented (timed and traced: ``Instruments``).
    @inline(never)
    private func runAside<R>(_ cached: Statement, _ arguments: [DatabaseValue], _ body: (Statement) throws -> R) throws -> R {
        let statement = cached.isInUse ? try prepare(cached.sql) : cached
        guard let instruments else { return try runLogged(statement, arguments, body) }
        return try instruments.measure(statement) { try runLogged(statement, arguments, body) }
    }

    /// ``runAside(_:_:_:)``'s run, logged when a SQL logger is set.
    private func runLogged<R>(_ statement: Statement, _ arguments: [DatabaseValue], _ body: (Statement) throws -> R) throws -> R {
        statement.isInUse = true
        defer { endRun(statement) }
        try startStatement()
        try statement.bind(arguments)
        tracer?(statement.sql)
        // With its values, a statement is logged once it has run: the library's own
        // statements bind their values inside `body`.
        if let sqlLogger, !logsBoundValues { log(statement, to: sqlLogger) }
        defer { if logsBoundValues, let sqlLogger { log(statement, to: sqlLogger) } }
        return try body(statement)
    }

    /// Logs a bound statement's SQL at `.trace`, with its values only when asked.
    @inline(never)
    package func log(_ statement: Statement, to logger: Logger) {
        let values: Logger.Metadata? = logsBoundValues ? ["expandedSQL": "\(statement.expandedSQL() ?? statement.sql)"] : nil
        logger.trace("\(statement.sql)", metadata: values)
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
            while try statement.step() {
                rows.append(try (0..<Int32(statement.row.count)).map { try statement.value($0) })
            }
            return rows
        }
    }

    /// How many rows the last `INSERT`, `UPDATE` or `DELETE` changed.
    package var changedRowCount: Int {
        engine.changedRowCount
    }

    /// Whether a failed statement aborted the current transaction (it can only roll back): on
    /// PostgreSQL after any failure; on either engine when the engine ended it by itself and
    /// the levels above the one that failed go on in a transaction that only rolls back
    /// (``TransactionState/endedByEngine``).
    package var isInFailedTransaction: Bool {
        transaction.endedByEngine || engine.isInFailedTransaction
    }

    /// Whether the connection still works, as far as can be told without a round trip (see
    /// ``EngineConnection/checkAlive()``).
    func checkAlive() -> Bool {
        engine.checkAlive()
    }

    /// How far the server's data goes (see ``EngineConnection/replicationPosition()``).
    func replicationPosition() throws -> UInt64? {
        try engine.replicationPosition()
    }

    /// Whether the engine has a transaction open (see ``EngineConnection/hasOpenTransaction``).
    package var hasOpenTransaction: Bool {
        engine.hasOpenTransaction
    }

    /// How deep the current transaction is (``TransactionState/depth``), for an engine's dialect.
    @_spi(Engines) public var transactionDepth: Int { transaction.depth }

    /// Whether the connection can still be used (a server connection may have been lost).
    package var isUsable: Bool {
        engine.isUsable
    }

    /// Forgets every cached statement (finalizing them), for a pooled connection that goes
    /// back to its pool after a failure.
    package func clearStatementCache() { statements.removeAll() }
}

@available(*, unavailable, message: "A connection is confined; use Database, which serializes access")
extension Connection: Sendable {}
