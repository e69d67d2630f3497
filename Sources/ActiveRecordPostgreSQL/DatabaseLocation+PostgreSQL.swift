import ARCore

extension DatabaseLocation {
    /// A PostgreSQL database, reached through libpq.
    ///
    /// ```swift
    /// import ActiveRecord
    /// import ActiveRecordPostgreSQL
    ///
    /// try Database.configure(.postgres("postgresql://app:secret@db.example.com/app"))
    /// try Database.configure(.postgres("host=/var/run/postgresql dbname=app"))   // Unix socket
    /// ```
    ///
    /// The models, queries, relations, validations, callbacks, transactions and migrations
    /// are those of SQLite; the README's "When one file is not enough" says what differs. The
    /// tables are those of the connection's current schema (the first of its `search_path`).
    ///
    /// - Parameters:
    ///   - connection: a `postgresql://` URL or `key=value` connection string, as libpq reads
    ///     them (Unix socket or TCP; `PG*` environment variables fill what it leaves out).
    ///   - maximumConnections: how many connections the database opens at most. Each
    ///     transaction, and each open cursor, holds one while it runs; other work holds one per
    ///     statement. Several threads write at once, each in its own transaction.
    ///   - connectionWait: how long a thread waits for a connection when all are held, before
    ///     it fails with `.busy`.
    public static func postgres(
        _ connection: String, maximumConnections: Int = 10, connectionWait: Duration = .seconds(30)
    ) -> DatabaseLocation {
        .engine(description: (try? PostgreSQLEngine.describe(connection)) ?? "PostgreSQL", identity: connection) { readOnly in
            PostgreSQLEngine(
                conninfo: connection, readOnly: readOnly, maximumConnections: max(1, maximumConnections),
                connectionWait: connectionWait, description: try PostgreSQLEngine.describe(connection))
        }
    }
}
