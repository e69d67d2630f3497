import Foundation
import Synchronization

/// A SQLite database: where records are saved and fetched.
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
    // @unchecked Sendable: `connection` (the writer), `lockDepth` and `logHandler` are
    // only touched while `lock` is held; `owner`, `preparedTables` and `readers` are
    // atomic or mutex-guarded. The lock is recursive so that a transaction's thread
    // can save and fetch inside its own transaction.
    private let lock = NSRecursiveLock()
    let connection: Connection
    private var lockDepth = 0
    /// The thread holding `lock` (0: none), so that its reads go through the writer.
    private let owner = Atomic<UInt>(0)
    private let preparedTables = Mutex<Set<UInt64>>([])
    /// Reader connections, for a file database opened for writing (`nil` otherwise).
    let readers: ReaderPool?
    var logHandler: (@Sendable (String) -> Void)? = { message in
        FileHandle.standardError.write(Data("activerecord: \(message)\n".utf8))
    }

    /// The file path, or `:memory:`.
    public let path: String
    /// Where the database was asked to be.
    public let location: DatabaseLocation
    /// Whether missing tables and indexes are created on first use.
    public let automaticMigrations: Bool

    /// Opens (and for a new file creates) a database.
    ///
    /// - Parameters:
    ///   - location: where the database lives; `.default` is a file in the cache directory.
    ///   - automaticMigrations: create missing tables and indexes on first use
    ///     (the default); when `false`, nothing is checked or changed.
    ///   - readOnly: open without write access.
    /// - Throws: `.cannotOpen` (bad path), `.notADatabase` (garbage file, left
    ///   untouched), `.readOnly` (a read-only file opened for writing).
    public init(_ location: DatabaseLocation = .default, automaticMigrations: Bool = true, readOnly: Bool = false) throws {
        self.location = location
        self.automaticMigrations = automaticMigrations
        path = try location.resolvePath()
        connection = try Connection(path: path, readOnly: readOnly)
        readers = path == ":memory:" || readOnly ? nil : ReaderPool(path: path)
    }

    // MARK: The current database

    private static let configured = Mutex<Database?>(nil)

    @TaskLocal private static var scoped: Database?

    /// Configures the database that models use, replacing any earlier one.
    ///
    /// The new database is opened first: if that fails, the error is thrown
    /// and the earlier configuration stays in force. Once replaced, the old
    /// database closes when the last reference to it is gone.
    /// - Returns: the new database.
    @discardableResult
    public static func configure(
        _ location: DatabaseLocation = .default, automaticMigrations: Bool = true, readOnly: Bool = false
    ) throws -> Database {
        let database = try Database(location, automaticMigrations: automaticMigrations, readOnly: readOnly)
        configured.withLock { $0 = database }
        return database
    }

    /// The database models use: the one of an enclosing ``use(_:)``, else the
    /// configured one, else the default file (opened on first use).
    /// - Throws: when the default database cannot be opened.
    public static var current: Database {
        get throws {
            if let scoped { return scoped }
            return try configured.withLock { database in
                if let database { return database }
                let opened = try Database(.default)
                database = opened
                return opened
            }
        }
    }

    /// Runs `body` with this database as ``current`` for the calling task or
    /// thread (and tasks it creates), whatever is configured globally.
    @discardableResult
    public func use<R>(_ body: () throws -> R) rethrows -> R {
        try Database.$scoped.withValue(self, operation: body)
    }

    /// The async form of ``use(_:)``.
    @discardableResult
    public func use<R>(_ body: () async throws -> R) async rethrows -> R {
        try await Database.$scoped.withValue(self, operation: body)
    }

    // MARK: Access

    /// The calling thread, as a number.
    static var currentThread: UInt { UInt(pthread_self()) }

    /// Takes the writer for the calling thread (recursively).
    func acquireWriter() {
        lock.lock()
        if lockDepth == 0 { owner.store(Database.currentThread, ordering: .relaxed) }
        lockDepth += 1
    }

    /// Gives back one level of ``acquireWriter()``.
    func releaseWriter() {
        lockDepth -= 1
        if lockDepth == 0 { owner.store(0, ordering: .relaxed) }
        lock.unlock()
    }

    /// Runs `body` with exclusive use of the writer connection.
    package func withConnection<R>(_ body: (Connection) throws -> R) throws -> R {
        acquireWriter()
        defer { releaseWriter() }
        return try body(connection)
    }

    /// Whether the calling thread holds the writer (in a transaction, a save, a cascade).
    var callerHoldsWriter: Bool { owner.load(ordering: .relaxed) == Database.currentThread }

    /// Runs `body` with the writer connection, after making sure the mapping's table
    /// and indexes exist (when automatic migrations are on).
    package func withTable<R>(_ mapping: TableMapping, _ body: (Connection) throws -> R) throws -> R {
        try prepare(mapping)
        return try withConnection(body)
    }

    /// Runs a read: through a reader connection, or through the writer when the calling
    /// thread holds it (so that a transaction reads its own writes) or there is no reader.
    package func withReader<R>(_ mapping: TableMapping, _ body: (Connection) throws -> R) throws -> R {
        try withReader([mapping], body)
    }

    /// ``withReader(_:_:)-(TableMapping,_)`` for a query over several tables.
    package func withReader<R>(_ mappings: [TableMapping], _ body: (Connection) throws -> R) throws -> R {
        for mapping in mappings { try prepare(mapping) }
        guard let readers, !callerHoldsWriter, let reader = try readers.checkOut(configuredLike: self) else {
            return try withConnection(body)
        }
        defer { readers.checkIn(reader) }
        return try body(reader.connection)
    }

    /// A reader connection for a cursor that outlives this call, after preparing the table;
    /// `nil` when the calling thread holds the writer (a transaction must read its own
    /// writes), the database has no readers (in memory, read-only) or all are in use.
    package func leaseReader(for mapping: TableMapping) throws -> ReaderLease? {
        try prepare(mapping)
        guard let readers, !callerHoldsWriter, let reader = try readers.checkOut(configuredLike: self) else { return nil }
        return ReaderLease(pool: readers, reader: reader)
    }

    /// Automatic migration of several tables in one transaction (for `migrate(_:)`):
    /// all of their additions are applied, or none.
    /// - Returns: each table's drift as found before applying.
    package func migrateAutomatically(_ mappings: [TableMapping]) throws -> [TableDrift] {
        try withConnection { connection in
            var drifts: [TableDrift] = []
            try transaction {
                for mapping in mappings {
                    let drift = try mapping.schema.drift(in: connection)
                    if drift.hasAdditions { try mapping.schema.applyAdditions(drift, in: connection) }
                    drifts.append(drift)
                }
            }
            for (mapping, drift) in zip(mappings, drifts) {
                preparedTables.withLock { _ = $0.insert(mapping.serial) }
                if drift.hasLeftovers { logLeftovers(drift) }
            }
            return drifts
        }
    }

    /// Migrates the mapping's table the first time this database uses it.
    private func prepare(_ mapping: TableMapping) throws {
        guard automaticMigrations, !preparedTables.withLock({ $0.contains(mapping.serial) }) else { return }
        try withConnection { _ in
            guard !preparedTables.withLock({ $0.contains(mapping.serial) }) else { return }
            try migrate(mapping.schema)
            preparedTables.withLock { _ = $0.insert(mapping.serial) }
        }
    }

    /// Automatic migration of one table: creates it, adds missing columns and
    /// indexes, all in one transaction, and never drops or rewrites anything;
    /// what it leaves alone (extra columns, type mismatches) goes to the log.
    private func migrate(_ schema: TableSchema) throws {
        let drift = try schema.drift(in: connection)
        if drift.hasAdditions {
            try transaction { try schema.applyAdditions(drift, in: connection) }
        }
        if drift.hasLeftovers { logLeftovers(drift) }
    }

    private func logLeftovers(_ drift: TableDrift) {
        let leftovers = TableDrift(table: drift.table, extraColumns: drift.extraColumns, typeMismatches: drift.typeMismatches)
        log("schema drift: \(leftovers)")
    }

    /// Where the library's log lines go (schema drift that automatic migration leaves
    /// alone). Default: standard error, prefixed `activerecord:`; `nil` silences it.
    public var logger: (@Sendable (String) -> Void)? {
        get { (try? withConnection { _ in logHandler }) ?? nil }
        set { try? withConnection { _ in logHandler = newValue } }
    }

    private func log(_ message: String) {
        logHandler?(message)
    }

    /// Forgets which tables automatic migration checked, so that the next use checks
    /// again (after a rollback undid a `CREATE`, or versioned migrations changed the schema).
    package func forgetCheckedTables() {
        preparedTables.withLock { $0.removeAll() }
    }

    /// Runs `body` with foreign keys enforced only by an explicit check: SQLite ignores
    /// `PRAGMA foreign_keys` inside a transaction, so a table rebuild turns them off
    /// around its transaction (and checks with `foreign_key_check` inside it).
    @discardableResult
    package func withForeignKeysDeferredToCheck<R>(_ body: () throws -> R) throws -> R {
        try withConnection { connection in
            guard connection.transactionDepth == 0 else { return try body() }
            try connection.execute("PRAGMA foreign_keys=OFF")
            defer { try? connection.execute("PRAGMA foreign_keys=ON") }
            return try body()
        }
    }

    /// Calls `tracer` with the SQL text of every statement this database runs
    /// (with `?` placeholders, never the bound values); `nil` stops tracing.
    public func trace(_ tracer: (@Sendable (String) -> Void)?) {
        try? withConnection { connection in
            connection.tracer = tracer
            readers?.configure { $0.tracer = tracer }
        }
    }

    /// Whether errors from failing statements include the SQL with its bound
    /// values written in (``ActiveRecordError/expandedSQL``). Off by default,
    /// because values may be personal data; turn it on to debug.
    public var includesBoundValuesInErrors: Bool {
        get { (try? withConnection { $0.includesBoundValuesInErrors }) ?? false }
        set {
            try? withConnection { connection in
                connection.includesBoundValuesInErrors = newValue
                readers?.configure { $0.includesBoundValuesInErrors = newValue }
            }
        }
    }

    // MARK: Raw SQL

    /// Runs one SQL statement with its `?` parameters bound to `arguments`.
    ///
    /// ```swift
    /// try db.execute("UPDATE \"User\" SET \"age\" = ? WHERE \"name\" = ?", [.integer(30), .text("Alex")])
    /// ```
    /// - Throws: SQLite errors, with the SQL text.
    public func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        try withConnection { try $0.execute(sql, arguments) }
    }

    /// Runs one SQL query with its `?` parameters bound and returns every row.
    public func rows(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> [[DatabaseValue]] {
        try withConnection { try $0.rows(sql, arguments) }
    }

    /// The names of the tables in the database (not SQLite's own), sorted.
    public func tableNames() throws -> [String] {
        try rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
            .compactMap { row in if case .text(let name) = row.first { name } else { nil } }
    }

    /// Deletes every row of every table, keeping the tables, in one transaction.
    /// - Throws: SQLite errors; on error nothing is deleted.
    public func clear() throws {
        try transaction {
            for table in try tableNames() {
                try execute("DELETE FROM \(table.quotedIdentifier)")
            }
        }
    }
}

