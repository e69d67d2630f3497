@_spi(Engines) import ARCore

/// The PostgreSQL location: `import ActiveRecordPostgreSQL` adds it to the locations of
/// `DatabaseLocation`, beside those of SQLite (`.inMemory`, `.file(_:)`, `.temporary`, ...).
extension DatabaseLocation {
    /// A PostgreSQL database, reached through libpq.
    ///
    /// ```swift
    /// import ActiveRecord
    /// import ActiveRecordPostgreSQL
    ///
    /// try Database.configure(.postgres("postgresql://app:secret@db.example.com/app"))
    /// try Database.configure(.postgres("host=/var/run/postgresql dbname=app"))   // Unix socket
    /// try Database.configure(.postgres(url, connectTimeout: .seconds(3)))
    /// try Database.configure(.postgres(bouncerURL, transactionPooling: true))   // pgbouncer, pool_mode = transaction
    /// ```
    ///
    /// The models, queries, relations, validations, callbacks, transactions and migrations
    /// are those of SQLite; the PostgreSQL article of the documentation says what differs. The
    /// tables are those of the connection's current schema (the first of its `search_path`).
    ///
    /// Nothing waits without a bound by default: connecting gives up after `connectTimeout`,
    /// and TCP connections have keepalives (`keepalives_idle=30`, `keepalives_interval=10`,
    /// `keepalives_count=3`) and `tcp_user_timeout=60000`, so that a server that vanished is
    /// noticed in about a minute. The connection string's own `connect_timeout`, `keepalives…`
    /// or `tcp_user_timeout` win over these. A server that stops answering but whose machine
    /// still acknowledges (a stopped process) is bounded by a statement timeout
    /// (`Database.statementTimeout`), which is none by default.
    ///
    /// The password is never shown: `description`, `Database.path`, `dump`, and every
    /// error and log line, libpq's own messages included, have it masked (`***`), however the
    /// string is malformed.
    ///
    /// - Parameters:
    ///   - connection: a `postgresql://` URL or `key=value` connection string, as libpq reads
    ///     them (Unix socket or TCP; `PG*` environment variables fill what it leaves out). A
    ///     NUL byte in it is refused (`.configuration`): libpq would stop reading there.
    ///   - replicas: connection strings of replicas (streaming standbys of the primary) that
    ///     reads outside transactions go to, spread across them; writes and transactions go to
    ///     `connection`. A read waits for a replica to have replayed its session's commits (see
    ///     `Database.replicaWait`), else reads the primary; a replica that cannot be reached is
    ///     skipped, and tried again after a pause (1 s, doubling to 30 s). For failover, give
    ///     `connection` as a libpq multi-host string with `target_session_attrs=read-write`: new
    ///     connections then find the new primary. The Deployments article says what each
    ///     topology guarantees.
    ///   - maximumConnections: how many connections the database opens at most (to each of
    ///     the primary and the replicas). Each
    ///     transaction, and each open cursor, holds one while it runs; other work holds one per
    ///     statement. Several threads write at once, each in its own transaction.
    ///   - connectionWait: how long a thread waits for a connection when all are held, before
    ///     it fails with `.busy`.
    ///   - connectTimeout: how long opening a connection may take before it fails with
    ///     `.cannotOpen` (libpq's `connect_timeout`: whole seconds, rounded up, at least 2 —
    ///     libpq's minimum — and per host address tried). `nil`: 10 seconds, or
    ///     `PGCONNECT_TIMEOUT` when it is set.
    ///   - transactionPooling: `true` when the connection string names a pooler in transaction
    ///     pooling mode (pgbouncer's `pool_mode = transaction`), which hands each transaction, and
    ///     each statement outside one, whichever server connection is free. The library then
    ///     leaves nothing on a server connection past the transaction that used it: no named
    ///     prepared statement (each statement runs unnamed, parsed and planned by the server every
    ///     time; its results are binary after its first run, as elsewhere), and no session `SET`
    ///     (the statement timeout, and a read-only database's `transaction_read_only`, are set
    ///     for the current transaction only, with `set_config(…, true)` sent with the statement
    ///     that needs them; a statement outside a transaction carries them in its own implicit
    ///     transaction). What it sets at connect elsewhere, it checks there instead:
    ///     `extra_float_digits` ≥ 1 on PostgreSQL 12 or later, `standard_conforming_strings = on`,
    ///     `bytea_output = hex` (`.configuration` otherwise). `false` (the default): a direct
    ///     server, or a pooler in session mode; nothing changes. The library does not detect the
    ///     mode (a pooler's presence shows, its mode does not): say it here. What needs a
    ///     session does not work there (`LISTEN`, session advisory locks, a `SET` run through
    ///     `execute`). The PostgreSQL article says what it costs.
    public static func postgres(
        _ connection: String, replicas: [String] = [], maximumConnections: Int = 10, connectionWait: Duration = .seconds(30),
        connectTimeout: Duration? = nil, transactionPooling: Bool = false
    ) -> DatabaseLocation {
        let mask = PasswordMask(connection)
        let description = (try? PostgreSQLEngine.describe(connection, mask: mask)) ?? "PostgreSQL"
        // The same server with another connect timeout is another location (a NUL byte
        // separates: the connection string cannot hold one).
        var identity = connectTimeout.map { "\(connection)\u{0}connectTimeout=\($0)" } ?? connection
        for replica in replicas { identity += "\u{0}replica=\(replica)" }
        let replicaMasks = replicas.map(PasswordMask.init)
        if transactionPooling { identity += "\u{0}transactionPooling" }
        return .engine(description: description, identity: identity) { readOnly in
            let description = try PostgreSQLEngine.describe(connection, mask: mask)
            let parameters = PostgreSQLEngine.connectionParameters(connection, connectTimeout: connectTimeout)
            let replicaParameters = try zip(replicas, replicaMasks).enumerated().map { index, replica in
                let (conninfo, mask) = replica
                let parameters = PostgreSQLEngine.connectionParameters(conninfo, connectTimeout: connectTimeout)
                let description = "replica \(index) at " + (try PostgreSQLEngine.describe(conninfo, mask: mask))
                return (keywords: parameters.keywords, values: parameters.values, description: description, mask: mask)
            }
            return PostgreSQLEngine(
                keywords: parameters.keywords, values: parameters.values, replicas: replicaParameters, readOnly: readOnly,
                maximumConnections: max(1, maximumConnections), connectionWait: connectionWait, description: description,
                mask: mask, namespace: PostgreSQLEngine.databaseName(connection, mask: mask),
                transactionPooling: transactionPooling)
        }
    }
}
