import Foundation

extension Database {
    /// Runs `body` in a transaction of this database.
    ///
    /// Commits when `body` returns; rolls back and rethrows when it throws;
    /// rolls back silently when it throws ``Rollback``. A transaction inside
    /// a transaction is a savepoint that rolls back alone.
    ///
    /// ```swift
    /// try db.transaction {
    ///     try alex.save()
    ///     if alex.name.isEmpty { throw Rollback() }
    /// }
    /// ```
    /// - Returns: whether the work was committed or rolled back by ``Rollback``.
    @discardableResult
    public func transaction(_ body: () throws -> Void) throws -> TransactionOutcome {
        do {
            try transaction(returning: body)
            return .committed
        } catch is Rollback {
            return .rolledBack
        }
    }

    /// Runs `body` in a transaction and returns its value: commits when `body` returns,
    /// rolls back and rethrows when it throws. (A block that returns nothing gets the form
    /// that answers ``TransactionOutcome``.)
    ///
    /// ```swift
    /// let bookmark = try db.transaction {
    ///     let tag = try Tag.create(["name": "swift"])
    ///     return try Bookmark.create(["url": "https://swift.org", "tagId": tag.id!])
    /// }
    /// ```
    /// - Throws: what `body` throws, ``Rollback`` too (the work is rolled back, and there is
    ///   no value to return).
    @discardableResult
    public func transaction<Value>(_ body: () throws -> Value) throws -> Value {
        try transaction(returning: body)
    }

    private func transaction<Value>(returning body: () throws -> Value) throws -> Value {
        try beginTransaction()
        let value: Value
        do {
            value = try body()
        } catch {
            try rollbackTransaction()
            throw error
        }
        try commitTransaction()
        return value
    }

    /// Begins a transaction (or, inside one, a savepoint) held by the calling thread
    /// until ``commitTransaction()`` or ``rollbackTransaction()``, which the same
    /// thread must call. The closure form ``transaction(_:)`` is built on these.
    package func beginTransaction() throws {
        let connection = try hold()
        let depth = connection.transactionDepth
        do {
            try connection.execute(depth == 0 ? dialect.beginTransactionSQL : "SAVEPOINT activerecord_\(depth)")
        } catch {
            release()
            throw error
        }
        connection.transactionDepth += 1
        connection.undoLevelStarts.append(
            UndoLevelStart(log: connection.undoLog.count, destroyed: connection.destroyedInTransaction.count))
        connection.changesByLevel.append(TableChanges())
        connection.recordsAwaitingOutcome.append([])
        connection.forgetNotedTable()
    }

    /// Commits the innermost transaction level (releases its savepoint); on failure rolls it back.
    /// - Throws: `.misuse` when the calling thread has no transaction (it must end on the
    ///   thread that began it: another thread's would stay open, and every writer wait);
    ///   `.transactionAborted` when a statement failed inside it on an engine where that
    ///   aborts the transaction (it is rolled back); `.commitOutcomeUnknown` when the
    ///   connection was lost during COMMIT (it may or may not have been committed).
    package func commitTransaction() throws {
        let connection = try ownTransaction("commit")
        let depth = connection.transactionDepth - 1
        if connection.isInFailedTransaction {
            try rollbackTransaction()
            throw ActiveRecordError(
                .transactionAborted,
                "a statement failed inside the transaction, and \(dialect.name) aborted it: it was rolled back. "
                    + "Let the error end the transaction, or run the statement in a nested transaction (a savepoint) "
                    + "to go on after it fails")
        }
        let wasUsable = connection.isUsable
        do {
            try connection.execute(depth == 0 ? "COMMIT" : "RELEASE activerecord_\(depth)")
        } catch {
            // A COMMIT whose connection was lost on the way may have been committed: say so.
            let outcomeUnknown = depth == 0 && wasUsable && !connection.isUsable
            try? rollbackTransaction()
            throw outcomeUnknown ? ActiveRecordError.commitOutcomeUnknown(after: error) : error
        }
        // Committed: the parent level now owns what to undo (nothing, at the top).
        connection.undoLevelStarts.removeLast()
        if connection.undoLevelStarts.isEmpty {
            connection.undoLog.removeAll()
            connection.destroyedInTransaction.removeAll()
        }
        connection.transactionDepth -= 1
        if depth == 0, !connection.preparedInTransaction.isEmpty {
            // The tables this transaction created are now there for every thread.
            let prepared = connection.preparedInTransaction
            connection.preparedInTransaction = []
            preparedTables.withLock { $0.formUnion(prepared) }
        }
        // What it changed, and whose callbacks wait: the parent level's now, or done.
        let changes = connection.changesByLevel.removeLast()
        let records = connection.recordsAwaitingOutcome.removeLast()
        connection.forgetNotedTable()
        if depth > 0 {
            connection.changesByLevel[connection.changesByLevel.count - 1].formUnion(changes)
            connection.recordsAwaitingOutcome[connection.recordsAwaitingOutcome.count - 1] += records
        } else {
            connection.unpublishedChanges.formUnion(changes)
        }
        if depth == 0, connection.hasUnpublishedChanges { publishChanges(of: connection) }
        release()
        if depth == 0 { eachOnce(records) { $0.afterCommit() } }
    }

    /// Rolls back the innermost transaction level and puts its records back in memory.
    /// - Throws: `.misuse` when the calling thread has no transaction.
    package func rollbackTransaction() throws {
        let connection = try ownTransaction("roll back")
        let depth = connection.transactionDepth - 1
        connection.changesByLevel.removeLast()
        let records = connection.recordsAwaitingOutcome.removeLast()
        connection.forgetNotedTable()
        defer {
            connection.transactionDepth -= 1
            release()
            eachOnce(records) { $0.afterRollback() }
        }
        let start = connection.undoLevelStarts.removeLast()
        let undo = connection.undoLog.removeEntries(from: start.log)
        for entry in undo.reversed() { entry.undo() }
        for record in connection.destroyedInTransaction.removeEntries(from: start.destroyed) {
            record.header.isDestroyed = false
        }
        // What this transaction's automatic migration made may be undone: check again.
        connection.preparedInTransaction = []
        if depth == 0 {
            try connection.execute("ROLLBACK")
        } else {
            try connection.execute("ROLLBACK TO activerecord_\(depth)")
            try connection.execute("RELEASE activerecord_\(depth)")
        }
    }

    /// The calling thread's connection, in a transaction; else `.misuse`, since a
    /// transaction ends on the thread that began it.
    private func ownTransaction(_ verb: String) throws -> Connection {
        guard let connection = heldByCaller, connection.transactionDepth > 0 else {
            throw ActiveRecordError(
                .misuse,
                "there is no transaction to \(verb) on this thread: a transaction ends on the thread that began it")
        }
        return connection
    }

    /// ``transaction(_:)`` on the ``current`` database.
    @discardableResult
    public static func transaction(_ body: () throws -> Void) throws -> TransactionOutcome {
        try current.transaction(body)
    }

    /// `transaction(_:)` on the ``current`` database, returning the block's value.
    @discardableResult
    public static func transaction<Value>(_ body: () throws -> Value) throws -> Value {
        try current.transaction(body)
    }
}

/// Calls `body` once for each record of `records` with callbacks (a record written several
/// times in a transaction is there several times).
private func eachOnce(_ records: [Model], _ body: (any Callbacks) -> Void) {
    var seen: Set<ObjectIdentifier> = []
    for record in records where seen.insert(ObjectIdentifier(record)).inserted {
        if let callbacks = record as? any Callbacks { body(callbacks) }
    }
}

/// Throw this inside `Database.transaction(_:)` to roll back without an error.
public struct Rollback: Error, Sendable {
    /// Makes the rollback signal.
    public init() {}
}

/// How a transaction ended.
public enum TransactionOutcome: Sendable, Equatable {
    /// The work was committed.
    case committed
    /// The block threw ``Rollback``; the work was undone.
    case rolledBack
}
