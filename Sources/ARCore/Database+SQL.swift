import Foundation

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
    private func configureConnections(_ apply: @escaping @Sendable (Connection) -> Void) {
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
    public func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        try withConnection { connection in
            try connection.execute(sql, arguments)
            connection.noteChangeOfAnyTable()
        }
    }

    /// Runs one SQL query with its `?` parameters bound and returns every row.
    public func rows(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> [[DatabaseValue]] {
        try withConnection { try $0.rows(sql, arguments) }
    }

    /// The names of the tables in the database (not the engine's own), sorted.
    public func tableNames() throws -> [String] {
        try withConnection { try dialect.tableNames($0) }
    }

    /// Deletes every row of every table, keeping the tables, in one transaction.
    /// - Throws: the engine's errors; on error nothing is deleted.
    public func clear() throws {
        try transaction {
            for table in try tableNames() {
                try execute("DELETE FROM \(table.quotedIdentifier)")
            }
        }
    }

    /// Where the library's log lines go (schema drift that automatic migration leaves
    /// alone). Default: standard error, prefixed `activerecord:`; `nil` silences it.
    public var logger: (@Sendable (String) -> Void)? {
        get { logHandler.withLock { $0 } }
        set { logHandler.withLock { $0 = newValue } }
    }

    func log(_ message: String) {
        logHandler.withLock { $0 }?(message)
    }
}
