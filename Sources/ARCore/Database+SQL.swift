import Foundation

/// Raw SQL, tracing and logging.
extension Database {
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

    /// Runs `body` on the writer with SQLite's double-quoted-string misfeature off, so that a
    /// double-quoted name that is no column is an error rather than a string (how a rebuild
    /// checks that the views it remade still name real columns).
    package func withStrictIdentifiers<R>(_ body: () throws -> R) throws -> R {
        try withConnection { connection in
            connection.setDoubleQuotedStrings(false)
            defer { connection.setDoubleQuotedStrings(true) }
            return try body()
        }
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

    /// Where the library's log lines go (schema drift that automatic migration leaves
    /// alone). Default: standard error, prefixed `activerecord:`; `nil` silences it.
    public var logger: (@Sendable (String) -> Void)? {
        get { (try? withConnection { _ in logHandler }) ?? nil }
        set { try? withConnection { _ in logHandler = newValue } }
    }

    func log(_ message: String) {
        logHandler?(message)
    }
}
