#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads on replicas: where reads outside a transaction go on a database with replicas (see
/// ``ReplicaSet``), and how long they wait for a replica to catch up.
extension Database {
    /// How long a read waits for a replica to have replayed its session's commits (read your
    /// writes) before it reads on the primary instead; 1 second unless set. Only for a
    /// database with replicas (`.postgres(primary, replicas: […])`).
    ///
    /// A session is the task (or, outside one, the thread) that calls the library: after it
    /// commits or writes, its reads see what it wrote, on whichever server they run. Other
    /// sessions may read on a replica that has not replayed that commit yet: they see it
    /// once the replica has (streaming replication: usually within milliseconds), not sooner.
    public var replicaWait: Duration {
        get { replicas?.wait.withLock { $0 } ?? .zero }
        set { replicas?.wait.withLock { $0 = max(.zero, newValue) } }
    }

    /// Whether the database has replicas that reads outside transactions go to.
    public var hasReplicas: Bool { replicas != nil }

    /// Runs a read outside a transaction on a replica that has replayed the calling session's
    /// commits, else on the primary through `primary`. When the read fails for the replica's
    /// sake (lost, shutting down, or canceling the read for its recovery), the replica is
    /// marked down and the read runs again on the next server, if `canRunAgain` says it may
    /// (a statement may; a read block only if it has not started).
    /// The one way every read reaches a replica: a statement, a `read { }` block, an async read.
    func readOnReplica<R>(
        _ replicas: ReplicaSet, _ body: (Connection) throws -> R, canRunAgain: () -> Bool = { true }, primary: () throws -> R
    ) throws -> R {
        let required = replicas.requiredPosition(askPrimary: primaryPosition)
        for _ in 0..<replicas.replicas.count {
            guard let (replica, connection) = replicas.checkOut(required: required) else { break }
            do {
                defer { replica.pool.checkIn(connection) }
                let value = try body(connection)
                replicas.succeeded(replica)
                return value
            } catch where ReplicaSet.isReplicaFailure(error) && canRunAgain() {
                replicas.failed(replica, error)
                log(.notice, "a read failed on replica \(replica.index) and goes to another server: \(error)")
            }
        }
        return try primary()
    }

    /// How far the primary's WAL goes now, asked on a connection of its pool.
    private func primaryPosition() throws -> UInt64? {
        let pool = pool.unsafelyUnwrapped
        let connection = try pool.checkOut()
        defer { pool.checkIn(connection) }
        return try connection.replicationPosition()
    }
}
