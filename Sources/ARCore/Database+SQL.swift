#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Raw SQL, tracing and logging.
extension Database {
    /// Calls `tracer` with the SQL text of every statement this database runs
    /// (with `?` placeholders, never the bound values); `nil` stops tracing.
    public func trace(_ tracer: (@Sendable (String) -> Void)?) {
        configureConnections { $0.tracer = tracer }
    }

    /// Whether errors from failing statements include the SQL with its bound
    /// values written in (``ActiveRecordError/expandedSQL``). Off by default,
    /// because values may be personal data; turn it on to debug.
    public var includesBoundValuesInErrors: Bool {
        get { boundValuesInErrors.withLock { $0 } }
        set {
            boundValuesInErrors.withLock { $0 = newValue }
            configureConnections { $0.includesBoundValuesInErrors = newValue }
        }
    }

    /// Applies a setting to every connection: the writer at once, readers and pooled
    /// connections before their next use.
    func configureConnections(_ apply: @escaping @Sendable (Connection) -> Void) {
        if let writer {
            writer.acquire()
            apply(writer.connection)
            writer.readers?.configure(apply)
            writer.release()
        }
        pool?.configure(apply)
    }

    // MARK: Raw SQL

    /// Runs one SQL statement with its `?` parameters bound to `arguments`.
    ///
    /// ```swift
    /// try db.execute("UPDATE \"User\" SET \"age\" = ? WHERE \"name\" = ?", [.integer(30), .text("Alex")])
    /// ```
    /// - Throws: the engine's errors, with the SQL text.
    /// Observers count it as changing every table (see ``observe(tables:fetch:onChange:)``).
    ///
    /// A string literal goes to ``execute(_:)-(SQL)`` (alone) or ``execute(_:_:)-(SQL,_)`` (with
    /// arguments) instead, whose `\(value)` are bound (this form is disfavoured, so that
    /// interpolation never splices a value): this one takes a `String` variable.
    @_disfavoredOverload
    public func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        try withConnection { connection in
            try connection.execute(sql, arguments)
            connection.noteChangeOfAnyTable()
        }
    }

    /// Runs one SQL query with its `?` parameters bound and returns every row.
    ///
    /// Inside a ``read(_:)`` block (and an async `read`) it reads through the block's connection,
    /// in its snapshot, as the block's other reads do; elsewhere through the connection writes use.
    ///
    /// A string literal goes to ``rows(_:)-(SQL)`` (alone) or ``rows(_:_:)-(SQL,_)`` (with
    /// arguments) instead, whose `\(value)` are bound (this form is disfavoured, so that
    /// interpolation never splices a value): this one takes a `String` variable.
    @_disfavoredOverload
    public func rows(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> [[DatabaseValue]] {
        if let scoped = readScope { return try scoped.with { try $0.rows(sql, arguments) } }
        return try withConnection { try $0.rows(sql, arguments) }
    }

    /// The names of the tables in the database (not the engine's own), sorted.
    public func tableNames() throws -> [String] {
        try withConnection { try dialect.tableNames($0) }
    }

    /// Deletes every row of every table, keeping the tables, in one transaction, and
    /// restarts ids: each table's next record gets id 1, on every engine. The library's own
    /// tables keep their rows: `activerecord_migrations`, the record of applied migrations, so
    /// that a migrator applied again runs nothing.
    ///
    /// ```swift
    /// try db.clear()          // SQLite: DELETE FROM each table; PostgreSQL: TRUNCATE … RESTART IDENTITY
    /// ```
    /// - Throws: the engine's errors; on error nothing is deleted.
    public func clear() throws {
        try transaction {
            try withConnection { connection in
                let tables = try dialect.tableNames(connection).filter { name in
                    !Self.bookkeepingTables.contains { dialect.sameName($0, name) }
                }
                guard !tables.isEmpty else { return }
                try dialect.clear(tables, connection)
                connection.noteChangeOfAnyTable()
            }
        }
    }

    /// The tables where the library keeps its own records, which ``clear()`` leaves alone:
    /// `activerecord_migrations`, the versioned migrations a database has run, and
    /// `activerecord_commits`, the commit tokens of ``retrying(attempts:isolation:_:)``.
    package static let bookkeepingTables = [migrationsTableName, commitTokensTableName]

    /// The table of ``retrying(attempts:isolation:_:)``'s commit tokens (on an engine whose
    /// COMMIT can be lost in flight).
    package static let commitTokensTableName = "activerecord_commits"

    /// The table where a database records the versioned migrations it ran (ARMigrations'
    /// `Migrator.tableName`).
    package static let migrationsTableName = "activerecord_migrations"

    /// Where the library logs, through swift-log:
    /// - every statement's SQL at `.trace` (with `?` placeholders; the values only with
    ///   ``logsBoundValues``),
    /// - connections a pool opens, and tables automatic migration creates, at `.debug`,
    /// - columns and indexes automatic migration adds to an existing table, each versioned
    ///   migration step, and a new database's steps recorded as applied, at `.info`,
    /// - a database moved from the old default location, and schema drift automatic
    ///   migration leaves alone, at `.warning`.
    ///
    /// Default: `Logger(label: "activerecord")`, which goes wherever the program's
    /// `LoggingSystem.bootstrap` sends logs, with the library's lines from `.warning` only,
    /// so that a program that configured nothing prints nothing on success (swift-log's
    /// default handler prints from `.info`, to standard error); a bootstrap that lowered the
    /// level to `.debug` or `.trace` gets every line from that level. A logger the program
    /// sets is used exactly as given: its level decides. `nil` silences the library. The
    /// logger's level is read when it is set: set it again after changing its level.
    ///
    /// ```swift
    /// var logger = Logger(label: "app.db")
    /// logger.logLevel = .trace          // the SQL too
    /// db.logger = logger
    /// ```
    public var logger: Logger? {
        get { loggerStorage.withLock { $0.logger } }
        set {
            loggerStorage.withLock { $0 = (newValue, .trace) }
            // Per connection, only loggers that take the level: the hot path checks for nil.
            let sql = newValue.flatMap { $0.logLevel <= .trace ? $0 : nil }
            let events = newValue.flatMap { $0.logLevel <= .debug ? $0 : nil }
            configureConnections {
                $0.sqlLogger = sql
                $0.eventLogger = events
            }
        }
    }

    /// Whether the SQL ``logger`` logs at `.trace` carries each statement's bound values
    /// (metadata `expandedSQL`: the SQL with the values written in; the line is then written
    /// once the statement has run). Off by default, like ``includesBoundValuesInErrors``:
    /// values may be personal data.
    public var logsBoundValues: Bool {
        get { boundValuesInLog.withLock { $0 } }
        set {
            boundValuesInLog.withLock { $0 = newValue }
            configureConnections { $0.logsBoundValues = newValue }
        }
    }

    /// Logs `message` at `level` to ``logger`` (when there is one and it takes the level; the
    /// default logger, from `.warning` unless the bootstrap lowered its level).
    package func log(_ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, metadata: Logger.Metadata? = nil) {
        let (logger, floor) = loggerStorage.withLock { $0 }
        guard let logger, level >= floor else { return }
        logger.log(level: level, message(), metadata: metadata)
    }
}
