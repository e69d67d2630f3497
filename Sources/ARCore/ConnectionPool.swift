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
import Synchronization

/// The connections of an engine with ``ConnectionSharing/pool(maximum:wait:)`` sharing:
/// opened on demand up to a maximum, each used by one thread at a time.
///
/// A thread *holds* a connection while it works: for one statement's worth of work, or for a
/// whole transaction. Holding is re-entrant per thread (a save inside the thread's
/// transaction uses the transaction's connection), and the connection goes back to the pool
/// when the outermost hold ends. A thread that finds every connection held waits for one.
final class ConnectionPool: Sendable {
    /// The calling thread's hold on this pool, if it has one: the connection it holds (whose
    /// ``Connection/poolHold`` counts the holds), found in the thread's own storage (its held
    /// connections, the last taken first), without a lock, on every statement; not retained
    /// (the thread's storage keeps it while it is held).
    @inline(__always)
    private func threadHold() -> Unmanaged<Connection>? {
        guard let raw = pthread_getspecific(holdKey) else { return nil }
        return hold(below: raw)
    }

    /// ``threadHold()`` from the thread's last hold, `raw` (the thread-specific slot's value).
    @inline(__always)
    private func hold(below raw: UnsafeMutableRawPointer) -> Unmanaged<Connection>? {
        let top = Unmanaged<Connection>.fromOpaque(raw)
        if top._withUnsafeGuaranteedRef({ $0.poolHold.pool == ObjectIdentifier(self) }) { return top }
        return heldBelow(top)
    }

    /// ``threadHold()`` when the thread's last hold is on another pool.
    @inline(never)
    private func heldBelow(_ top: Unmanaged<Connection>) -> Unmanaged<Connection>? {
        var hold = top._withUnsafeGuaranteedRef { $0.poolHold.below }
        while let candidate = hold {
            if candidate._withUnsafeGuaranteedRef({ $0.poolHold.pool == ObjectIdentifier(self) }) { return candidate }
            hold = candidate._withUnsafeGuaranteedRef { $0.poolHold.below }
        }
        return nil
    }

    /// A connection between threads: only through the pool's lock.
    private struct Idle: @unchecked Sendable {
        let connection: Connection
    }

    private struct State {
        var idle: [Idle] = []
        var opened = 0
        /// Settings to apply to every connection (tracer, error verbosity), in order.
        var settings: [@Sendable (Connection) -> Void] = []
    }

    private let engine: any DatabaseEngine
    /// What the pool's connections are opened for: writing (the primary), or a replica's reads.
    private let role: ConnectionRole
    /// The database's replicas, told how far the primary went after each hold ends outside a
    /// transaction (the primary's pool of a database with replicas; else `nil`).
    private let replicaSet: ReplicaSet?
    private let dialect: any SQLDialect
    let maximum: Int
    let wait: Duration
    private let state = ConditionLock(State())
    /// One idle connection kept outside the lock (its retained address; 0: none): the last one
    /// given back while no thread waited, so that a thread's next statement outside a
    /// transaction takes it with one atomic exchange, and gives it back with one
    /// compare-and-exchange, where the idle list costs two lock round trips. It counts among
    /// the connections opened, as an idle one. A thread that waits takes it under the lock
    /// (see ``checkOutWaiting()``); a connection given back while one waits goes through the
    /// lock and wakes it (see ``park(_:)``).
    private let parked = Atomic<UInt>(0)
    /// The settings applied to every connection so far (``State/settings``' count), read
    /// without the lock by a check-out of the ``parked`` connection.
    private let settingsCount = Atomic<Int>(0)
    /// How many threads are in ``checkOutWaiting()`` (they may wait for a connection): a
    /// connection given back goes to the idle list and wakes them rather than to ``parked``.
    private let waiting = Atomic<Int>(0)
    /// ``threadHoldKey``, read from the pool (a global's every read checks that it was
    /// initialized: a `swift_once` call per hold and per release).
    private let holdKey = threadHoldKey
    /// Where check-outs, their waits and the connections opened are counted.
    private let instrumentation: DatabaseInstrumentation

    init(
        engine: any DatabaseEngine, role: ConnectionRole = .writer, replicaSet: ReplicaSet? = nil, maximum: Int, wait: Duration,
        instrumentation: DatabaseInstrumentation
    ) {
        self.engine = engine
        self.role = role
        self.replicaSet = replicaSet
        self.instrumentation = instrumentation
        dialect = engine.dialect
        self.maximum = max(1, maximum)
        self.wait = wait
    }

    deinit {
        // The parked connection, closed with the idle ones.
        let address = parked.load(ordering: .acquiring)
        if address != 0 { Unmanaged<Connection>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).release() }
    }

    /// The connection the calling thread holds, if any.
    func heldByCaller() -> Connection? { threadHold()?.takeUnretainedValue() }

    /// Holds a connection for the calling thread: the one it holds already, or one from the
    /// pool. Give it back with ``release()``.
    ///
    /// Taking and giving back a connection allocates nothing and retains nothing beyond the
    /// connection itself: the count of holds and the thread's chain of held connections live
    /// in the connection (``Connection/poolHold``), and the thread's storage owns the
    /// connection taken from the idle ones while it is held (see Benchmarks/README.md,
    /// Hot-path notes).
    /// - Throws: `.busy` when every connection stayed held for the pool's wait; the engine's
    ///   error when a new connection cannot be opened.
    func hold() throws -> Connection { try holdUnretained().object }

    /// ``hold()``, the connection unretained: the thread's storage keeps it until the hold's
    /// ``release()``.
    @inline(__always)
    func holdUnretained() throws -> Unretained<Connection> {
        let raw = pthread_getspecific(holdKey)
        if let raw, let held = hold(below: raw) {
            held._withUnsafeGuaranteedRef { $0.poolHold.count += 1 }
            return Unretained(address: held.toOpaque())
        }
        return try holdFromPool(below: raw)
    }

    /// ``holdUnretained()`` of a connection the thread does not hold yet: checked out, and
    /// kept in the thread's storage (which owns it, and through its `below` the one held before).
    @inline(never)
    private func holdFromPool(below raw: UnsafeMutableRawPointer?) throws -> Unretained<Connection> {
        let connection = try checkOut()
        connection.poolHold = PoolHold(pool: ObjectIdentifier(self), count: 1, below: raw.map { Unmanaged<Connection>.fromOpaque($0) })
        let owned = Unmanaged.passRetained(connection).toOpaque()
        pthread_setspecific(holdKey, owned)
        return Unretained(address: owned)
    }

    /// Gives back one hold of the calling thread's connection; after the last, the connection
    /// goes back to the pool.
    func release() {
        guard let top = pthread_getspecific(holdKey), let held = hold(below: top) else { return }
        let (remaining, below) = held._withUnsafeGuaranteedRef { connection in
            connection.poolHold.count -= 1
            return (connection.poolHold.count, connection.poolHold.below)
        }
        guard remaining == 0 else { return }
        // Out of the thread's holds (the last taken, but for holds on several pools ended out
        // of order): what owned this one owns the one below it now.
        if top == held.toOpaque() {
            pthread_setspecific(holdKey, below?.toOpaque())
        } else {
            var above = Unmanaged<Connection>.fromOpaque(top)
            while let next = above._withUnsafeGuaranteedRef({ $0.poolHold.below }), next.toOpaque() != held.toOpaque() {
                above = next
            }
            above._withUnsafeGuaranteedRef { $0.poolHold.below = below }
        }
        let depth = held._withUnsafeGuaranteedRef { connection in
            connection.poolHold = PoolHold()
            return connection.transaction.depth
        }
        // The thread's work on the primary ended outside a transaction (a commit, a write): its
        // next read waits for a replica to have replayed that far.
        if let replicaSet, depth == 0 { replicaSet.noteWork() }
        // The thread's storage's reference, parked as it is (no retain and release), or given
        // to the idle list.
        guard held._withUnsafeGuaranteedRef({ isReusable($0) }) else { return checkIn(held.takeRetainedValue()) }
        instrumentation.connectionsInUse(delta: -1)
        park(held)
    }

    /// A connection of the caller's own, not held by the thread (a cursor's, outside a
    /// transaction). Give it back with ``checkIn(_:)``.
    func checkOut() throws -> Connection {
        // No metrics backend timing the wait: an idle connection without the wait's path.
        if !instrumentation.isReporting, let connection = checkOutIdle() { return connection }
        return try checkOutWaiting()
    }

    /// An idle connection with every setting applied, or `nil` when there is none: never waits,
    /// never opens a connection (for a caller that must not block, which then goes elsewhere).
    /// The parked connection without the lock, else the last idle one under one lock, no clock
    /// read. Give it back with ``checkIn(_:)``.
    @inline(__always)
    func checkOutIdle() -> Connection? {
        if let connection = takeParked() {
            guard connection.appliedSettings == settingsCount.load(ordering: .acquiring) else {
                // A setting to apply first: among the idle ones, which the wait's path serves.
                state.withLock { $0.idle.append(Idle(connection: connection)) }
                return nil
            }
            instrumentation.connectionsInUse(delta: 1)
            return connection
        }
        let connection = state.withLock { state -> Connection? in
            // Read in place and moved out: no retain and release of the connection.
            guard let last = state.idle.indices.last, state.idle[last].connection.appliedSettings == state.settings.count else {
                return nil
            }
            return state.idle.removeLast().connection
        }
        if connection != nil { instrumentation.connectionsInUse(delta: 1) }
        return connection
    }

    /// ``checkOut()`` when no idle connection is ready: a setting to apply first, a new
    /// connection to open, or a wait for another thread's.
    @inline(never)
    private func checkOutWaiting() throws -> Connection {
        enum Next { case connection(Connection, [@Sendable (Connection) -> Void]), open([@Sendable (Connection) -> Void]) }
        // The wait is timed only for a metrics backend (a clock read each side).
        let started = instrumentation.isReporting ? monotonicNanoseconds() : nil
        // Counted before the first look at the parked connection, in the order of every
        // thread's atomics: a thread giving one back then sees this one and does not park it,
        // or parks it before this look, which finds it (see ``park(_:)``).
        waiting.add(1, ordering: .sequentiallyConsistent)
        defer { waiting.subtract(1, ordering: .sequentiallyConsistent) }
        let next = state.wait(timeout: wait) { state -> Next? in
            if let connection = state.idle.popLast()?.connection ?? takeParked() {
                let applied = connection.appliedSettings
                let pending = applied == state.settings.count ? [] : Array(state.settings[applied...])
                return .connection(connection, pending)
            }
            guard state.opened < maximum else { return nil }
            state.opened += 1
            return .open(state.settings)
        }
        if let started { instrumentation.recordConnectionWait(since: started) }
        switch next {
        case .connection(let connection, let pending):
            for apply in pending { apply(connection) }
            connection.appliedSettings += pending.count
            instrumentation.connectionsInUse(delta: 1)
            return connection
        case .open(let settings):
            do {
                let connection = Connection(try engine.connect(role), dialect: dialect)
                for apply in settings { apply(connection) }
                connection.appliedSettings = settings.count
                connection.eventLogger?.debug("opened a pool connection", metadata: ["maximum": "\(maximum)"])
                instrumentation.connectionsOpen(delta: 1)
                instrumentation.connectionsInUse(delta: 1)
                return connection
            } catch {
                state.withLock { $0.opened -= 1 }
                state.signalAll()
                throw error
            }
        case nil:
            throw ActiveRecordError(
                .busy,
                "all \(maximum) connections of the pool stayed in use for \(wait); hold fewer at once (each "
                    + "transaction and each open cursor holds one) or open the database with a larger pool")
        }
    }

    /// Puts a connection back in the pool, or closes it when it cannot be used again (its
    /// server connection was lost, or it is still in a transaction).
    ///
    /// A connection that was lost takes the idle ones with it: they reach the same server,
    /// which is most likely gone too (a failover), and each would fail its next work in turn —
    /// a retried transaction meeting one dead connection per attempt. They are closed, and the
    /// next work opens a new connection (to the new primary, with a multi-host connection string).
    func checkIn(_ connection: __owned Connection) {
        if isReusable(connection) {
            // The common case: parked, or back among the idle ones, a waiting thread (if any)
            // woken.
            instrumentation.connectionsInUse(delta: -1)
            park(Unmanaged.passRetained(connection))
            return
        }
        let lost = !connection.isUsable
        let dropped = state.withLock { state -> [Idle] in
            state.opened -= 1
            guard lost else { return [] }
            if let connection = takeParked() { state.idle.append(Idle(connection: connection)) }
            guard !state.idle.isEmpty else { return [] }
            let dropped = state.idle
            state.idle.removeAll()
            state.opened -= dropped.count
            return dropped
        }
        state.signalAll()
        instrumentation.connectionsInUse(delta: -1)
        instrumentation.connectionsOpen(delta: -1)
        if !dropped.isEmpty {
            instrumentation.connectionsOpen(delta: -dropped.count)
            connection.eventLogger?.debug(
                "closed the pool's idle connections after one was lost", metadata: ["closed": "\(dropped.count)"])
        }
        // Closed here, outside the lock (a lost server's connection may take a moment to close).
        _ = consume dropped
    }

    /// Applies a setting (tracing, error verbosity) to every connection, each before its next use.
    func configure(_ apply: @escaping @Sendable (Connection) -> Void) {
        state.withLock { state in
            state.settings.append(apply)
            settingsCount.store(state.settings.count, ordering: .releasing)
        }
    }

    /// Whether `connection`, given back, can serve again as it is: its server connection
    /// still up, and no transaction left open or failed.
    @inline(__always)
    private func isReusable(_ connection: Connection) -> Bool {
        connection.isUsable && connection.transaction.depth == 0 && !connection.isInFailedTransaction
    }

    /// The ``parked`` connection, taken (`nil` when there is none).
    @inline(__always)
    private func takeParked() -> Connection? {
        let address = parked.exchange(0, ordering: .sequentiallyConsistent)
        guard address != 0 else { return nil }
        return Unmanaged<Connection>.fromOpaque(UnsafeRawPointer(bitPattern: address).unsafelyUnwrapped).takeRetainedValue()
    }

    /// Gives back a reusable connection: parked when no thread waits and none is parked yet,
    /// else among the idle ones, a waiting thread (if any) woken.
    ///
    /// A thread that begins to wait between the look at ``waiting`` and the parking is seen by
    /// the second look, which takes the connection back to the idle list (and wakes it), unless
    /// that thread (or another) took it meanwhile: every one of these atomics is sequentially
    /// consistent, so either the waiting thread's count comes before the second look, or its
    /// look at ``parked`` (under the lock, before it sleeps) comes after the parking.
    /// `connection` is a reference the caller gives up (retained).
    private func park(_ connection: Unmanaged<Connection>) {
        if waiting.load(ordering: .sequentiallyConsistent) == 0 {
            let address = UInt(bitPattern: connection.toOpaque())
            if parked.compareExchange(expected: 0, desired: address, ordering: .sequentiallyConsistent).exchanged {
                guard waiting.load(ordering: .sequentiallyConsistent) > 0, let reclaimed = takeParked() else { return }
                return state.withLockSignallingWaiters { $0.idle.append(Idle(connection: reclaimed)) }
            }
        }
        let connection = connection.takeRetainedValue()
        state.withLockSignallingWaiters { $0.idle.append(Idle(connection: connection)) }
    }
}

/// A pooled connection's holds by the thread that holds it (see ``ConnectionPool/hold()``):
/// the pool it is from, how many holds it has, and the connection the thread held before it
/// (on another pool), owned by this one while it is held. Only the holding thread reads or
/// changes it.
struct PoolHold {
    var pool: ObjectIdentifier?
    var count = 0
    var below: Unmanaged<Connection>?
}

/// The thread-specific slot where a thread finds its holds on pools (``ConnectionPool``): one
/// key for the process, per thread the connection it held last (retained), whose
/// ``PoolHold/below`` keeps the one held before.
private let threadHoldKey: pthread_key_t = {
    var key = pthread_key_t()
    precondition(pthread_key_create(&key, nil) == 0, "ActiveRecord: no thread-specific key left for the connection pool")
    return key
}()
