import ARLibPQ
@_spi(Engines) import ARCore

/// Behind a pooler in transaction mode (pgbouncer's `pool_mode = transaction`): the pooler
/// hands each transaction, and each statement outside one, whichever server connection is
/// free, so nothing the library leaves on a server connection may outlive the transaction
/// that left it: it would be missing in the next transaction, or be another client's.
///
/// * No session `SET`. What the library sets at connect elsewhere, it checks here instead
///   (``checkServerDefaults()``); the statement timeout and a read-only database's
///   `transaction_read_only` are set with `set_config(…, true)`, which lasts until the end of
///   the server's current transaction: sent in one pipeline with the command that needs it (no
///   round trip of its own), once per transaction — again after a transaction-control command,
///   since `ROLLBACK TO SAVEPOINT` undoes it. A command outside a transaction is sent with it
///   before one `Sync`: the two run in one implicit transaction, on one server connection, and
///   the setting ends with it.
/// * No named prepared statement (see `PostgreSQLStatement`); cursors are declared inside
///   their transaction (as everywhere), and close with it.
extension PostgreSQLConnection {
    /// Whether the next command needs the transaction's settings, or the closed connection's
    /// error: while a statement timeout applies, for a read-only database, and to undo a
    /// timeout set in the current transaction.
    var pooledNeedsPreparation: Bool {
        !isUsable || wantedMilliseconds != 0 || readOnly || localMilliseconds != 0 || localReadOnly
    }

    /// Sends one command, with the settings the current transaction lacks sent before it in
    /// the same pipeline (see the extension's comment), and returns its result as
    /// ``result(ofSent:)`` does.
    func pooledExchange(_ sql: String, _ send: () -> Int32) throws -> OpaquePointer? {
        try throwIfClosed()
        defer { needsPreparation = pooledNeedsPreparation }
        let before = PQtransactionStatus(handle)
        if before == PQTRANS_IDLE { (localMilliseconds, localReadOnly) = (0, false) }
        if Self.isTransactionControl(sql) {
            // Never after a setting: `BEGIN ISOLATION LEVEL …` must come before any query. A
            // transaction that begins has none of the settings yet; one rolled back to a
            // savepoint may have lost them.
            defer { (localMilliseconds, localReadOnly) = (0, false) }
            return try result(ofSent: send())
        }
        guard before != PQTRANS_INERROR, let settings = missingSettings() else { return try result(ofSent: send()) }
        let result = try pipelined(settings, send)
        if PQtransactionStatus(handle) == PQTRANS_INTRANS {
            (localMilliseconds, localReadOnly) = (wantedMilliseconds, readOnly)
        } else {
            (localMilliseconds, localReadOnly) = (0, false)
        }
        return result
    }

    /// The `SELECT set_config(…)` that gives the current transaction the wanted statement
    /// timeout and read-only state, or `nil` when it has them.
    private func missingSettings() -> String? {
        var settings: [String] = []
        if localMilliseconds != wantedMilliseconds {
            settings.append(
                wantedMilliseconds == 0
                    // Back to the session's own (what the server or the role set).
                    ? "set_config('statement_timeout', (SELECT reset_val FROM pg_catalog.pg_settings WHERE name = 'statement_timeout'), true)"
                    : "set_config('statement_timeout', '\(wantedMilliseconds)', true)")
        }
        if readOnly && !localReadOnly { settings.append("set_config('transaction_read_only', 'on', true)") }
        return settings.isEmpty ? nil : "SELECT " + settings.joined(separator: ", ")
    }

    /// Sends `settings` and the command (`send`) in one pipeline, one `Sync` after both, and
    /// returns the command's result (the settings' error when they failed).
    /// - Throws: `.timeout` when the server did not answer in time (the connection is closed).
    private func pipelined(_ settings: String, _ send: () -> Int32) throws -> OpaquePointer? {
        guard PQenterPipelineMode(handle) == 1 else { return nil }
        guard PQsendQueryParams(handle, settings, 0, nil, nil, nil, nil, 0) == 1, send() == 1, PQpipelineSync(handle) == 1 else {
            // libpq could not queue the commands (a lost connection, out of memory): what it
            // has queued cannot be taken back, so the connection is done.
            let message = String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines
            throw closeBroken(mask.mask(message))
        }
        let deadline = clientLimitNanoseconds == 0 ? 0 : monotonicNanoseconds() &+ clientLimitNanoseconds
        let settingsResult = try nextQueryResult(until: deadline)
        let commandResult = try nextQueryResult(until: deadline)
        // The `Sync`'s own result ends the pipeline.
        if PQstatus(handle) == CONNECTION_OK {
            if deadline != 0 { try awaitResult(until: deadline) }
            if let sync = PQgetResult(handle) { PQclear(sync) }
        }
        _ = PQexitPipelineMode(handle)
        let settingsFailed = settingsResult.map(PQresultStatus) != PGRES_TUPLES_OK
        if settingsFailed {
            if let commandResult { PQclear(commandResult) }
            return settingsResult
        }
        if let settingsResult { PQclear(settingsResult) }
        return commandResult
    }

    /// The last result of the pipeline's next query (libpq ends each with a `nil`), as
    /// ``result(ofSent:)`` reads one.
    private func nextQueryResult(until deadline: UInt64) throws -> OpaquePointer? {
        var last: OpaquePointer?
        while PQstatus(handle) == CONNECTION_OK {
            if deadline != 0 { try awaitResult(until: deadline) }
            guard let result = PQgetResult(handle) else { break }
            if let last { PQclear(last) }
            last = result
        }
        return last
    }

    /// Shuts the connection down after libpq could not queue a pipeline, and returns the
    /// error this and every later command gets.
    private func closeBroken(_ reason: String) -> ActiveRecordError {
        shutDown(
            with: ActiveRecordError(
                .cannotOpen,
                "the connection to the PostgreSQL server at \(description) failed while sending a command (\(reason)); "
                    + "it was closed, and the database opens another for the next work"))
    }

    /// Whether `sql` begins or ends a transaction or rolls back to a savepoint (`BEGIN`,
    /// `START`, `COMMIT`, `END`, `ROLLBACK`, `ABORT`, as the library and users write them).
    static func isTransactionControl(_ sql: String) -> Bool {
        // The first word, lowercased, packed into an integer (at most 8 letters).
        var word: UInt64 = 0
        var length = 0
        for byte in sql.utf8 {
            let lower = byte | 0x20
            if lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z") {
                length += 1
                guard length <= 8 else { return false }
                word = word << 8 | UInt64(lower)
            } else if length > 0 || !(byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t")) {
                break
            }
        }
        return transactionControlWords.contains(word)
    }

    /// ``isTransactionControl(_:)``'s words, packed as it packs them.
    private static let transactionControlWords: Set<UInt64> = Set(
        ["begin", "start", "commit", "end", "rollback", "abort"].map { $0.utf8.reduce(0) { $0 << 8 | UInt64($1) } })

    /// Checks, once per connection, that the server's defaults give what the library sets
    /// elsewhere at connect: exact floating-point text (`extra_float_digits` ≥ 1 gives the
    /// shortest exact text since PostgreSQL 12), standard strings and hex `bytea` text. Text
    /// results carry them (a statement's first run, cursors); binary ones do not depend on them.
    /// - Throws: `.configuration` naming the setting and how to set it for the role or database.
    func checkServerDefaults() throws {
        let sql = """
            SELECT current_setting('server_version_num')::int >= 120000 AND current_setting('extra_float_digits')::int >= 1, \
            current_setting('standard_conforming_strings') = 'on', current_setting('bytea_output') = 'hex'
            """
        let result = try self.result(ofSent: PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0))
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1 else {
            throw postgreSQLError(result, self, sql: sql)
        }
        let wrong = [
            "extra_float_digits (at least 1, on PostgreSQL 12 or later)", "standard_conforming_strings (on)",
            "bytea_output (hex)",
        ].enumerated().filter { String(cString: PQgetvalue(result, 0, Int32($0.offset))) != "t" }.map(\.element)
        guard wrong.isEmpty else {
            throw ActiveRecordError(
                .configuration,
                "behind a transaction pooler the library cannot set the session's \(wrong.joined(separator: ", ")) "
                    + "for \(description), and the server's defaults differ: set them for the database or role "
                    + "(ALTER DATABASE … SET …), or open it without transactionPooling through a session-mode pooler")
        }
    }
}
