#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The backend boundary: what a database engine provides, so that everything above it —
// records, the query compiler, relations, validations, migrations, the C shim — is written
// once. ARCore names no engine. Two engines implement it: SQLite (the `ARSQLite` target,
// which `import ActiveRecord` brings as the embedded default) and PostgreSQL (the
// `ActiveRecordPostgreSQL` target, over libpq). The protocols are `@_spi(Engines) public`, so
// that a third engine can live in a package of its own: it implements these four protocols,
// offers a `DatabaseLocation` that opens it (`DatabaseLocation.engine(description:identity:open:)`),
// and proves itself with the conformance suite (`ARConformance`'s `EngineConformance.runAll()`).
//
// Above the boundary, ``Connection`` and ``Statement`` wrap an engine's connection and
// statement and call every engine alike, through the protocols, once per row rather than
// once per value: a row of parameters is bound in one call, and each row is read in one call
// into cells (``Cell``) that the record decoders read.

/// An engine and where its database is: how to open connections, how they are shared, and
/// the engine's SQL dialect.
@_spi(Engines) public protocol DatabaseEngine: Sendable {
    /// The engine's SQL dialect.
    var dialect: any SQLDialect { get }
    /// How the database shares its connections between threads.
    var sharing: ConnectionSharing { get }
    /// Where the database is, for messages (a path, or a server without its password).
    var description: String { get }
    /// Lines to log when the database opens (a database moved from an old default location).
    var notes: [String] { get }
    /// The database's name for tracing (OpenTelemetry's `db.namespace`), when it has one: a
    /// server's database name, an embedded database's file.
    var namespace: String? { get }
    /// How many replicas the database has (``ConnectionRole/replica(_:)`` connects to each):
    /// servers that follow the primary and serve reads outside transactions. Only with
    /// ``ConnectionSharing/pool(maximum:wait:)`` sharing.
    var replicaCount: Int { get }
    /// Opens one connection.
    /// - Throws: `.cannotOpen` (and the engine's more specific codes) saying why.
    func connect(_ role: ConnectionRole) throws -> any EngineConnection

    // MARK: Commits made elsewhere, for observers (see ``Database/observe(tables:fetch:onChange:)``)
    // An engine learns of the commits that other processes and other `Database` values make
    // in one of two ways, or not at all (the defaults): the database polls its writer's
    // ``EngineConnection/commitVersion``, or the engine listens itself (``listenForCommits(_:warn:)``).

    /// How often the database reads its writer connection's ``EngineConnection/commitVersion``
    /// while it has observers (`nil`, the default: never).
    var commitPollInterval: Duration? { get }
    /// Starts listening for commits made by connections other than the database's own (which
    /// the database publishes itself): `heard` is called, on the listener's own thread, once
    /// for each batch of commits heard, and with ``ExternalCommit/anyTable`` when some may have
    /// been missed (the listener reconnected). `warn` says what the program should know (a
    /// table whose commits cannot be heard, a listener that lost its server). `nil`, the
    /// default: the engine cannot listen.
    /// - Throws: when the listener cannot start (no thread for it: see `startThread`).
    func listenForCommits(
        _ heard: @escaping @Sendable (ExternalCommit) -> Void, warn: @escaping @Sendable (String) -> Void
    ) throws -> (any CommitListener)?
}

extension DatabaseEngine {
    /// None, unless the engine says.
    public var namespace: String? { nil }
    /// None, unless the engine says.
    public var replicaCount: Int { 0 }
    /// Never, unless the engine says.
    public var commitPollInterval: Duration? { nil }
    /// None, unless the engine says.
    public func listenForCommits(
        _ heard: @escaping @Sendable (ExternalCommit) -> Void, warn: @escaping @Sendable (String) -> Void
    ) -> (any CommitListener)? { nil }
}

/// What an engine heard of commits made outside the database (``DatabaseEngine/listenForCommits(_:warn:)``,
/// ``EngineConnection/commitVersion``).
@_spi(Engines) public enum ExternalCommit: Sendable, Equatable {
    /// Commits changed these tables.
    case tables(Set<String>)
    /// Commits may have changed any table: which ones is unknown, or commits may have been
    /// missed. Every observer fetches again.
    case anyTable
}

/// An engine's listener for commits made elsewhere (``DatabaseEngine/listenForCommits(_:warn:)``),
/// started with a database's first observer and stopped with its last.
@_spi(Engines) public protocol CommitListener: AnyObject, Sendable {
    /// Makes commits to `tables` heard too (the engine installs what it needs for them), and
    /// returns once they are, or after `timeout` (the listener keeps trying, and says
    /// ``ExternalCommit/anyTable`` once it succeeds).
    func watch(_ tables: Set<String>, timeout: Duration)
    /// Stops listening and releases the listener's connection; `heard` is not called after
    /// it returns. A second call does nothing.
    func stop()
}

/// What a connection is opened for.
@_spi(Engines) public enum ConnectionRole: Sendable, Equatable {
    /// Reads and writes.
    case writer
    /// Reads outside transactions only (an engine may make it unable to write).
    case reader
    /// Reads outside transactions, on the replica of that index (from 0; see
    /// ``DatabaseEngine/replicaCount``).
    case replica(Int)
}

/// How a database shares its connections between threads.
@_spi(Engines) public enum ConnectionSharing: Sendable {
    /// One writer connection, used by one thread at a time (a transaction holds it until it
    /// ends), and up to `readers` reader connections for reads outside transactions. SQLite:
    /// its writers are serialized by the file anyway.
    case singleWriter(readers: Int)
    /// A pool of up to `maximum` connections: each transaction owns one while it runs, so
    /// several threads write at once. A thread that finds every connection in use waits up
    /// to `wait`, then fails with `.busy`. PostgreSQL.
    case pool(maximum: Int, wait: Duration)
}

/// How a statement will be used, so that the engine prepares it accordingly.
@_spi(Engines) public enum StatementUse: Sendable {
    /// Cached by the connection and run many times (the engine may keep it prepared).
    case cached
    /// Run once or a few times, then finalized.
    case once
    /// Stepped by a cursor at its caller's pace, holding constant memory however many
    /// rows it returns. It runs inside a transaction of its connection.
    case cursor
}

/// One connection of an engine. Confined: used by one thread at a time (the database hands
/// it out), and finalizes none of its statements itself. A class, so that a call through the
/// protocol (``changedRowCount`` after each write) reaches it without unboxing an existential.
@_spi(Engines) public protocol EngineConnection: AnyObject {
    /// Prepares exactly one statement, with `?` placeholders (as all of the library's SQL).
    /// - Throws: the engine's error, with the SQL; `.misuse` for more than one statement.
    func prepare(_ sql: String, _ use: StatementUse) throws -> any EngineStatement
    /// How many rows the last `INSERT`, `UPDATE` or `DELETE` changed.
    var changedRowCount: Int { get }
    /// Whether the connection is in a transaction that a failed statement aborted, so that
    /// it can only roll back (PostgreSQL; SQLite's transactions survive a failed statement).
    var isInFailedTransaction: Bool { get }
    /// Whether the engine has a transaction open on the connection (after `BEGIN`, until it
    /// ends, even aborted): `false` when the engine ended one by itself (SQLite rolls a whole
    /// transaction back when a write in it is interrupted, or runs out of memory or disk).
    var hasOpenTransaction: Bool { get }
    /// Whether the connection can still be used (a server connection may have been lost).
    var isUsable: Bool { get }
    /// Limits the statements that run next to `timeout` each (`nil`: no limit), until the
    /// next call. Called before each statement while a limit applies, and once with `nil`
    /// after. A statement over the limit fails with `.timeout`.
    func setStatementTimeout(_ timeout: Duration?)
    /// Stops the statement running on the connection, if any, as soon as the engine can
    /// (an interrupt of the engine's own, or a cancel request to the server): the statement fails with
    /// an error. Called from ANOTHER thread than the one running the statement (an async
    /// call's task was cancelled, or its deadline passed), while the connection is open; it
    /// must be safe there, and a no-op when no statement runs.
    func interrupt()
    /// Closes the connection. Its statements must be finalized first.
    func close()
    /// How far the server's data goes, as a position in its replication stream that grows with
    /// every commit and is the same on the primary and its replicas: on a primary, where its
    /// log is written to (after the caller's last commit); on a replica, how far it has replayed
    /// the primary's. `nil` (the default) for an engine without replicas.
    func replicationPosition() throws -> UInt64?
    /// Whether the connection still works as far as can be told without a round trip (a
    /// server connection: its socket has not been closed by the server). Called on a replica's
    /// idle connection before a read uses it, so that a replica restarted or stopped meanwhile
    /// costs a reconnect, not a failed read. ``isUsable`` by default.
    func checkAlive() -> Bool
    /// A number that changes when another connection (another process, another `Database`)
    /// commits to the database, and never for this connection's own commits; `nil`, the
    /// default, when the engine cannot say. Read on the writer, outside transactions, every
    /// ``DatabaseEngine/commitPollInterval`` while the database has observers.
    var commitVersion: Int64? { get }
    /// An engine's faster way to insert `rowCount` rows (2 or more) of `columns` into `table`
    /// than one ``SQLDialect/insertSQL(into:columns:)`` per row, or `nil` (the default) for
    /// none: the library then runs that statement once per row. Called inside a transaction,
    /// which the library rolls back when the bulk insert fails. `trace` is called with each
    /// SQL statement the bulk insert runs.
    func prepareBulkInsert(into table: String, columns: [String], rowCount: Int, trace: ((String) -> Void)?) throws
        -> (any EngineBulkInsert)?
}

extension EngineConnection {
    /// None, unless the engine has replicas.
    public func replicationPosition() throws -> UInt64? { nil }
    /// ``isUsable``, unless the engine can tell more.
    public func checkAlive() -> Bool { isUsable }
    /// Unknown, unless the engine says.
    public var commitVersion: Int64? { nil }
    /// None, unless the engine has one: one `INSERT` per row.
    public func prepareBulkInsert(into table: String, columns: [String], rowCount: Int, trace: ((String) -> Void)?) throws
        -> (any EngineBulkInsert)? { nil }
}

/// Many rows inserted into one table at once (``EngineConnection/prepareBulkInsert(into:columns:rowCount:trace:)``):
/// the rows are appended in order, and the engine inserts them when it likes (some while
/// they are appended, the rest at ``finish()``), giving each its id.
@_spi(Engines) public protocol EngineBulkInsert: AnyObject {
    /// Appends the next row: one cell per column, in the order of the columns the bulk insert
    /// was prepared with. Text and bytes are read during the call only.
    /// - Throws: ``BulkInsertFailure`` (a row the engine cannot hold, or the failure of rows
    ///   the engine inserted meanwhile).
    func append(_ row: UnsafeBufferPointer<Cell>) throws
    /// Inserts the rows not yet inserted, and returns the id of every row appended, in the
    /// order appended.
    /// - Throws: ``BulkInsertFailure``.
    func finish() throws -> [Int64]
}

/// A failed bulk insert (``EngineBulkInsert``): the error, and the position (from 0, in the
/// order appended) of the row that caused it, when the engine can tell.
@_spi(Engines) public struct BulkInsertFailure: Error {
    /// The row that failed, from 0; `nil` when the engine cannot tell.
    public var row: Int?
    /// What failed (an ``ActiveRecordError``, with the SQL).
    public var error: any Error

    /// A failure of row `row` (from 0), or of the rows in general.
    public init(row: Int?, _ error: any Error) {
        self.row = row
        self.error = error
    }
}

/// One prepared statement of an engine connection: bind a row of parameters, step through
/// its rows, read each row whole. Whole-row operations, so that the library calls through
/// the protocol once per row, not once per value, and each engine reads its own format its
/// own way. Parameters are 1-based, result columns 0-based.
@_spi(Engines) public protocol EngineStatement: AnyObject {
    /// How many `?` parameters the statement has.
    var parameterCount: Int32 { get }
    /// Binds `parameters` to parameters 1… (`parameters.count` is ``parameterCount``). The
    /// bytes of a text or blob cell stay valid, unchanged, until the statement is bound again,
    /// reset or finalized: an engine may read them in place until then. Text is valid UTF-8
    /// (not followed by a NUL byte).
    /// - Throws: `.invalidValue` for a value the engine cannot hold (naming the parameter).
    func bind(_ parameters: UnsafeBufferPointer<Cell>) throws
    /// Runs the statement on the first call, then moves to the next row: `true` while there is one.
    /// - Throws: the engine's error mapped to an ``ActiveRecordError`` (constraint kinds
    ///   recognisable, see ``ActiveRecordError/isUniqueViolation``), with the SQL. The
    ///   statement is reset.
    func step() throws -> Bool
    /// The current row (after a step that returned `true`, or ``upsert()``): one cell per
    /// result column, text and bytes borrowed from the engine until the next step, reset or
    /// finalize. Text is UTF-8 not yet validated, followed by a NUL byte (outside the cell).
    func row() -> UnsafeBufferPointer<Cell>
    /// Binds `parameters` as ``bind(_:)`` does, then runs the first step as ``step()`` does: a
    /// statement bound and run in one call through the protocol rather than two.
    func step(binding parameters: UnsafeBufferPointer<Cell>) throws -> Bool
    /// Runs an `INSERT` made by ``SQLDialect/insertSQL(into:columns:)`` and returns the new row's id.
    func insert() throws -> Int64
    /// Binds `parameters` as ``bind(_:)`` does, then runs ``insert()``, in one call.
    func insert(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int64
    /// Runs an upsert made by ``SQLDialect/upsertSQL(into:columns:conflictColumns:updateColumns:returning:)``
    /// to its one row, which it leaves readable (``row()``, the `returning` columns from 0),
    /// and says whether the statement inserted that row (`false`: it updated an existing one).
    /// - Throws: the engine's error; `.misuse` when the upsert returned no row.
    func upsert() throws -> Bool
    /// Ready to run again: rows released, every parameter bound to `NULL`.
    func reset()
    /// Ready to run again, the parameters left as bound (the caller binds them all again).
    func resetKeepingBindings()
    /// Binds `parameters` as ``bind(_:)`` does, runs a statement that returns no rows (a
    /// `DELETE`) to its end, and leaves it ready to run again with the parameters left as
    /// bound (``resetKeepingBindings()``), in one call: the rows it changed, or `nil` when the
    /// connection says (``EngineConnection/changedRowCount``).
    /// - Throws: as ``step()``.
    func execute(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int?
    /// Releases the statement (it is not used again).
    func finalize()
    /// The SQL text with the bound values written in (for ``Database/includesBoundValuesInErrors``).
    func expandedSQL() -> String?
    /// The number of result columns (known once the statement has run: read it after a step).
    var columnCount: Int32 { get }
    /// A result column's name.
    func columnName(_ index: Int32) -> String
    /// After a step, how many rows the statement is known to return at least (an engine that
    /// holds its whole result knows them all; 0: it cannot say): a fetch reserves room for
    /// that many records rather than growing its array as it goes.
    var rowCountHint: Int { get }
}

extension EngineStatement {
    /// 0: the engine steps through rows it does not count beforehand.
    public var rowCountHint: Int { 0 }

    /// ``bind(_:)``, then ``step()``.
    public func step(binding parameters: UnsafeBufferPointer<Cell>) throws -> Bool {
        try bind(parameters)
        return try step()
    }

    /// ``bind(_:)``, then ``insert()``.
    public func insert(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int64 {
        try bind(parameters)
        return try insert()
    }

    /// ``step(binding:)`` and ``step()`` to the end, then ``resetKeepingBindings()``; the
    /// connection says how many rows changed.
    public func execute(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int? {
        if try step(binding: parameters) { while try step() {} }
        resetKeepingBindings()
        return nil
    }
}

/// A column's value without copying: text and bytes borrowed from the row or the record.
///
/// Public only as SPI: the C shim's getters read a row's cells inline (this toolchain
/// inlines no `package` function across modules, however it is marked).
@_spi(Engines) public enum Cell {
    case null
    case integer(Int64)
    case real(Double)
    case text(UnsafeRawBufferPointer)
    case blob(UnsafeRawBufferPointer)

    /// `NULL`, `INTEGER`, `REAL`, `TEXT` or `BLOB`, for messages.
    package var storageClassName: String {
        switch self {
        case .null: DatabaseValue.null.storageClassName
        case .integer: DatabaseValue.integer(0).storageClassName
        case .real: DatabaseValue.real(0).storageClassName
        case .text: DatabaseValue.text("").storageClassName
        case .blob: DatabaseValue.blob(Data()).storageClassName
        }
    }
}

/// Where SQL differs between engines. The SQL the library writes is otherwise common to
/// both: double-quoted identifiers, `?` placeholders (an engine may rewrite them when it
/// prepares), `LIMIT ? OFFSET ?`, `SAVEPOINT`/`RELEASE`/`ROLLBACK TO`, standard joins.
@_spi(Engines) public protocol SQLDialect: Sendable {
    /// The engine's name, for messages: `SQLite`, `PostgreSQL`.
    var name: String { get }

    // MARK: Tables

    /// The `id` column's definition in `CREATE TABLE`.
    var primaryKeyDefinition: String { get }
    /// ``primaryKeyDefinition`` for an integer key column of another name (`.autoincrement("userID")`).
    func primaryKeyDefinition(named name: String) -> String
    /// A column's type in DDL.
    func columnType(_ type: SQLType, _ kind: ColumnKind) -> String
    /// A default value as a DDL literal (engines do not bind defaults).
    func defaultLiteral(_ value: DatabaseValue, _ type: SQLType, _ kind: ColumnKind) -> String
    /// Whether a declared type found in the database holds what a column of `type` and
    /// `kind` stores (SQLite: the same affinity).
    func typeMatches(_ found: String, _ type: SQLType, _ kind: ColumnKind) -> Bool
    /// The storage class and kind that a declared type found in the database holds (for
    /// models made from an existing table).
    func storage(ofDeclaredType type: String) -> (SQLType, ColumnKind)
    /// Checks a table or column name before it is used in DDL (an engine may limit length).
    /// - Throws: `.invalidModel` saying what is wrong.
    func validateName(_ name: String, of what: String) throws

    // MARK: Statements

    /// `INSERT INTO "T" (columns) VALUES (?, …)` that ``EngineStatement/insert()`` runs.
    func insertSQL(into table: String, columns: [String]) -> String
    /// ``insertSQL(into:columns:)`` whose ``EngineStatement/insert()`` reads `key` (SQL: the
    /// integer key column, quoted, or a constant for a table keyed otherwise) where the engine
    /// returns the new row's id with the statement (PostgreSQL's `RETURNING`).
    func insertSQL(into table: String, columns: [String], returning key: String) -> String
    /// `INSERT` that does nothing when a row with the same unique key exists.
    func insertIgnoringConflictsSQL(into table: String, columns: [String]) -> String
    /// `INSERT` that, when a row with the same values in `conflictColumns` (a unique index's
    /// columns) exists, updates that row's `updateColumns` from the new values instead (none:
    /// the row is left as it is); either way it returns the row's `returning` columns, then
    /// any the engine's ``EngineStatement/upsert()`` reads to tell an insert from an update.
    func upsertSQL(into table: String, columns: [String], conflictColumns: [String], updateColumns: [String], returning: [String]) -> String
    /// `value LIKE pattern` (or `NOT LIKE`), meaning on every engine: `%` matches any run of
    /// characters and `_` one character, escaped only by the `escape` character when there is
    /// one (SQL for a one-character text); ASCII letters match without case, every other
    /// character exactly; the value is compared as text whatever its type; NULL matches nothing.
    func like(_ value: String, _ pattern: String, escape: String?, negated: Bool) -> String
    /// `expression IN (…)` (`NOT IN` when `negated`) over a whole list bound as one parameter
    /// (one `?`), whose value ``listParameter(_:)`` makes: SQL that does not depend on the
    /// list's length, so that one prepared statement serves lists of every length. It means
    /// what `expression IN (?, …)` with a `?` per element means (the same conversions of the
    /// elements to `expression`'s type, NULL where that gives NULL), for a non-empty list of
    /// integers and `expression` a column.
    func inList(_ expression: String, negated: Bool) -> String
    /// The value of the one parameter of ``inList(_:negated:)``: `elements` (not empty, all
    /// `INTEGER`) in one value.
    func listParameter(_ elements: [DatabaseValue]) -> DatabaseValue
    /// `column = ?` comparing ASCII letters without case (uniqueness with `caseSensitive: false`).
    func equalsIgnoringASCIICase(_ column: String) -> String
    /// One `ORDER BY` term, NULLs placed the same on every engine: first when ascending, last
    /// when descending.
    func orderTerm(_ expression: String, ascending: Bool) -> String
    /// The value at `keys` (object keys, outermost first; never empty) inside the JSON column
    /// `column` (SQL), used as `use` says, meaning the same on every engine (see
    /// ``JSONPathUse``). The keys are bound, never in the SQL.
    func jsonPath(_ column: String, keys: [String], _ use: JSONPathUse) -> JSONPathSQL
    /// The value bound to `LIMIT ?` for no limit.
    var unlimited: DatabaseValue { get }
    /// An aggregate over `expression` (already SQL, or `*` for `count`), by its name in the
    /// query language, meaning on every engine: `count` an integer; `min` and `max` the
    /// column's values; `sum` an integer for integer values (a double otherwise) and NULL for
    /// no rows; `avg` a double (NULL for no rows); `total` a double, 0 for no rows.
    func aggregate(_ function: String, _ expression: String) -> String
    /// The statement that begins a top-level transaction (write intent), at `isolation`
    /// (`nil`: the engine's default level).
    func beginTransactionSQL(isolation: TransactionIsolation?) -> String
    /// The level a transaction begun with `isolation` runs at (SQLite: serializable, whatever
    /// is asked; `nil` on PostgreSQL: `READ COMMITTED`, its default).
    func isolation(of requested: TransactionIsolation?) -> TransactionIsolation
    /// What follows a record query's `LIMIT`/`OFFSET` to lock the rows it returns of `table`
    /// until the transaction ends, so that no other transaction changes them meanwhile: empty
    /// on an engine whose write transaction locks the whole database already (SQLite).
    func rowLockClause(_ lock: RowLock, of table: String) -> String
    /// The statement that begins the read-only transaction a cursor reads in, on an engine
    /// whose cursors need one (``StatementUse/cursor``); `nil` when cursors need none.
    var beginCursorTransactionSQL: String? { get }
    /// Statements that make the current transaction the only one changing the schema until
    /// it ends, so that two processes migrating at once do not both create a table; empty
    /// when the engine's transactions are serialized anyway.
    func schemaLockSQL() -> [String]
    /// Whether a failed statement aborts the whole transaction (PostgreSQL), so that only
    /// a rollback (to a savepoint) continues it.
    var failedStatementAbortsTransaction: Bool { get }

    // MARK: Names

    /// Whether two identifiers name the same thing to the engine (SQLite: ASCII letters
    /// without case; PostgreSQL: quoted names exactly).
    func sameName(_ lhs: String, _ rhs: String) -> Bool

    // MARK: Reading the schema (each runs on the given connection)

    /// The database's tables (not the engine's own), sorted.
    func tableNames(_ connection: Connection) throws -> [String]
    /// A table's columns in order; empty when there is no such table.
    func columns(of table: String, _ connection: Connection) throws -> [ColumnDescription]
    /// A table's indexes (those the engine makes for UNIQUE constraints too; not the primary key's).
    func indexes(of table: String, _ connection: Connection) throws -> [IndexDescription]
    /// A table's foreign keys, one per referencing column.
    func foreignKeys(of table: String, _ connection: Connection) throws -> [ForeignKeyDescription]

    // MARK: Changing it (versioned migrations; each runs inside the step's transaction)
    // Renaming a table or a column is `ALTER TABLE … RENAME` on both engines.

    /// Runs `body` (one migration step's transaction) as the engine needs for schema changes
    /// (SQLite turns foreign keys off around it, since a rebuild drops and remakes tables).
    func aroundMigrationStep<R>(_ connection: Connection, _ body: () throws -> R) throws -> R
    /// Renames an index, which then covers `columns` of `table` (their names now).
    func renameIndex(_ index: IndexDescription, to newName: String, on table: String, columns: [String], _ connection: Connection) throws
    /// Drops a column (SQLite rebuilds the table).
    func dropColumn(_ column: String, from table: String, _ connection: Connection) throws
    /// Changes a column's declared type (SQLite rebuilds the table; values are converted as
    /// the engine converts them).
    func changeColumnType(_ column: String, in table: String, to type: SQLType, _ kind: ColumnKind, _ connection: Connection) throws
    /// Deletes every row of `tables` (inside the caller's transaction) and restarts their ids,
    /// so that each table's next row gets id 1.
    func clear(_ tables: [String], _ connection: Connection) throws
    /// `CREATE TABLE IF NOT EXISTS` for the table that records versioned migrations (name,
    /// time applied), keeping the order in which they were recorded.
    func migrationsTableSQL(_ table: String) -> String
    /// The expression that orders the migrations table's rows as they were recorded.
    var migrationsOrder: String { get }
    /// The statements (`CREATE … IF NOT EXISTS`) that make the table of commit tokens that
    /// ``Database/retrying(attempts:isolation:_:)`` writes, one row per transaction, so that
    /// a transaction whose COMMIT was lost in flight is not applied twice: a `token` text
    /// primary key and the time it was written (indexed). `nil` (the default) for an engine
    /// whose COMMIT cannot be lost in flight (an embedded one: its outcome is known when the
    /// call returns).
    var commitTokensTableSQL: [String]? { get }
    /// Deletes the commit tokens written more than an hour ago (long after any retry of theirs).
    var expiredCommitTokensSQL: String? { get }

    // MARK: Statements written outside the query compiler (finders, relations, validations,
    // migrations). Defaults in SQLDialect+Statements.swift: standard SQL, which both engines take.

    /// `SELECT <columns> FROM "table" [WHERE …] [ORDER BY …] [LIMIT 1]`, the conditions joined with `AND`.
    func selectSQL(_ columns: [SelectedColumn], from table: String, where conditions: [RowCondition], order: [RowOrder], limitOne: Bool)
        -> String
    /// A query of one integer: whether `table` has a row meeting every condition (1 or 0).
    func existsSQL(in table: String, where conditions: [RowCondition]) -> String
    /// `DELETE FROM "table" [WHERE …]`, the conditions joined with `AND`.
    func deleteSQL(from table: String, where conditions: [RowCondition]) -> String
    /// `UPDATE "table" SET … WHERE …`: each assignment a bound value or `NULL`.
    func updateSQL(_ table: String, setting assignments: [RowAssignment], where conditions: [RowCondition]) -> String
}
