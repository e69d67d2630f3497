#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Synchronization

/// A database, of any engine (SQLite by default, PostgreSQL with `ActiveRecordPostgreSQL`):
/// where records are saved and fetched.
///
/// Most programs configure one database at start-up and let the models use
/// it; nothing at all needs configuring to use the default file:
///
/// ```swift
/// try Database.configure(.file(path))         // or .inMemory, .temporary, or nothing
/// let user = User(); user.name = "Alex"; try user.save()
/// ```
///
/// A `Database` value can also be used for a scope (each test its own database):
///
/// ```swift
/// let db = try Database(.inMemory)
/// try db.use { try User.create(["name": "Alex"]) }
/// ```
///
/// A `Database` is `Sendable`: use it from any thread or task. Writes go
/// through one connection, serialized; a transaction holds it for its thread
/// until it ends, so another thread's work never runs inside it. Reads outside
/// a transaction use reader connections (for a file database), so they do not
/// wait for a writer.
public final class Database: @unchecked Sendable {
    // @unchecked Sendable: the connections are shared by `writer` (one writer behind a
    // recursive lock, and readers) or `pool` (each thread its own); everything else is
    // immutable, atomic or mutex-guarded.
    /// The engine and where its database is.
    let engine: any DatabaseEngine
    /// The engine's SQL dialect.
    package let dialect: any SQLDialect
    /// The dialect's type, which decides the SQL a query compiles to: read once (the
    /// existential's dynamic type costs a runtime call, which would run on every query; see
    /// Benchmarks/README.md, Hot-path notes).
    package let dialectType: ObjectIdentifier
    // Who uses which connection: exactly one of the two is set, by the engine's
    // ``ConnectionSharing``. (Two optionals rather than an enum: reading an enum of class
    // references copies it, with a retain, on every save and fetch.)
    /// The single writer and its readers (SQLite).
    let writer: SingleWriter?
    /// ``writer``, unretained: see ``withConnection(_:)``.
    let unretainedWriter: Unretained<SingleWriter>?
    /// The writer's reader pool, unretained (the writer keeps it): what a read reaches, here
    /// rather than in the writer, whose fields every save writes (see ``withReadConnection(_:)``).
    let unretainedReaders: Unretained<ReaderPool>?
    /// The pool (PostgreSQL).
    let pool: ConnectionPool?
    /// ``pool``, unretained: see ``withConnection(_:)``.
    let unretainedPool: Unretained<ConnectionPool>?
    /// The replicas reads go to, when the engine has some (see ``ReplicaSet``).
    let replicas: ReplicaSet?
    /// How many ``read(_:)`` blocks are open on this database, on any thread: while none is,
    /// a read finds out that it runs outside one without a thread-local look-up.
    let openReadScopes = Atomic<Int>(0)
    /// COMMITs to fail as if lost in flight, for the tests (see ``loseCommits(_:committed:)``):
    /// that many committed first (> 0), or rolled back (< 0).
    let commitFaults = Atomic<Int>(0)
    /// Whether the table of ``retrying(attempts:isolation:_:)``'s commit tokens is known to exist.
    let commitTokensReady = Atomic<Bool>(false)
    /// How many commit tokens this database wrote (every 1024th deletes the expired ones).
    let commitTokensWritten = Atomic<Int>(0)
    /// The tables automatic migration checked on this database (by ``TableOperations/serial``).
    let migratedTables = Lock<Set<UInt64>>([])
    /// The table ``prepare(_:)`` last found in ``migratedTables`` (0: none): serials start at 1.
    let lastPreparedTable = Atomic<UInt64>(0)
    /// The observers of this database's committed changes (see ``observe(tables:fetch:onChange:)``).
    let observers = Lock(ObserverRegistry())
    /// Whether ``observers`` has any entry (set holding its lock): a write outside a transaction
    /// that nobody observes publishes its changes without taking that lock.
    let isObserved = Atomic<Bool>(false)
    /// Whether errors carry the SQL with its values written in (see ``includesBoundValuesInErrors``).
    let boundValuesInErrors = Lock(false)
    /// Where the library logs (see ``logger``), and the lowest level of the library's own
    /// lines that go there: `.trace` (the logger's level decides) for a logger the program
    /// set, and for the default one when the program's bootstrap lowered the level below
    /// `.info`; else `.warning`, so that a program that configured nothing sees nothing on
    /// success (swift-log's default handler prints from `.info`).
    let loggerStorage = Lock<(logger: Logger?, floor: Logger.Level)>(Database.defaultLogger())

    /// `Logger(label: "activerecord")` and its floor (see ``loggerStorage``).
    private static func defaultLogger() -> (logger: Logger?, floor: Logger.Level) {
        let logger = Logger(label: "activerecord")
        return (logger, logger.logLevel < .info ? .trace : .warning)
    }
    /// Whether the SQL log carries the bound values (see ``logsBoundValues``).
    let boundValuesInLog = Lock(false)
    /// The limit of every statement (see ``statementTimeout``).
    let statementTimeoutStorage = Lock<Duration?>(nil)
    /// The blocks of ``withStatementTimeout(_:_:)`` open on each thread.
    let statementTimeouts = StatementTimeoutScopes()
    /// The threads async calls run on, made by the first one (see ``executor``).
    let executorStorage = Lock<DatabaseExecutor?>(nil)
    /// How long an async call waits for a connection (see ``connectionWaitTimeout``).
    let connectionWaitStorage: Lock<Duration?>
    /// ``connectionWaitTimeout`` in nanoseconds (`UInt64.max`: none), read by every async call
    /// without a lock or a `Duration`'s conversion.
    let connectionWaitNanoseconds = Atomic<UInt64>(.max)
    /// Where awaited finds run, and what `.automatic` decides by (see ``awaitedFinds``).
    let awaitedFindGate = AwaitedFindGate()
    /// What the database reports to metrics and tracing (see ``refreshInstrumentation()``).
    package let instrumentation: DatabaseInstrumentation

    /// The file path, or `:memory:`; for a database on a server, its address (without password).
    public let path: String
    /// Where the database was asked to be.
    public let location: DatabaseLocation
    /// Whether missing tables and indexes are created on first use.
    public let automaticMigrations: Bool
    /// Whether the database was opened without write access.
    public let isReadOnly: Bool

    /// Opens (and for a new file creates) a database.
    ///
    /// - Parameters:
    ///   - location: where the database lives; `.default` is a file in the data directory.
    ///   - automaticMigrations: create missing tables and indexes on first use
    ///     (the default); when `false`, nothing is checked or changed.
    ///   - readOnly: open without write access.
    /// - Throws: `.cannotOpen` (bad path, no server), `.notADatabase` (garbage file, left
    ///   untouched), `.readOnly` (a read-only file opened for writing).
    public init(_ location: DatabaseLocation = .default, automaticMigrations: Bool = true, readOnly: Bool = false) throws {
        self.location = location
        self.automaticMigrations = automaticMigrations
        isReadOnly = readOnly
        engine = try location.engine(readOnly: readOnly)
        dialect = engine.dialect
        dialectType = ObjectIdentifier(type(of: engine.dialect))
        path = engine.description
        let instrumentation = DatabaseInstrumentation(engine: dialect.name, database: path, namespace: engine.namespace)
        self.instrumentation = instrumentation
        let instruments = instrumentation.refresh()
        let connectionWait: Duration = switch engine.sharing {
        case .singleWriter: .seconds(30)
        case .pool(_, let wait): wait
        }
        connectionWaitStorage = Lock(connectionWait)
        connectionWaitNanoseconds.store(connectionWait.clampedNanoseconds, ordering: .relaxed)
        switch engine.sharing {
        case .singleWriter(let readers):
            let connection = Connection(try engine.connect(.writer), dialect: dialect)
            instrumentation.connectionsOpen(delta: 1)
            let readers = readers > 0 ? ReaderPool(engine: engine, maximum: readers, instrumentation: instrumentation) : nil
            let writer = SingleWriter(connection, readers: readers, instrumentation: instrumentation)
            self.writer = writer
            unretainedWriter = Unretained(writer)
            unretainedReaders = readers.map(Unretained.init)
            pool = nil
            unretainedPool = nil
            replicas = nil
        case .pool(let maximum, let wait):
            // Replicas are opened on demand: one that cannot be reached now is tried again later.
            let engine = engine
            let replicas = engine.replicaCount > 0
                ? ReplicaSet(
                    replicas: (0..<engine.replicaCount).map { index in
                        ConnectionPool(engine: engine, role: .replica(index), maximum: maximum, wait: wait, instrumentation: instrumentation)
                    })
                : nil
            self.replicas = replicas
            let pool = ConnectionPool(
                engine: engine, replicaSet: replicas, maximum: maximum, wait: wait, instrumentation: instrumentation)
            // One connection at once, so that a database that cannot be reached fails here.
            pool.checkIn(try pool.checkOut())
            self.pool = pool
            unretainedPool = Unretained(pool)
            writer = nil
            unretainedWriter = nil
            unretainedReaders = nil
        }
        let scopes = statementTimeouts
        configureConnections { $0.timeoutScopes = scopes }
        // Metrics or tracing bootstrapped: every connection reports (else none is told anything).
        if let instruments { configureConnections { $0.instruments = instruments } }
        // At .warning, so that the default logger prints them: a program must hear that its
        // database file moved (or that another one was left behind).
        for note in engine.notes { log(.warning, "\(note)") }
        // A default logger that takes SQL or connection events (a bootstrap that lowered the
        // level) reaches the connections as a logger set later would.
        if let initial = loggerStorage.withLock({ $0.logger }), initial.logLevel <= .debug { logger = initial }
    }
}

/// What `dump` and a debugger show of a database: where it is (a server without its
/// password), never the engine and its connection string.
extension Database: CustomReflectable {
    /// The database's path, location, and whether it is read-only or migrates automatically.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["path": path, "location": location, "isReadOnly": isReadOnly, "automaticMigrations": automaticMigrations],
            displayStyle: .class)
    }
}
