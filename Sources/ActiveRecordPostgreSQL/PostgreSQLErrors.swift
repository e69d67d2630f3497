import ARLibPQ
@_spi(Engines) import ARCore

/// The ``ActiveRecordError`` for a failed result (or, without one, the connection's error):
/// the code from its SQLSTATE, PostgreSQL's primary message, and the SQL. Never the
/// message's DETAIL, which quotes the values of the rows concerned; in the data exceptions
/// (SQLSTATE class 22), whose messages quote the value that failed, quoted text is masked.
/// libpq's own text (a lost connection's reason) has the connection string's passwords masked.
func postgreSQLError(_ result: OpaquePointer?, _ owner: PostgreSQLConnection, sql: String?) -> ActiveRecordError {
    let connection = owner.handle
    func field(_ code: Int32) -> String? {
        guard let result, let value = PQresultErrorField(result, code) else { return nil }
        return String(cString: value)
    }
    let state = field(Int32(UInt8(ascii: "C")))
    var message = field(Int32(UInt8(ascii: "M")))
        ?? owner.mask.mask(String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines)
    if message.isEmpty { message = "PostgreSQL reported an error without a message" }
    guard PQstatus(connection) == CONNECTION_OK else {
        var error = ActiveRecordError(
            .cannotOpen, "the connection to the PostgreSQL server was lost (\(message)); the database will open another",
            sql: sql)
        error.engineState = state
        error.transient = true
        return error
    }
    let code: ActiveRecordError.Code
    var constraint: ActiveRecordError.Constraint?
    switch state ?? "" {
    case "23505": (code, constraint) = (.constraint, .unique)
    case "23503": (code, constraint) = (.constraint, .foreignKey)
    case "23502": (code, constraint) = (.constraint, .notNull)
    case "23514": (code, constraint) = (.constraint, .check)
    case let other where other.hasPrefix("23"): code = .constraint
    case "40001", "40P01": code = .transactionConflict
    case "25P02": code = .transactionAborted
    case "25006":
        code = .readOnly
        if owner.isOnStandby {
            // A server in recovery refused a write: a primary that became a standby (a
            // failover), or a writer that reached a standby. Of no use for writing any more.
            owner.retire()
            message += "; the server is a standby (after a failover?): the database opens a connection to the primary for the next work"
        }
    case "55P03": code = .busy
    case "57014":
        // Canceled: by the statement timeout the library set (or the session's own, or a
        // cancel request, which the server's message names).
        code = .timeout
        if let limit = owner.statementTimeout {
            message = "the statement ran longer than its statement timeout of \(limit.limitDescription), and PostgreSQL "
                + "canceled it (\(message)); raise the limit (Database.statementTimeout, withStatementTimeout) or make "
                + "the statement faster"
        }
    case let other where other.hasPrefix("22"):
        code = .invalidValue
        message = maskingQuotedText(message)
    case let other where other.hasPrefix("08") || other.hasPrefix("28") || other.hasPrefix("3D"): code = .cannotOpen
    case "57P01", "57P02", "57P03": code = .cannotOpen  // shutting down, crashed, starting up
    case let other where (other == "26000" || other == "42P05") && !owner.transactionPooling:
        // A prepared statement of the library's missing, or another's under its name: what a
        // pooler in transaction mode does to named statements.
        code = .engine
        message += "; behind a pooler in transaction mode (pgbouncer's pool_mode = transaction), open the database "
            + "with .postgres(…, transactionPooling: true)"

    default: code = .engine
    }
    var error = ActiveRecordError(code, message, sql: sql)
    error.engineState = state
    error.constraint = constraint
    error.transient = isTransient(state: state ?? "", onStandby: owner.isOnStandby)
    return error
}

/// Whether a SQLSTATE says the server was unavailable rather than the work wrong (see
/// ``ActiveRecordError/isTransient``): a connection exception (class 08), an operator
/// intervention that ends or refuses sessions (57P01 admin shutdown, 57P02 crash shutdown,
/// 57P03 cannot connect now), or a read-only transaction (25006) refused by a server in hot
/// standby (a former primary, after a failover) to a connection that writes.
func isTransient(state: String, onStandby: Bool) -> Bool {
    state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03" || (state == "25006" && onStandby)
}

/// `invalid input syntax for type bigint: "abc"` → `… bigint: "***"`.
func maskingQuotedText(_ message: String) -> String {
    var result = ""
    var inside = false
    for character in message {
        if character == "\"" {
            inside.toggle()
            result.append(character)
        } else {
            result.append(inside ? "*" : character)
        }
    }
    return result
}

extension String {
    var trimmingTrailingNewlines: String {
        var text = self
        while text.last == "\n" { text.removeLast() }
        return text
    }
}
