#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a database hears of the commits made elsewhere (other processes, other `Database`
/// values) while it has observers: through the engine's listener, or by reading its writer's
/// ``EngineConnection/commitVersion`` on a thread of its own (see
/// ``DatabaseEngine/commitPollInterval``). Started with the database's first observer and
/// stopped with its last; nothing of it runs while nobody observes, and nothing of it is on
/// the path of a save or a fetch.
final class ExternalCommitWatch: Sendable {
    private let listener: (any CommitListener)?
    /// Whether the polling thread must stop (signalled to wake it at once).
    private let stopped: ConditionLock<Bool>?

    /// Starts what `database`'s engine offers (nothing when it offers neither); commits
    /// heard go to ``Database/publishExternal(_:)``. The polling thread is named `ar.commits`.
    /// - Throws: `.engine` when the listener's or the polling thread cannot be started.
    init(database: Database) throws {
        let engine = database.engine
        listener = try engine.listenForCommits(
            { [weak database] change in database?.publishExternal(change) },
            warn: { [weak database] message in database?.log(.warning, "\(message)") })
        guard listener == nil, let interval = engine.commitPollInterval, database.writer != nil else {
            stopped = nil
            return
        }
        let stopped = ConditionLock(false)
        self.stopped = stopped
        // The version before the first fetch: a commit made after it is heard at the next read.
        let first = Self.version(of: database)
        // A thread that sleeps between reads costs less, idle, than a dispatch timer (whose
        // every tick wakes a worker thread of the pool).
        try startThread(name: "ar.commits", for: "the thread that polls for commits made elsewhere") { [weak database] in
            var last = first
            while stopped.wait(timeout: interval, { $0 ? () : nil }) == nil {
                guard let database else { return }
                guard let version = Self.version(of: database) else { continue }  // the writer is busy: next time
                // No version read before the first fetch (the writer was busy then): a commit
                // may have landed since.
                if version != last { database.publishExternal(.anyTable) }
                last = version
            }
        }
    }

    deinit { stop() }

    /// Makes commits to `tables` heard too (the engine's listener installs what it needs),
    /// waiting a bounded time.
    func watch(_ tables: Set<String>) {
        listener?.watch(tables, timeout: .seconds(5))
    }

    /// Stops listening (or polling). A poll running when it is called may still tell the
    /// observers once: a fetch more, never one less.
    func stop() {
        listener?.stop()
        stopped?.withLock { $0 = true }
        stopped?.signalAll()
    }

    /// The writer's commit version, read without waiting: `nil` when another thread holds the
    /// writer (it is in a transaction, or writing), or the engine cannot say.
    private static func version(of database: Database) -> Int64? {
        guard let writer = database.writer else { return nil }
        if writer.callerHolds { return writer.connection.engineConnection.commitVersion }
        guard writer.lock.tryLock() else { return nil }
        defer { writer.lock.unlock() }
        return writer.connection.engineConnection.commitVersion
    }
}
