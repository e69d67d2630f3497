import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The observers of one database, by id.
struct ObserverRegistry {
    var nextID: UInt64 = 0
    var entries: [UInt64: (tables: Set<String>, changed: @Sendable () -> Void)] = [:]
    /// How commits made elsewhere are heard: started with the first observer, stopped with the last.
    var watch: ExternalCommitWatch?
}

extension Database {
    /// Tells the observers of the tables `connection`'s committed writes changed.
    @inline(never)
    func publishChanges(of connection: Connection) {
        // Nobody observes: no lock to take, and the changes dropped without a copy. An observer
        // added meanwhile fetches first anyway.
        guard isObserved.load(ordering: .acquiring) else { return connection.changes.dropUnpublished() }
        let changes = connection.changes.unpublished
        connection.changes.unpublished = TableChanges()
        connection.forgetNotedTable()
        let due = observers.withLock { registry in
            registry.entries.isEmpty ? [] : registry.entries.values.filter { changes.touches($0.tables) }.map(\.changed)
        }
        for changed in due { changed() }
    }

    /// Tells the observers of the tables that commits made elsewhere (another process,
    /// another `Database` value) changed: every observer for ``ExternalCommit/anyTable``.
    func publishExternal(_ change: ExternalCommit) {
        let due = observers.withLock { registry in
            switch change {
            case .anyTable: registry.entries.values.map(\.changed)
            case .tables(let tables): registry.entries.values.filter { !$0.tables.isDisjoint(with: tables) }.map(\.changed)
            }
        }
        for changed in due { changed() }
    }

    /// Calls `onChange` with `fetch`'s value now (on a background queue), and again after
    /// every committed transaction that changed one of `tables`: this database's own, and
    /// those of other processes and other `Database` values on the same database. Many
    /// commits landing while a fetch is due make one fetch; a rolled-back transaction makes
    /// none.
    ///
    /// ```swift
    /// let observation = db.observe(tables: ["Bookmark"], fetch: { try Bookmark.count() }) { result in
    ///     if case .success(let count) = result { print("\(count) bookmarks") }
    /// }
    /// // … observation.cancel() (or let it go) to stop
    /// ```
    /// `fetch` runs with this database as ``current``, on the observation's own serial
    /// queue, so calls to `onChange` never overlap. This database's own commits are published
    /// as they commit (SQL run with ``execute(_:_:)-(String,_)`` counts as changing every table). Commits
    /// made elsewhere are heard as the engine can:
    /// - SQLite (a file): the writer connection is asked every 50 ms, while observers exist,
    ///   whether another connection has committed (the file's data version); which tables changed
    ///   is not known, so every observer of the database fetches again. A commit is heard
    ///   within about 50 ms (longer while this database's writer is held by a transaction).
    /// - PostgreSQL: the first observation of a table gives it a statement-level trigger that
    ///   sends a notification (`NOTIFY`) when a transaction that wrote it commits; one
    ///   connection per database listens (`LISTEN`) while observers exist, and tells the
    ///   observers of the tables named. Writes of any program are heard, raw SQL and `psql`
    ///   included. When the listener loses its connection (a failover), it reconnects and then
    ///   has every observer fetch again: a commit made while it was away is seen then, not
    ///   missed. A table observed before it exists is heard from about a second after it is
    ///   made (its observers fetch again then). The first observation of a table waits for
    ///   the listener (at most 5 s; past that, its observers fetch again once it is there).
    ///   Not heard at all: a table whose trigger the database's role may not make (a warning
    ///   says so), and everything behind pgbouncer in transaction pooling mode, where `LISTEN`
    ///   cannot work (only this database's own commits are seen).
    ///
    /// A commit may make a fetch that finds nothing new (another table of a transaction, a
    /// write that changed no row, a reconnect); a commit heard is never left without one.
    ///
    /// When the system will not start the thread that hears commits made elsewhere (too many
    /// threads), `onChange` gets that `.engine` error first; the observation then runs on, on
    /// this database's own commits only.
    /// - Returns: the observation: it runs until cancelled or released.
    public func observe<Value>(
        tables: [String], fetch: @escaping @Sendable () throws -> Value,
        onChange: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> DatabaseObservation {
        let observation = DatabaseObservation(database: self)
        let runner = ObservationRunner(database: self, observation: observation, fetch: fetch, onChange: onChange)
        let watch: Result<ExternalCommitWatch, any Error>
        (observation.id, watch) = observers.withLock { registry in
            registry.nextID += 1
            registry.entries[registry.nextID] = (Set(tables), { @Sendable [weak runner] in runner?.schedule() })
            isObserved.store(true, ordering: .releasing)
            if let watch = registry.watch { return (registry.nextID, .success(watch)) }
            // Not kept when it fails: the next observation tries again.
            let started = Result { try ExternalCommitWatch(database: self) }
            registry.watch = try? started.get()
            return (registry.nextID, started)
        }
        switch watch {
        case .success(let watch):
            // Commits made elsewhere are heard before the first fetch runs: none falls between.
            watch.watch(Set(tables))
        case .failure(let error):
            log(.error, "\(error)")
            runner.deliverFirst(error)
        }
        observation.runner = runner
        runner.schedule()
        return observation
    }

    func removeObserver(_ id: UInt64) {
        let stopped = observers.withLock { registry -> ExternalCommitWatch? in
            registry.entries.removeValue(forKey: id)
            guard registry.entries.isEmpty else { return nil }
            isObserved.store(false, ordering: .releasing)
            defer { registry.watch = nil }
            return registry.watch
        }
        stopped?.stop()
    }
}

/// A running observation (``Database/observe(tables:fetch:onChange:)``): cancel it, or let
/// it go, to stop it.
public final class DatabaseObservation: @unchecked Sendable {
    // @unchecked Sendable: `id` and `runner` are set once, before the value is returned.
    private weak var database: Database?
    fileprivate var id: UInt64 = 0
    fileprivate var runner: AnyObject?
    private let cancelled = Atomic(false)

    fileprivate init(database: Database) { self.database = database }

    /// Whether ``cancel()`` ran.
    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Stops the observation: no fetch starts and no value is delivered after it returns
    /// (a fetch already running finishes, its value dropped). Releases what it holds.
    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        database?.removeObserver(id)
        runner = nil
    }

    deinit { cancel() }
}

/// Fetches and delivers for one observation, on its own serial queue; a change that lands
/// while a fetch is already due is folded into it.
private final class ObservationRunner<Value>: @unchecked Sendable {
    // @unchecked Sendable: the queue serializes fetch and delivery; `due` is atomic.
    private let database: Database
    private weak var observation: DatabaseObservation?
    private let fetch: @Sendable () throws -> Value
    private let onChange: @Sendable (Result<Value, any Error>) -> Void
    private let queue = DispatchQueue(label: "activerecord.observation")
    private let due = Atomic(false)

    init(
        database: Database, observation: DatabaseObservation, fetch: @escaping @Sendable () throws -> Value,
        onChange: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) {
        self.database = database
        self.observation = observation
        self.fetch = fetch
        self.onChange = onChange
    }

    /// Delivers `error` before the first fetch's result (a watch for outside commits that did
    /// not start).
    func deliverFirst(_ error: any Error) {
        queue.async { [self] in
            guard let observation, !observation.isCancelled else { return }
            onChange(.failure(error))
        }
    }

    func schedule() {
        guard !due.exchange(true, ordering: .acquiringAndReleasing) else { return }  // one fetch is enough
        queue.async { [self] in
            due.store(false, ordering: .releasing)  // changes from now on need another fetch
            guard let observation, !observation.isCancelled else { return }
            // On the primary when there are replicas: a replica may not have replayed the commit
            // that made this fetch due (this process's, or another's heard by notification).
            let result = Result {
                try database.use { database.replicas == nil ? try fetch() : try ReplicaSet.adopting(ReplicaSet.primarySession, fetch) }
            }
            guard !observation.isCancelled else { return }
            onChange(result)
        }
    }
}
