#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Retrying whole transactions: what a program does about a lost conflict, a busy database or a
/// failover, without applying a transaction twice.
extension Database {
    /// Runs `body` in a transaction, and runs the whole transaction again when it fails with an
    /// error that a new attempt may not meet (``ActiveRecordError/isRetryable``: a conflict or
    /// deadlock, a stale record, a busy database, a lost connection, a server shutting down or
    /// replaced by a failover), after a backoff: 50 ms, doubling up to 2 s, each with jitter.
    ///
    /// ```swift
    /// let order = try db.retrying {
    ///     let stock = try Stock.query().where(\.sku, .equal(sku)).forUpdate().first()!
    ///     stock.count -= 1
    ///     try stock.save()
    ///     return try Order.create(["sku": sku])
    /// }
    /// ```
    ///
    /// Exactly once. A COMMIT whose connection is lost on the way (the server crashed, a
    /// failover) may or may not have been committed. On a server engine (PostgreSQL) each
    /// attempt therefore first writes a token, the same for every attempt of the call, to the
    /// table `activerecord_commits` (made on first use; tokens older than an hour are deleted
    /// now and then). When an attempt's COMMIT was lost, the next attempt's token meets the
    /// committed one's unique key (or waits for the lost one's outcome, if its server is still
    /// deciding): the earlier attempt was committed, and `retrying` returns its value without
    /// running `body` again. An embedded engine (SQLite) needs no token: its COMMIT's outcome is
    /// known when the call returns.
    ///
    /// - `body` may run several times: it must do its work through the database, and leave
    ///   nothing else changed that a new attempt would change again (records loaded inside it
    ///   are loaded anew each time; records from outside get their values back after a rollback).
    /// - Not inside a transaction (`.misuse`): an inner one would retry a savepoint, which
    ///   cannot be retried alone once the outer transaction failed.
    /// - Parameters:
    ///   - attempts: how many times to run the transaction at most (1 or more).
    ///   - isolation: the transaction's isolation level (`nil`: the engine's default).
    ///   - body: the work; its value is the call's.
    /// - Throws: `body`'s error when it is not retryable, or the last attempt's; `.misuse` as
    ///   above or for `attempts` < 1; `.commitOutcomeUnknown` only when the last attempt's
    ///   COMMIT was lost and no attempt is left to tell.
    public func retrying<R>(attempts: Int = 8, isolation: TransactionIsolation? = nil, _ body: () throws -> R) throws -> R {
        let run = try RetryRun<R>(self, attempts: attempts)
        while true {
            do {
                // Counted before anything can fail (connecting too), so that every failure
                // counts against `attempts` and waits its backoff.
                run.attempt += 1
                if let table = run.tokenTable { try prepareCommitTokens(table) }
                return try withTransaction(isolation: isolation) { try run.transactionBody(body) }
            } catch {
                guard let delay = try run.delay(after: error) else { return run.takeUnknownOutcome() }
                sleepThread(for: delay)
            }
        }
    }

    /// ``retrying(attempts:isolation:_:)`` from async code: each attempt runs as
    /// ``write(isolation:timeout:_:)-method`` runs its block (on the database's threads; `timeout`
    /// bounds each attempt), and the backoff between attempts suspends the task, never a thread.
    /// A cancelled task stops at once (`CancellationError`), between attempts too.
    public func retrying<R>(
        attempts: Int = 8, isolation: TransactionIsolation? = nil, timeout: Duration? = nil,
        _ body: sending @escaping () throws -> sending R
    ) async throws -> sending R {
        let run = try RetryRun<R>(self, attempts: attempts)
        nonisolated(unsafe) let body = body
        while true {
            do {
                run.attempt += 1
                if let table = run.tokenTable, !commitTokensReady.load(ordering: .acquiring) {
                    try await perform(.writes, .writes, timeout: timeout) { try self.prepareCommitTokens(table) }
                }
                return try await perform(.writes, .transaction(isolation), timeout: timeout) { try run.transactionBody(body) }
            } catch {
                guard let delay = try run.delay(after: error) else {
                    nonisolated(unsafe) let value = run.takeUnknownOutcome()
                    return value
                }
                try await Task.sleep(for: delay)
            }
        }
    }

    /// Writes `token` in the calling thread's transaction (``retrying(attempts:isolation:_:)``).
    /// - Throws: ``CommitTokenTaken`` when a committed transaction wrote it already.
    fileprivate func writeCommitToken(_ token: String) throws {
        try withConnection { connection in
            do {
                try connection.execute(
                    "INSERT INTO \(Self.commitTokensTableName.quotedIdentifier) (\("token".quotedIdentifier)) VALUES (?)", [.text(token)])
            } catch let error as ActiveRecordError where error.isUniqueViolation {
                throw CommitTokenTaken()
            }
            if commitTokensWritten.add(1, ordering: .relaxed).newValue % 1024 == 0, let expired = dialect.expiredCommitTokensSQL {
                try connection.execute(expired)
            }
        }
    }

    /// Makes the table of commit tokens, once per database (other processes may make it at
    /// the same time: whoever loses that race finds it made).
    fileprivate func prepareCommitTokens(_ statements: [String]) throws {
        guard !commitTokensReady.load(ordering: .acquiring) else { return }
        for sql in statements {
            do {
                try withConnection { try $0.execute(sql) }
            } catch let error as ActiveRecordError where error.isUniqueViolation {
                continue  // made by another process meanwhile (IF NOT EXISTS races in the catalog)
            }
        }
        commitTokensReady.store(true, ordering: .releasing)
    }
}

/// An attempt's token met a committed one: an earlier attempt of the same call committed.
private struct CommitTokenTaken: Error {}

/// The state of one ``Database/retrying(attempts:isolation:_:)`` call across its attempts.
/// `@unchecked Sendable`: its attempts run one after another (from async code, on the
/// database's threads, each after the last one's outcome came back to the task).
///
/// Its values are kept as optionals of the class's own, not in a generic value type of the
/// library's: the runtime's instantiation of those for a C caller's types reads memory that
/// memcheck reports as uninitialised (`make c-test`).
private final class RetryRun<R>: @unchecked Sendable {
    let database: Database
    let attempts: Int
    /// The token every attempt writes first (`nil`: the engine needs none).
    let token: String?
    /// The statements that make the tokens' table, when there is a token.
    let tokenTable: [String]?
    /// The attempts made so far (the current one included).
    var attempt = 0
    /// The value of the attempt now committing, until its outcome is known.
    var committing: R?
    /// The value of an attempt whose COMMIT was lost: returned if the next attempt finds its token.
    var unknownOutcome: R?

    init(_ database: Database, attempts: Int) throws {
        guard attempts >= 1 else {
            throw ActiveRecordError(.misuse, "retrying(attempts: \(attempts)): a transaction runs at least once; pass 1 or more")
        }
        guard !database.isInTransaction else {
            throw ActiveRecordError(
                .misuse,
                "retrying { } inside a transaction: a failed transaction is retried whole, and this one is part of an "
                    + "outer transaction that the failure ends too. Call retrying { } outside any transaction")
        }
        self.database = database
        self.attempts = attempts
        if let table = database.dialect.commitTokensTableSQL, !database.isReadOnly {
            tokenTable = table
            token = UUID().uuidString
        } else {
            tokenTable = nil
            token = nil
        }
    }

    /// One attempt's work, in its transaction: the token, then `body`.
    func transactionBody(_ body: () throws -> R) throws -> R {
        committing = nil
        if let token {
            try database.writeCommitToken(token)
            // The token was not there: no earlier attempt was committed.
            unknownOutcome = nil
        }
        let value = try body()
        nonisolated(unsafe) let kept = value
        committing = kept
        return value
    }

    /// After an attempt failed with `error`: the delay before the next attempt, or `nil` when
    /// an earlier attempt was committed (its value: ``takeUnknownOutcome()``).
    /// - Throws: `error` when it is not retryable or no attempt is left.
    func delay(after error: any Error) throws -> Duration? {
        if error is CommitTokenTaken {
            guard unknownOutcome != nil else {
                throw ActiveRecordError(
                    .commitOutcomeUnknown,
                    "an earlier attempt of this retrying { } was committed, but its value was not kept: its changes are "
                        + "in the database; do not run it again")
            }
            return nil
        }
        guard let failure = error as? ActiveRecordError else { throw error }
        if failure.code == .commitOutcomeUnknown, token != nil, let committing {
            // The next attempt's token tells whether this one was committed.
            unknownOutcome = committing
        } else if !failure.isRetryable {
            throw error
        }
        committing = nil
        guard attempt < attempts else { throw error }
        database.log(.notice, "retrying a transaction (attempt \(attempt + 1) of \(attempts)) after: \(failure.code): \(failure.message)")
        // 50 ms, doubling, at most 2 s; a random half of it off, so that clients failed by
        // the same event do not all come back at once.
        let ceiling = min(2.0, 0.05 * Double(1 << min(max(attempt - 1, 0), 10)))
        return .milliseconds(Int64(ceiling * Double.random(in: 0.5...1.0) * 1000))
    }

    /// The value of the attempt that was committed though its COMMIT was lost.
    func takeUnknownOutcome() -> R {
        defer { unknownOutcome = nil }
        return unknownOutcome.unsafelyUnwrapped
    }
}
