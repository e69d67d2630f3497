import Dispatch

/// Async calls: database work on the database's own threads (see ``DatabaseExecutor``),
/// awaited without blocking a thread of Swift concurrency's cooperative pool.
extension Database {
    /// Runs `body` in a transaction of this database, on one of the database's own threads,
    /// and returns its result: the async way to write.
    ///
    /// ```swift
    /// let author = try await db.write {
    ///     let author = try Author.create(["name": "Ada", "email": "ada@example.com"])
    ///     try Post.create(["authorId": author.id!, "title": "Notes"])
    ///     return author                      // comes back usable: `sending`
    /// }
    /// ```
    ///
    /// - `body` is synchronous: it holds the writer (SQLite) or a pooled connection
    ///   (PostgreSQL) while it runs, so it should do database work only; awaiting anything
    ///   else inside a transaction would hold the connection meanwhile.
    /// - Calls are served in the order they came, as connections free up; a waiting caller
    ///   is suspended, no thread blocked. One waiting longer than ``connectionWaitTimeout``
    ///   fails with `.busy`, having run nothing.
    /// - Cancelling the calling task interrupts the statement running (the engine's interrupt:
    ///   SQLite's own, PostgreSQL's cancel request) and stops the next one: the call
    ///   throws `CancellationError` and the transaction rolls back. A task cancelled while its
    ///   call waits leaves the queue at once. Work that finished and committed before the
    ///   cancellation was seen returns normally.
    /// - `timeout` limits the whole call, waiting and running: past it, it stops the same
    ///   way and throws `.timeout`.
    /// - Inside `body` this database is ``current``.
    ///
    /// - Parameters:
    ///   - isolation: the transaction's isolation level (`nil`: the engine's default); see
    ///     ``TransactionIsolation``.
    ///   - timeout: the limit of the whole call (`nil`: none but ``statementTimeout`` and
    ///     ``connectionWaitTimeout``).
    ///   - body: the work, run in the transaction. It may capture records of the caller (they
    ///     are sent to the database's thread and back).
    /// - Returns: what `body` returns, handed back to the caller (`sending`: records too).
    /// - Throws: what `body` throws, after rolling back (``Rollback`` too: there is no
    ///   result); `CancellationError`; `.timeout`; `.busy`.
    @discardableResult
    public func write<R>(
        isolation: TransactionIsolation? = nil, timeout: Duration? = nil, _ body: sending @escaping () throws -> sending R
    ) async throws -> sending R {
        try await perform(.writes, .transaction(isolation), timeout: timeout, body)
    }

    /// Runs `body` on one of the database's own threads with all its reads on one connection,
    /// in one read transaction (``read(_:)`` in async form), and returns its result: the
    /// async way to read.
    ///
    /// ```swift
    /// let (authors, total) = try await db.read {
    ///     (try Author.query().order(by: "name").limit(20).fetch(), try Author.count())
    /// }
    /// ```
    ///
    /// On SQLite it runs on a reader thread (as many as the database has reader
    /// connections), beside the writer; on PostgreSQL on a pooled connection in a
    /// `REPEATABLE READ READ ONLY` transaction. Waiting, cancellation and `timeout` as for
    /// `write(isolation:timeout:_:)`.
    /// - Returns: what `body` returns, handed back to the caller (`sending`).
    /// - Throws: what `body` throws; `CancellationError`; `.timeout`; `.busy`.
    @discardableResult
    public func read<R>(timeout: Duration? = nil, _ body: sending @escaping () throws -> sending R) async throws -> sending R {
        try await perform(.reads, .snapshot, timeout: timeout, body)
    }

    /// ``write(isolation:timeout:_:)`` on the ``current`` database.
    @discardableResult
    public static func write<R>(
        isolation: TransactionIsolation? = nil, timeout: Duration? = nil, _ body: sending @escaping () throws -> sending R
    ) async throws -> sending R {
        try await current.write(isolation: isolation, timeout: timeout, body)
    }

    /// ``read(timeout:_:)`` on the ``current`` database.
    @discardableResult
    public static func read<R>(timeout: Duration? = nil, _ body: sending @escaping () throws -> sending R) async throws -> sending R {
        try await current.read(timeout: timeout, body)
    }

    /// How long an async call waits for a connection (a thread of the database) before it
    /// fails with `.busy`, having run nothing; `nil`: as long as it takes. 30 seconds by
    /// default on SQLite; on PostgreSQL the pool's `connectionWait`.
    public var connectionWaitTimeout: Duration? {
        get { connectionWaitStorage.withLock { $0 } }
        set {
            connectionWaitStorage.withLock { wait in
                wait = newValue
                connectionWaitNanoseconds.store(newValue?.clampedNanoseconds ?? .max, ordering: .relaxed)
            }
        }
    }

    /// How many threads the database's async calls run on at most (writers and readers), plus
    /// the watchdog that ends calls past their deadline: the bound on the threads the library
    /// adds to a process for one database.
    public var asyncThreadLimit: Int { executor.threadLimit }

    /// How many async calls of `kind` wait for a thread now (for tests and diagnostics).
    package func asyncWaitingCount(_ kind: DatabaseExecutor.LaneKind) -> Int { executor.lane(for: kind).waitingCount }

    // MARK: The executor

    /// What an async call's work is wrapped in, on its thread.
    package enum CallScope {
        /// A transaction (`write`).
        case transaction(TransactionIsolation?)
        /// A read transaction, its reads on one connection (`read`).
        case snapshot
        /// A write without a transaction of its own (a model's `save(on:)`: one statement,
        /// or the save's own savepoint).
        case writes
        /// Reads on one connection, without a transaction (a model's `find(_:on:)`).
        case reads

        var isSnapshot: Bool {
            if case .snapshot = self { true } else { false }
        }
    }

    /// The database's executor, made by the first async call.
    var executor: DatabaseExecutor {
        executorStorage.withLock { executor in
            if let executor { return executor }
            let made: DatabaseExecutor
            if let writer {
                made = DatabaseExecutor(writers: 1, readers: writer.readers?.maximum ?? 0)
            } else {
                made = DatabaseExecutor(writers: pool.unsafelyUnwrapped.maximum, readers: 0)
            }
            executor = made
            return made
        }
    }

    /// Runs `body` on a thread of the executor's lane for `kind`, wrapped in `scope`, and
    /// hands its result back (see ``write(isolation:timeout:_:)`` for waiting, cancellation and
    /// deadlines).
    ///
    /// The caller's task suspends until a thread of the lane has run the call, unless the call
    /// is over first: when a thread was free for it at once and the lane's last call was short,
    /// the caller looks for its result for up to ``callerLookNanoseconds`` before it suspends.
    /// Suspending and being resumed costs a wake-up of a thread of the cooperative pool, some
    /// microseconds, more than a short read; the look is bounded (a long call suspends its
    /// caller after it, as before), so no thread of the pool waits on database work longer
    /// than that.
    nonisolated(nonsending) package func perform<R>(
        _ kind: DatabaseExecutor.LaneKind, _ scope: CallScope, timeout: Duration?, _ body: sending @escaping () throws -> sending R
    ) async throws -> sending R {
        let job = ExecutorJob(
            limit: timeout, waitNanoseconds: connectionWaitNanoseconds.load(ordering: .relaxed), timed: instrumentation.isReporting)
        let lane = executor.lane(for: kind)
        nonisolated(unsafe) let body = body
        // The awaiting task's session, whose commits its reads must see on a replica.
        let session = replicas == nil ? 0 : ReplicaSet.session
        job.run = { job in
            do {
                let value = try session == 0
                    ? self.run(job, kind, scope, body) : ReplicaSet.adopting(session) { try self.run(job, kind, scope, body) }
                job.keep(value)
            } catch {
                job.error = error
            }
        }
        try await withTaskCancellationHandler {
            guard job.markQueued() else { throw job.stopError() }
            if lane.submit(job), lane.lastRunNanoseconds.load(ordering: .relaxed) <= Self.callerLookNanoseconds / 2,
               job.lookForHandOver(nanoseconds: Self.callerLookNanoseconds) {
                return
            }
            await job.awaitHandOver()
        } onCancel: {
            job.stop(.cancelled)
        }
        if let error = job.error { throw error }
        return job.takeResult(as: R.self)
    }

    /// How long an awaited call's caller looks for its result before it suspends (see
    /// ``perform(_:_:timeout:_:)``).
    static let callerLookNanoseconds: UInt64 = 15_000

    /// Runs `body` at once on the calling thread, on a reader connection that is idle now
    /// (SQLite), for an awaited read of one row by its primary key (``Model``'s
    /// `find(_:on:)`); `nil` when it cannot, and the call then goes to the executor:
    /// ``awaitedFinds`` is `.onExecutor`, no reader is idle, the database has no readers, `table`
    /// is not migrated yet (automatic migration takes the writer, which may wait), or the calling
    /// thread holds a writer. On PostgreSQL, see ``pooledReadingAtOnce(_:_:)``.
    ///
    /// Why on the caller's thread: handing a read of a few microseconds to another thread and
    /// back costs more than the read (issue 35, point 8: measured in Benchmarks/README.md). Why
    /// it is safe for Swift concurrency's cooperative pool: nothing here waits — an idle
    /// reader is taken or the call goes to the executor — and the work is one indexed look-up
    /// of one row, bounded like any synchronous find (and by ``statementTimeout`` when set).
    /// A task cancelled before the call throws `CancellationError` and runs nothing; once it
    /// runs, the read is over before a cancellation could interrupt it.
    package func readingAtOnce<R>(_ table: TableOperations, _ body: (Connection) throws -> R) throws -> R? {
        guard let unretainedReaders else { return try pooledReadingAtOnce(table, body) }
        guard awaitedFindGate.policy.load(ordering: .relaxed) != AwaitedFindGate.onExecutor else { return nil }
        if Task.isCancelled { throw CancellationError() }
        guard isPrepared(table) else { return nil }
        let routing = ThreadRouting.word.value
        guard routing < ThreadRouting.writerHeld else { return nil }
        return try unretainedReaders.with { readers in
            guard let reader = try readers.checkOutUnretained(routing: routing) else { return nil }
            defer { readers.checkIn(reader) }
            return try reader.with { try body($0.connection) }
        }
    }

    /// Whether automatic migration has nothing left to do for `table` (it would take the
    /// writer, or a connection, and may wait).
    @inline(__always)
    private func isPrepared(_ table: TableOperations) -> Bool {
        !automaticMigrations || lastPreparedTable.load(ordering: .acquiring) == table.serial
            || migratedTables.withLock({ $0.contains(table.serial) })
    }

    /// ``readingAtOnce(_:_:)`` on a pooled engine (PostgreSQL), as ``awaitedFinds`` says: on a
    /// connection idle in the pool now, taken without waiting and without opening one; `nil`
    /// otherwise (`.onExecutor`, none idle, the database has replicas, `table` not migrated
    /// yet; under `.automatic` also another find on a calling thread running, no round-trip
    /// estimate yet or one over its limit, a stall's back-off), and the call goes to the
    /// executor.
    ///
    /// The calling thread (a thread of the cooperative pool) is blocked for the find's round
    /// trip to the server: under `.automatic` one thread at a time, while the server answers
    /// quickly (``AwaitedFindGate``). A task cancelled before the call throws
    /// `CancellationError` and runs nothing; once the statement is sent it runs to its end
    /// (bounded by ``statementTimeout`` when set).
    @inline(never)
    private func pooledReadingAtOnce<R>(_ table: TableOperations, _ body: (Connection) throws -> R) throws -> R? {
        let gate = awaitedFindGate
        let policy = gate.policy.load(ordering: .relaxed)
        guard policy != AwaitedFindGate.onExecutor, replicas == nil, let pool else { return nil }
        if Task.isCancelled { throw CancellationError() }
        guard isPrepared(table) else { return nil }
        if policy == AwaitedFindGate.onCallingThread {
            guard let connection = pool.checkOutIdle() else { return nil }
            defer { pool.checkIn(connection) }
            return try body(connection)
        }
        guard let started = gate.admitInline() else { return nil }
        guard let connection = pool.checkOutIdle() else {
            gate.releaseSlot()
            return nil
        }
        defer {
            pool.checkIn(connection)
            gate.finishInline(startedAt: started)
        }
        return try body(connection)
    }

    /// Runs `body`, an awaited find on the database's thread, measuring its round trip for
    /// ``AwaitedFindPolicy/automatic`` on a pooled engine without replicas (two clock reads);
    /// anywhere else it just runs `body`.
    @inline(__always)
    package func measuringAwaitedFind<R>(_ body: () throws -> R) rethrows -> R {
        guard pool != nil, replicas == nil, awaitedFindGate.policy.load(ordering: .relaxed) == AwaitedFindGate.automatic else {
            return try body()
        }
        let started = monotonicNanoseconds()
        defer { awaitedFindGate.finishOnExecutor(startedAt: started) }
        return try body()
    }

    /// On the lane's thread: takes a connection for `kind`, runs `body` in `scope` with the
    /// job armed on it, gives the connection back.
    private func run<R>(_ job: ExecutorJob, _ kind: DatabaseExecutor.LaneKind, _ scope: CallScope, _ body: () throws -> R) throws -> R {
        // The time in the lane's queue, as the connection-wait metric (a pool's own check-out
        // adds its wait, if any, on PostgreSQL).
        if job.queuedAt != 0 { instrumentation.recordConnectionWait(since: job.queuedAt) }
        if let writer {
            if kind == .reads, !writer.callerHolds, let readers = writer.readers, let reader = try readers.checkOut() {
                defer { readers.checkIn(reader) }
                return try run(job, on: reader.connection, scope, body)
            }
            writer.acquire()
            defer { writer.release() }
            // Reads without a reader: on the writer, as a synchronous read would (no snapshot
            // needed: the writer is held for the whole call).
            let writerScope: CallScope = if case .snapshot = scope { .writes } else { scope }
            return try run(job, on: writer.connection, writerScope, body)
        }
        if kind == .reads, let replicas {
            // When the read fails for a replica's sake, it runs again on the next server: a
            // model's awaited read (which writes nothing), or a `read { }` block not started.
            var started = false
            return try readOnReplica(
                replicas,
                { connection in
                    try run(job, on: connection, scope) {
                        started = true
                        return try body()
                    }
                }, canRunAgain: { !job.isStopped && (!scope.isSnapshot || !started) },
                primary: { try runOnPrimary(job, scope, body) })
        }
        return try runOnPrimary(job, scope, body)
    }

    /// ``run(_:_:_:_:)`` on the primary's pool.
    private func runOnPrimary<R>(_ job: ExecutorJob, _ scope: CallScope, _ body: () throws -> R) throws -> R {
        let pool = pool.unsafelyUnwrapped
        if case .snapshot = scope {
            // A connection of the block's own, in its read-only transaction, not held by the
            // thread: a write inside the block (or automatic migration of a table it reads
            // first) takes another, as in a synchronous `read`. Other calls hold theirs, so
            // that a model's first read migrates its table on the same connection.
            let connection = try pool.checkOut()
            defer { pool.checkIn(connection) }
            return try run(job, on: connection, scope, body)
        }
        let connection = try pool.hold()
        defer { pool.release() }
        return try run(job, on: connection, scope, body)
    }

    /// Runs `body` on `connection` (which the thread holds) in `scope`, the job armed around
    /// it. The error of a job stopped meanwhile is the stop's (`CancellationError`, `.timeout`),
    /// whatever error the interrupted statement made.
    private func run<R>(_ job: ExecutorJob, on connection: Connection, _ scope: CallScope, _ body: () throws -> R) throws -> R {
        do {
            return try runScoped(job, on: connection, scope, body)
        } catch {
            if job.isStopped { throw job.stopError() }
            throw error
        }
    }

    private func runScoped<R>(_ job: ExecutorJob, on connection: Connection, _ scope: CallScope, _ body: () throws -> R) throws -> R {
        switch scope {
        case .transaction(let isolation):
            return try use {
                try withTransaction(isolation: isolation) {
                    let value = try job.armed(on: connection, body)
                    // Stopped after its last statement: rolled back rather than committed.
                    if job.isStopped { throw job.stopError() }
                    return value
                }
            }
        case .snapshot:
            return try reading(on: connection, body) { work in try job.armed(on: connection, work) }
        case .reads:
            return try pinning(to: connection) { try job.armed(on: connection) { try use(body) } }
        case .writes:
            return try job.armed(on: connection) { try use(body) }
        }
    }
}

/// A value handed from the database's thread to the awaiting caller, who alone uses it
/// from then on (what `sending` promises the caller).
package struct Transferred<Value>: @unchecked Sendable {
    package var value: Value
    package init(_ value: consuming Value) { self.value = value }
}
