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
/// A `Database` is `Sendable`: every use of its connection is serialized, and
/// a transaction holds the connection for its thread until it ends.
public final class Database: @unchecked Sendable {
    // @unchecked Sendable: `connection`, `preparedTables` and `logHandler` are only touched
    // while `lock` is held. The lock is recursive so that a transaction's
    // thread can save and fetch inside its own transaction.
    private let lock = NSRecursiveLock()
    private let connection: Connection
    private var preparedTables: Set<UInt64> = []
    private var logHandler: (@Sendable (String) -> Void)? = { message in
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

    /// Runs `body` with exclusive use of the connection.
    package func withConnection<R>(_ body: (Connection) throws -> R) throws -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }

    /// Runs `body` with the connection, after making sure the mapping's table
    /// and indexes exist (when automatic migrations are on).
    package func withTable<R>(_ mapping: TableMapping, _ body: (Connection) throws -> R) throws -> R {
        lock.lock()
        defer { lock.unlock() }
        if automaticMigrations, !preparedTables.contains(mapping.serial) {
            try migrate(mapping.schema)
            preparedTables.insert(mapping.serial)
        }
        return try body(connection)
    }

    /// Automatic migration of one table: creates it, adds missing columns and
    /// indexes, all in one transaction, and never drops or rewrites anything;
    /// what it leaves alone (extra columns, type mismatches) goes to the log.
    private func migrate(_ schema: TableSchema) throws {
        let drift = try schema.drift(in: connection)
        if drift.hasAdditions {
            try transaction { try schema.applyAdditions(drift, in: connection) }
        }
        if drift.hasLeftovers {
            let leftovers = TableDrift(table: drift.table, extraColumns: drift.extraColumns, typeMismatches: drift.typeMismatches)
            log("schema drift: \(leftovers)")
        }
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

    /// Forgets which tables were checked (after a rollback may have undone a `CREATE`).
    private func forgetPreparedTables() { preparedTables.removeAll() }

    /// Forgets which tables automatic migration checked, so that the next use checks
    /// again (after versioned migrations changed the schema).
    package func forgetCheckedTables() {
        try? withConnection { _ in preparedTables.removeAll() }
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
        lock.lock()
        defer { lock.unlock() }
        connection.tracer = tracer
    }

    /// Whether errors from failing statements include the SQL with its bound
    /// values written in (``ActiveRecordError/expandedSQL``). Off by default,
    /// because values may be personal data; turn it on to debug.
    public var includesBoundValuesInErrors: Bool {
        get { (try? withConnection { $0.includesBoundValuesInErrors }) ?? false }
        set { try? withConnection { $0.includesBoundValuesInErrors = newValue } }
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

extension Database {
    /// Runs `body` in a transaction of this database.
    ///
    /// Commits when `body` returns; rolls back and rethrows when it throws;
    /// rolls back silently when it throws ``Rollback``. A transaction inside
    /// a transaction is a savepoint that rolls back alone.
    ///
    /// ```swift
    /// try db.transaction {
    ///     try alex.save()
    ///     if alex.name.isEmpty { throw Rollback() }
    /// }
    /// ```
    /// - Returns: whether the work was committed or rolled back by ``Rollback``.
    @discardableResult
    public func transaction(_ body: () throws -> Void) throws -> TransactionOutcome {
        lock.lock()
        defer { lock.unlock() }
        let depth = connection.transactionDepth
        let savepoint = "activerecord_\(depth)"
        try connection.execute(depth == 0 ? "BEGIN IMMEDIATE" : "SAVEPOINT \(savepoint)")
        connection.transactionDepth += 1
        connection.rollbackActions.append([])
        defer { connection.transactionDepth -= 1 }
        do {
            try body()
        } catch {
            try rollback(depth: depth, savepoint: savepoint)
            if error is Rollback { return .rolledBack }
            throw error
        }
        do {
            try connection.execute(depth == 0 ? "COMMIT" : "RELEASE \(savepoint)")
        } catch {
            try? rollback(depth: depth, savepoint: savepoint)
            throw error
        }
        // Committed: the parent level now owns what to undo (nothing, at the top).
        let undo = connection.rollbackActions.removeLast()
        if !connection.rollbackActions.isEmpty { connection.rollbackActions[connection.rollbackActions.count - 1] += undo }
        return .committed
    }

    private func rollback(depth: Int, savepoint: String) throws {
        // Put records back as they were before this level: ids, saved values, dropped flags.
        for entry in connection.rollbackActions.removeLast().reversed() { entry.undo() }
        forgetPreparedTables()
        if depth == 0 {
            try connection.execute("ROLLBACK")
        } else {
            try connection.execute("ROLLBACK TO \(savepoint)")
            try connection.execute("RELEASE \(savepoint)")
        }
    }

    /// ``transaction(_:)`` on the ``current`` database.
    @discardableResult
    public static func transaction(_ body: () throws -> Void) throws -> TransactionOutcome {
        try current.transaction(body)
    }
}

/// Throw this inside ``Database/transaction(_:)`` to roll back without an error.
public struct Rollback: Error, Sendable {
    /// Makes the rollback signal.
    public init() {}
}

/// How a transaction ended.
public enum TransactionOutcome: Sendable, Equatable {
    /// The work was committed.
    case committed
    /// The block threw ``Rollback``; the work was undone.
    case rolledBack
}
