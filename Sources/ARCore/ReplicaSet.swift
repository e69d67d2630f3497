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

/// The replicas of a database whose engine has some (a PostgreSQL primary and its streaming
/// standbys): where reads outside a transaction go, which replicas are healthy, and how far
/// each session's commits go, so that its reads see them (read your writes).
///
/// A *session* is the task (async code, or synchronous code running in a task) or else the
/// thread that calls the library; an async call's work, run on the database's threads, counts
/// for the task that awaits it. When a session's work on the primary ends outside a
/// transaction (a commit, a write), the session is marked as having written — no round trip;
/// its next read asks the primary how far its WAL goes (past that work, since the work came
/// first), keeps that position for the session, and goes to a replica only once the replica
/// has replayed that far: at once when it is known to have, else after waiting up to
/// ``Database/replicaWait`` for it, else on the primary. A session that writes and does not read
/// pays nothing. Positions are merged, never lost: when the table of sessions grows past its
/// bound, its positions fold into one floor that every session then waits for (more waiting,
/// never a stale read).
final class ReplicaSet: Sendable {
    /// One replica: its pool, its health, and how far it has replayed, as last seen.
    final class Replica: Sendable {
        let index: Int
        let pool: ConnectionPool
        /// When the replica may be tried again (`CLOCK_MONOTONIC` ns; 0: healthy), and how many
        /// failures in a row made it so.
        let health = Lock<(retryAt: UInt64, failures: Int)>((0, 0))
        /// The WAL position the replica was last seen to have replayed.
        let replayed = Atomic<UInt64>(0)

        init(index: Int, pool: ConnectionPool) {
            self.index = index
            self.pool = pool
        }

        /// Whether the replica is not waiting out a failure.
        func isHealthy(at now: UInt64) -> Bool { health.withLock { $0.retryAt <= now } }
    }

    let replicas: [Replica]
    /// Where the next read starts looking (round robin).
    private let next = Atomic<Int>(0)
    /// How far each session's work on the primary went (``pendingPosition``: not asked yet),
    /// the floor of the sessions folded away, and whether that floor must first be asked of
    /// the primary (a folded session had not been asked).
    private let sessions = Lock<(positions: [UInt: UInt64], floor: UInt64, floorPending: Bool)>(([:], 0, false))
    /// How long a read waits for a replica to replay its session's commits (see ``Database/replicaWait``).
    let wait: Lock<Duration> = Lock(.seconds(1))
    /// Each thread's session while it runs an async call's work (0: none; see ``session``).
    static let adoptedSession = PerThreadWord()

    /// A session whose reads always go to the primary (an observation's fetch, which must see
    /// the commit that made it due, whoever made it).
    static let primarySession = UInt.max

    /// A position meaning "unknown": the session's reads go to the primary.
    static let unknownPosition = UInt64.max
    /// A session that worked on the primary since its position was last asked.
    static let pendingPosition = UInt64.max - 1
    /// Sessions kept before they fold into the floor.
    private static let sessionBound = 4096

    init(replicas: [ConnectionPool]) {
        self.replicas = replicas.enumerated().map { Replica(index: $0.offset, pool: $0.element) }
    }

    // MARK: Sessions

    /// The calling session: the async call's task whose work this thread runs, else the task
    /// the caller runs in, else the thread.
    static var session: UInt {
        let adopted = adoptedSession.value
        if adopted != 0 { return adopted }
        // Tasks odd, threads even (and never ``primarySession``).
        if let task = withUnsafeCurrentTask(body: { $0.map { UInt(bitPattern: $0.hashValue) } }) { return task == .max ? 1 : task | 1 }
        return currentThreadNumber & ~1
    }

    /// Runs `body` as `session`'s work (an async call's, on one of the database's threads).
    static func adopting<R>(_ session: UInt, _ body: () throws -> R) rethrows -> R {
        let previous = adoptedSession.value
        adoptedSession.value = session
        defer { adoptedSession.value = previous }
        return try body()
    }

    /// Notes that the calling session's work on the primary ended outside a transaction (a
    /// commit, a write): its next read asks how far the primary went.
    func noteWork() {
        let session = Self.session
        sessions.withLock { sessions in
            if sessions.positions.count >= Self.sessionBound, sessions.positions[session] == nil {
                // Folded, not forgotten: every session now waits for the highest (asked of the
                // primary first when one of them had not been asked yet).
                let asked = sessions.positions.values.filter { $0 != Self.pendingPosition }
                sessions.floor = max(sessions.floor, asked.max() ?? 0)
                if asked.count < sessions.positions.count { sessions.floorPending = true }
                sessions.positions.removeAll(keepingCapacity: true)
            }
            sessions.positions[session] = Self.pendingPosition
        }
    }

    /// How far a replica must have replayed for the calling session's reads: asked of the
    /// primary through `askPrimary` when the session worked there since (``unknownPosition``,
    /// the primary, when that fails: asked again at the next read).
    func requiredPosition(askPrimary: () throws -> UInt64?) -> UInt64 {
        let session = Self.session
        if session == Self.primarySession { return Self.unknownPosition }
        let (known, floorPending) = sessions.withLock { ($0.positions[session], $0.floorPending) }
        if let known, known != Self.pendingPosition { return known }
        if known == nil, !floorPending { return sessions.withLock { $0.floor } }
        // Asked now, after the work: the primary's position is past it.
        guard let position = try? askPrimary() ?? 0 else { return Self.unknownPosition }
        return sessions.withLock { sessions in
            if known == nil {
                sessions.floor = max(sessions.floor, position)
                sessions.floorPending = false
                return sessions.floor
            }
            // A later write of the session (another thread of its task) left it pending again:
            // still, this read needs at least this position.
            if sessions.positions[session] == Self.pendingPosition { sessions.positions[session] = position }
            return position
        }
    }

    // MARK: Choosing a replica

    /// A connection of a healthy replica that has replayed `required` (waiting for it up to
    /// ``wait``), checked out of its pool (give it back with `replica.pool.checkIn`); `nil`
    /// when none has (the read goes to the primary). A replica that cannot be reached is
    /// marked down and skipped.
    func checkOut(required: UInt64) -> (Replica, Connection)? {
        guard required != Self.unknownPosition, !replicas.isEmpty else { return nil }
        let now = monotonicNanoseconds()
        let start = next.add(1, ordering: .relaxed).oldValue
        var lagging: [(Replica, Connection)] = []
        defer { for (replica, connection) in lagging { replica.pool.checkIn(connection) } }
        for offset in 0..<replicas.count {
            let replica = replicas[(start &+ offset) % replicas.count]
            guard replica.isHealthy(at: now) else { continue }
            var connection: Connection
            do {
                connection = try replica.pool.checkOut()
                if !connection.checkAlive() {
                    // Closed by its server (restarted, or stopped): given back (and the pool's
                    // other idle ones with it), and a new one opened, which tells.
                    replica.pool.checkIn(connection)
                    connection = try replica.pool.checkOut()
                }
            } catch {
                failed(replica, error)
                continue
            }
            if replica.replayed.load(ordering: .relaxed) >= required { return (replica, connection) }
            do {
                if try readReplayed(replica, connection) >= required { return (replica, connection) }
            } catch {
                replica.pool.checkIn(connection)
                failed(replica, error)
                continue
            }
            lagging.append((replica, connection))
        }
        // None has replayed it yet: wait for the first that does, up to the bound.
        let deadline = now + UInt64(wait.withLock { $0 }.limitMilliseconds) * 1_000_000
        var pause: UInt32 = 1000  // µs, doubling to 10 ms
        while !lagging.isEmpty, monotonicNanoseconds() < deadline {
            usleep(pause)
            pause = min(pause * 2, 10_000)
            var index = 0
            while index < lagging.count {
                let (replica, connection) = lagging[index]
                do {
                    if try readReplayed(replica, connection) >= required {
                        lagging.remove(at: index)
                        return (replica, connection)
                    }
                    index += 1
                } catch {
                    lagging.remove(at: index)
                    replica.pool.checkIn(connection)
                    failed(replica, error)
                }
            }
        }
        return nil
    }

    /// Reads how far `replica` has replayed, on `connection`, and keeps it.
    private func readReplayed(_ replica: Replica, _ connection: Connection) throws -> UInt64 {
        let position = try connection.replicationPosition() ?? 0
        replica.replayed.store(position, ordering: .relaxed)
        return position
    }

    /// Marks `replica` down after `error`: skipped for 1 s, doubling with each failure in a
    /// row up to 30 s, then tried again. A pool that stayed busy is not a failure.
    func failed(_ replica: Replica, _ error: any Error) {
        if let failure = error as? ActiveRecordError, failure.code == .busy { return }
        replica.health.withLock { health in
            health.failures += 1
            let seconds = min(30, 1 << min(health.failures - 1, 5))
            health.retryAt = monotonicNanoseconds() + UInt64(seconds) * 1_000_000_000
        }
    }

    /// Marks `replica` healthy again (a read succeeded on it).
    func succeeded(_ replica: Replica) {
        replica.health.withLock { if $0.failures != 0 { $0 = (0, 0) } }
    }

    /// Whether a read that failed with `error` on a replica may be run on another server: the
    /// replica was lost or is shutting down, or the standby canceled the read (a conflict with
    /// recovery).
    static func isReplicaFailure(_ error: any Error) -> Bool {
        guard let failure = error as? ActiveRecordError else { return false }
        return failure.isTransient || failure.code == .transactionConflict
    }
}
