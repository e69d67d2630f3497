import Dispatch
import Foundation

/// How a database hears of the commits made elsewhere (other processes, other `Database`
/// values) while it has observers: through the engine's listener, or by reading its writer's
/// ``EngineConnection/commitVersion`` on a timer (see ``DatabaseEngine/commitPollInterval``).
/// Started with the database's first observer and stopped with its last; nothing of it runs
/// while nobody observes, and nothing of it is on the path of a save or a fetch.
final class ExternalCommitWatch: @unchecked Sendable {
    // @unchecked Sendable: `listener` and `timer` are set once, in init; `lastVersion` is only
    // touched on `queue` (the timer's handler, and `start`'s one read before the timer resumes).
    private let listener: (any CommitListener)?
    private let timer: (any DispatchSourceTimer)?
    private let queue = DispatchQueue(label: "activerecord.observation.commits")
    /// The writer's commit version at the last read (`nil`: not read yet).
    private var lastVersion: Int64?

    /// Starts what `database`'s engine offers (nothing when it offers neither); commits
    /// heard go to ``Database/publishExternal(_:)``.
    init(database: Database) {
        let engine = database.engine
        listener = engine.listenForCommits(
            { [weak database] change in database?.publishExternal(change) },
            warn: { [weak database] message in database?.log(.warning, "\(message)") })
        guard listener == nil, let interval = engine.commitPollInterval, database.writer != nil else {
            timer = nil
            return
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let nanoseconds = max(1, Int(interval.limitMilliseconds)) * 1_000_000
        // A tenth of the interval as leeway: the system may group the wake-ups with others'.
        timer.schedule(
            deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
            leeway: .nanoseconds(nanoseconds / 10))
        self.timer = timer
        // The version before the first fetch: a commit made after it is heard at the next tick.
        queue.sync { lastVersion = Self.version(of: database) }
        timer.setEventHandler { [weak self, weak database] in
            guard let self, let database else { return }
            poll(database)
        }
        timer.resume()
    }

    deinit { timer?.cancel() }

    /// Makes commits to `tables` heard too (the engine's listener installs what it needs),
    /// waiting a bounded time.
    func watch(_ tables: Set<String>) {
        listener?.watch(tables, timeout: .seconds(5))
    }

    /// Stops listening (or polling); nothing is heard after it returns.
    func stop() {
        listener?.stop()
        if let timer {
            timer.cancel()
            queue.sync {}  // a tick already running has finished
        }
    }

    /// On `queue`: reads the writer's commit version, and tells every observer when it moved
    /// (another connection committed; which tables it changed is not known).
    private func poll(_ database: Database) {
        guard let version = Self.version(of: database) else { return }  // the writer is busy: next tick
        defer { lastVersion = version }
        guard let lastVersion else {
            // No version was read before the first fetch (the writer was busy then): a commit
            // may have landed since.
            database.publishExternal(.anyTable)
            return
        }
        if version != lastVersion { database.publishExternal(.anyTable) }
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
