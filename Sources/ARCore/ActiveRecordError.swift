/// The one error type thrown by swift-activerecord.
///
/// Every error has an extensible ``Code``, a readable message and, for failures the engine
/// reports, the engine's own code or state (``engineCode``, ``engineState``) and the SQL text
/// that failed. Bound values are never part of an error: a failing `INSERT` shows its `?`
/// placeholders, not the user's data.
///
/// ```swift
/// do {
///     try user.save()
/// } catch let error as ActiveRecordError where error.code == .constraint {
///     print(error.message, error.sql ?? "")
/// }
/// ```
public struct ActiveRecordError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in any release,
    /// so a `switch` over codes needs a `default` case.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, for example `"constraint"`.
        public var rawValue: String
        /// Makes a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The engine reported an error not covered by a more specific code
        /// (``ActiveRecordError/engineCode`` or ``ActiveRecordError/engineState`` says which).
        public static let engine = Code(rawValue: "engine")
        /// The record was changed (or destroyed) by another transaction since it was loaded: its
        /// lock version (see `Model.lockingColumn`) no longer matches the row's, and nothing
        /// was written. Retryable: reload the record (or run the transaction again, reading it
        /// anew), apply the change, save.
        public static let staleRecord = Code(rawValue: "staleRecord")
        /// A `UNIQUE`, `NOT NULL`, `CHECK` or foreign-key constraint failed.
        public static let constraint = Code(rawValue: "constraint")
        /// The transaction lost to a concurrent one (PostgreSQL: a serialization failure or a
        /// deadlock) and was rolled back: run it again.
        public static let transactionConflict = Code(rawValue: "transactionConflict")
        /// A statement failed inside a transaction, and the engine aborted the whole
        /// transaction (PostgreSQL): it was rolled back when it was to commit.
        public static let transactionAborted = Code(rawValue: "transactionAborted")
        /// The database stayed locked, or every pooled connection stayed in use, longer than
        /// the time allowed to wait.
        public static let busy = Code(rawValue: "busy")
        /// The file exists but is not a database of the engine.
        public static let notADatabase = Code(rawValue: "notADatabase")
        /// The database cannot be opened (missing directory, permissions, a server that
        /// cannot be reached or refuses the login), or the connection to its server was lost.
        public static let cannotOpen = Code(rawValue: "cannotOpen")
        /// The database file is read-only.
        public static let readOnly = Code(rawValue: "readOnly")
        /// A stored value cannot be converted to the property's type.
        public static let typeMismatch = Code(rawValue: "typeMismatch")
        /// A value cannot be stored (out of range, NaN, unencodable).
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// A column name that the model does not have.
        public static let unknownColumn = Code(rawValue: "unknownColumn")
        /// A table (or model) name that the query does not have.
        public static let unknownTable = Code(rawValue: "unknownTable")
        /// A record failed its validations; ``ActiveRecordError/validationFailures`` lists why.
        public static let validationFailed = Code(rawValue: "validationFailed")
        /// A predicate that cannot be parsed, or whose arguments do not fit it.
        public static let invalidPredicate = Code(rawValue: "invalidPredicate")
        /// The record does not exist (never saved, destroyed, or deleted elsewhere).
        public static let notFound = Code(rawValue: "notFound")
        /// A model class cannot be turned into a table schema.
        public static let invalidModel = Code(rawValue: "invalidModel")
        /// The database configuration is invalid.
        public static let configuration = Code(rawValue: "configuration")
        /// An operation that is not allowed in the record's current state.
        public static let misuse = Code(rawValue: "misuse")
        /// A versioned migration step failed; the message names it.
        public static let migrationFailed = Code(rawValue: "migrationFailed")
        /// A statement ran longer than its statement timeout (``Database/statementTimeout``,
        /// ``Database/withStatementTimeout(_:_:)``) and was stopped: SQLite interrupted it;
        /// PostgreSQL canceled it (SQLSTATE 57014), or, when the server did not answer at all,
        /// the library closed the connection. The message names the limit. Not retryable as it
        /// is: the same statement would run as long again (raise the limit, or make it faster).
        public static let timeout = Code(rawValue: "timeout")
        /// The connection was lost (or closed after a timeout) while the transaction was
        /// committing: it may or may not have been committed. Check whether its changes are
        /// there before running it again; not retryable, since running it twice may apply it twice.
        public static let commitOutcomeUnknown = Code(rawValue: "commitOutcomeUnknown")
    }

    /// Which kind of constraint failed, as the engine reported it.
    package enum Constraint: Sendable {
        case unique, foreignKey, notNull, check
    }

    /// What kind of failure this is.
    public var code: Code
    /// A readable explanation: what failed, where, and what to do.
    public var message: String
    /// The engine's own numeric code, for failures an engine that has them reports (SQLite's
    /// extended result code: `2067` for a unique violation).
    public var engineCode: Int32?
    /// The engine's own state, for failures an engine that has them reports (PostgreSQL's
    /// SQLSTATE: `23505` for a unique violation).
    public var engineState: String?
    /// The kind of constraint that failed, set by the engine from its code.
    package var constraint: Constraint?
    /// The SQL text that failed, with `?` placeholders, for failures of a statement.
    public var sql: String?

    /// The failing SQL with its bound values written in, only when the
    /// database was asked for it (``Database/includesBoundValuesInErrors``):
    /// values may be personal data, so errors leave them out by default.
    public var expandedSQL: String?

    /// For `.validationFailed`: every failure, in declaration order.
    public var validationFailures: [ValidationFailure] = []

    /// Makes an error.
    public init(_ code: Code, _ message: String, engineCode: Int32? = nil, sql: String? = nil) {
        self.code = code
        self.message = message
        self.engineCode = engineCode
        self.sql = sql
    }

    /// The same error (code, engine codes, SQL) with another message: for adding where it
    /// happened, or what it means.
    package func with(code: Code? = nil, message: String) -> ActiveRecordError {
        var error = self
        if let code { error.code = code }
        error.message = message
        return error
    }

    /// A `.validationFailed` error for `failures` of a `model` record.
    package static func validationFailed(_ model: String, _ failures: [ValidationFailure]) -> ActiveRecordError {
        var error = ActiveRecordError(
            .validationFailed, "\(model) is invalid: " + failures.map(\.description).joined(separator: "; "))
        error.validationFailures = failures
        return error
    }

    // MARK: Which constraint failed, by the engine's code (never by message text)

    /// Whether a UNIQUE constraint or a PRIMARY KEY failed (SQLite: `SQLITE_CONSTRAINT_UNIQUE`,
    /// 2067, or `SQLITE_CONSTRAINT_PRIMARYKEY`, 1555; PostgreSQL: SQLSTATE 23505).
    ///
    /// ```swift
    /// catch let error as ActiveRecordError where error.isUniqueViolation { … }
    /// ```
    public var isUniqueViolation: Bool { constraint == .unique }

    /// Whether a FOREIGN KEY constraint failed (`SQLITE_CONSTRAINT_FOREIGNKEY`, 787; SQLSTATE 23503).
    public var isForeignKeyViolation: Bool { constraint == .foreignKey }

    /// Whether a NOT NULL constraint failed (`SQLITE_CONSTRAINT_NOTNULL`, 1299; SQLSTATE 23502).
    public var isNotNullViolation: Bool { constraint == .notNull }

    /// Whether a CHECK constraint failed (`SQLITE_CONSTRAINT_CHECK`, 275; SQLSTATE 23514).
    public var isCheckViolation: Bool { constraint == .check }

    /// Whether running the same transaction again may succeed: it lost a conflict with a
    /// concurrent one (``Code/transactionConflict``), found a record changed by another
    /// (``Code/staleRecord``: read it again), waited too long (``Code/busy``), or met a server
    /// going away or not there yet (``isTransient``: a lost connection, a server shutting down
    /// or starting up, one that cannot be reached, a primary that became a standby — what a
    /// failover looks like from the client). ``Database/retrying(attempts:isolation:_:)`` runs
    /// a transaction again on exactly these.
    /// Not for ``Code/timeout`` (the statement would run as long again) nor for
    /// ``Code/commitOutcomeUnknown`` (the transaction may have been committed already:
    /// `retrying` tells which).
    public var isRetryable: Bool {
        code == .transactionConflict || code == .staleRecord || code == .busy || (isTransient && code != .commitOutcomeUnknown)
    }

    /// Whether the failure came from the server's availability rather than from the work: the
    /// connection was lost, the server is shutting down or starting up, cannot be reached, or
    /// is in recovery (a standby) when the database writes. Set by the engine; the work did
    /// not take effect (except a COMMIT, whose error is then ``Code/commitOutcomeUnknown``).
    public var isTransient: Bool { transient }
    /// ``isTransient``, as the engine sets it.
    package var transient = false

    /// A `.commitOutcomeUnknown` error for a COMMIT that failed with `error` on a connection
    /// that was lost (or closed after the server did not answer): the transaction may or may
    /// not have been committed. Keeps the engine's codes of `error`.
    package static func commitOutcomeUnknown(after error: any Error) -> ActiveRecordError {
        let failure = error as? ActiveRecordError ?? ActiveRecordError(.cannotOpen, "\(error)")
        let cause = failure.code == .timeout
            ? "the server did not answer COMMIT within the statement timeout, and the connection was closed"
            : "the connection to the server was lost during COMMIT"
        return failure.with(
            code: .commitOutcomeUnknown,
            message: "\(cause): the transaction may or may not have been committed. Check whether its changes are in "
                + "the database before running it again (running it twice may apply it twice)")
    }

    /// `"<code>: <message> (engine code N) [SQL: …]"` (or `(engine state S)`).
    public var description: String {
        var text = "\(code): \(message)"
        if let engineCode { text += " (engine code \(engineCode))" }
        if let engineState { text += " (engine state \(engineState))" }
        if let sql { text += " [SQL: \(sql)]" }
        if let expandedSQL { text += " [with values: \(expandedSQL)]" }
        return text
    }
}
