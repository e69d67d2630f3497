#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Database {
    /// Runs `body` in a transaction of this database and tells how it ended.
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
    /// let inner = try db.transaction { try draft.save(); throw Rollback() }   // .rolledBack: the savepoint only
    /// ```
    ///
    /// The block returns nothing, whatever the call is assigned to:
    /// ``withTransaction(isolation:_:)-method`` is the form that returns the block's value.
    /// - Parameters:
    ///   - isolation: the isolation level of a top-level transaction (`nil`: the engine's
    ///     default); see ``TransactionIsolation``.
    ///   - body: the work, run in the transaction (or, inside one, in a savepoint).
    /// - Returns: whether the work was committed or rolled back by ``Rollback``.
    /// - Throws: what `body` throws (after the rollback); `.misuse` for a nested transaction
    ///   that asks for a stronger isolation than the transaction it is in.
    @discardableResult
    public func transaction(isolation: TransactionIsolation? = nil, _ body: () throws -> Void) throws -> TransactionOutcome {
        do {
            try inTransaction(isolation: isolation, body)
            return .committed
        } catch is Rollback {
            return .rolledBack
        }
    }

    /// Runs `body` in a transaction and returns its value: commits when `body` returns, rolls
    /// back and rethrows when it throws.
    ///
    /// ```swift
    /// let bookmark = try db.withTransaction {
    ///     let tag = try Tag.create(["name": "swift"])
    ///     return try Bookmark.create(["url": "https://swift.org", "tagId": tag.id!])
    /// }
    /// ```
    /// Inside a transaction it is a savepoint, as ``transaction(isolation:_:)-method`` is.
    /// - Parameters:
    ///   - isolation: as for ``transaction(isolation:_:)-method``.
    ///   - body: the work, whose value the call returns.
    /// - Throws: what `body` throws, ``Rollback`` too: the work is rolled back, and there is no
    ///   value to return, so the ``Rollback`` goes on to the caller (inside another
    ///   transaction, it rolls that one back too unless caught).
    public func withTransaction<Value>(isolation: TransactionIsolation? = nil, _ body: () throws -> Value) throws -> Value {
        try inTransaction(isolation: isolation, body)
    }

    /// Not available: `transaction { }` returns how the transaction ended, whatever its block
    /// returns. A block that returns a value goes to ``withTransaction(isolation:_:)-method``.
    @available(*, unavailable, message: "transaction { } returns how it ended (TransactionOutcome); use withTransaction { } to return the block's value")
    public func transaction<Value>(isolation: TransactionIsolation? = nil, _ body: () throws -> Value) throws -> Value {
        fatalError("unavailable")
    }

    private func inTransaction<Value>(isolation: TransactionIsolation?, _ body: () throws -> Value) throws -> Value {
        try beginTransaction(isolation: isolation)
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
    /// thread must call. The closure forms `transaction { }` and `withTransaction { }` are built on these.
    /// - Parameter isolation: the isolation level of a top-level transaction (`nil`: the
    ///   engine's default); inside a transaction it must not be stronger than the level the
    ///   transaction runs at (a savepoint cannot change it).
    /// - Throws: `.misuse` for a nested transaction asking for a stronger isolation.
    package func beginTransaction(isolation: TransactionIsolation? = nil) throws {
        let connection = try hold()
        let depth = connection.transaction.depth
        do {
            if depth == 0 {
                try connection.execute(dialect.beginTransactionSQL(isolation: isolation))
                connection.transaction.isolation = dialect.isolation(of: isolation)
            } else {
                if let isolation, isolation > connection.transaction.isolation {
                    throw ActiveRecordError(
                        .misuse,
                        "a nested transaction cannot run at \(isolation): the transaction it is in runs at "
                            + "\(connection.transaction.isolation), and a savepoint keeps its level. "
                            + "Ask for \(isolation) on the outermost transaction")
                }
                try connection.execute("SAVEPOINT activerecord_\(depth)")
            }
        } catch {
            release()
            throw error
        }
        connection.transaction.depth += 1
        connection.transaction.levelStarts.append(
            UndoLevelStart(log: connection.transaction.undoLog.count, destroyed: connection.transaction.destroyed.count))
        connection.changes.byLevel.append(TableChanges())
        connection.transaction.recordsAwaitingOutcome.append([])
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
        let depth = connection.transaction.depth - 1
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
            if depth == 0, commitFaults.load(ordering: .relaxed) != 0 { try injectCommitFault(connection) }
            try connection.execute(depth == 0 ? "COMMIT" : "RELEASE activerecord_\(depth)")
        } catch {
            // A COMMIT whose connection was lost on the way may have been committed: say so.
            let outcomeUnknown = depth == 0 && wasUsable && !connection.isUsable
            try? rollbackTransaction()
            throw outcomeUnknown ? ActiveRecordError.commitOutcomeUnknown(after: error) : error
        }
        // Committed: the parent level now owns what to undo (nothing, at the top).
        connection.transaction.levelStarts.removeLast()
        if connection.transaction.levelStarts.isEmpty {
            connection.transaction.undoLog.removeAll()
            connection.transaction.forgetDestroyed()
        }
        connection.transaction.depth -= 1
        if depth == 0, !connection.transaction.migratedTables.isEmpty {
            // The tables this transaction created are now there for every thread.
            let prepared = connection.transaction.migratedTables
            connection.transaction.migratedTables = []
            migratedTables.withLock { $0.formUnion(prepared) }
        }
        // What it changed, and whose callbacks wait: the parent level's now, or done.
        let changes = connection.changes.byLevel.removeLast()
        let records = connection.transaction.recordsAwaitingOutcome.removeLast()
        connection.forgetNotedTable()
        if depth > 0 {
            connection.changes.byLevel[connection.changes.byLevel.count - 1].formUnion(changes)
            connection.transaction.recordsAwaitingOutcome[connection.transaction.recordsAwaitingOutcome.count - 1] += records
        } else {
            connection.changes.unpublished.formUnion(changes)
        }
        if depth == 0, connection.changes.hasUnpublished { publishChanges(of: connection) }
        release()
        if depth == 0 { eachOnce(records) { $0.afterCommit() } }
    }

    /// For the tests of ``retrying(attempts:isolation:_:)``: makes the next top-level COMMITs
    /// on this database fail as a COMMIT whose connection was lost in flight does
    /// (`.commitOutcomeUnknown`): `committed` says whether the transaction is committed first
    /// (its acknowledgement lost) or rolled back (the COMMIT never reached the server).
    package func loseCommits(_ count: Int, committed: Bool) {
        commitFaults.store(committed ? count : -count, ordering: .relaxed)
    }

    /// Fails a COMMIT as ``loseCommits(_:committed:)`` asked.
    @inline(never)
    private func injectCommitFault(_ connection: Connection) throws {
        let faults = commitFaults.load(ordering: .relaxed)
        commitFaults.store(faults > 0 ? faults - 1 : faults + 1, ordering: .relaxed)
        let lost = ActiveRecordError(.cannotOpen, "the connection was lost during COMMIT (a fault injected by a test)")
        if faults > 0 {
            try connection.execute("COMMIT")
            connection.transaction.endedByEngine = false
            try connection.execute(dialect.beginTransactionSQL(isolation: nil))  // for the rollback that follows
        }
        throw ActiveRecordError.commitOutcomeUnknown(after: lost)
    }

    /// Rolls back the innermost transaction level and puts its records back in memory.
    /// - Throws: `.misuse` when the calling thread has no transaction.
    package func rollbackTransaction() throws {
        let connection = try ownTransaction("roll back")
        let depth = connection.transaction.depth - 1
        connection.changes.byLevel.removeLast()
        let records = connection.transaction.recordsAwaitingOutcome.removeLast()
        connection.forgetNotedTable()
        defer {
            connection.transaction.depth -= 1
            release()
            eachOnce(records) { $0.afterRollback() }
        }
        let start = connection.transaction.levelStarts.removeLast()
        let undo = connection.transaction.undoLog.removeEntries(from: start.log)
        for entry in undo.reversed() { entry.undo() }
        connection.transaction.undestroy(from: start.destroyed)
        // What this transaction's automatic migration made may be undone: check again.
        connection.transaction.migratedTables = []
        if depth == 0 {
            connection.transaction.endedByEngine = false
            // Unless the engine rolled it back already (the error that made it is the one to see).
            if connection.hasOpenTransaction { try connection.execute("ROLLBACK") }
        } else if connection.transaction.endedByEngine {
            return  // its savepoint went with the whole transaction
        } else if !connection.hasOpenTransaction {
            // The engine rolled back the whole transaction (SQLite does when a write in it is
            // interrupted): the outer levels go on in a transaction that can only roll back, so
            // that what they run meanwhile is not committed statement by statement.
            connection.transaction.endedByEngine = true
            if connection.isUsable { try connection.execute(dialect.beginTransactionSQL(isolation: nil)) }
        } else {
            try connection.execute("ROLLBACK TO activerecord_\(depth)")
            try connection.execute("RELEASE activerecord_\(depth)")
        }
    }

    /// Whether the calling thread is inside a transaction of this database (a
    /// `transaction { }` block, a save's callbacks, `ar_begin` from C).
    public var isInTransaction: Bool { (heldByCaller?.transaction.depth ?? 0) > 0 }

    /// Throws `.misuse` unless the calling thread is in a transaction: for a locking read
    /// (`what`), whose lock would end with its own statement.
    package func requireTransaction(for what: String) throws {
        guard !isInTransaction else { return }
        throw ActiveRecordError(
            .misuse,
            "\(what) holds the rows it reads until the transaction ends, and there is no transaction: "
                + "read, change and save them inside db.transaction { }")
    }

    /// The calling thread's connection, in a transaction; else `.misuse`, since a
    /// transaction ends on the thread that began it.
    private func ownTransaction(_ verb: String) throws -> Connection {
        guard let connection = heldByCaller, connection.transaction.depth > 0 else {
            throw ActiveRecordError(
                .misuse,
                "there is no transaction to \(verb) on this thread: a transaction ends on the thread that began it")
        }
        return connection
    }

    /// ``transaction(isolation:_:)-method`` on the ``current`` database.
    @discardableResult
    public static func transaction(isolation: TransactionIsolation? = nil, _ body: () throws -> Void) throws -> TransactionOutcome {
        try current.transaction(isolation: isolation, body)
    }

    /// Not available: see the instance method's note.
    @available(*, unavailable, message: "transaction { } returns how it ended (TransactionOutcome); use withTransaction { } to return the block's value")
    public static func transaction<Value>(isolation: TransactionIsolation? = nil, _ body: () throws -> Value) throws -> Value {
        fatalError("unavailable")
    }

    /// ``withTransaction(isolation:_:)-method`` on the ``current`` database: the block's value.
    public static func withTransaction<Value>(isolation: TransactionIsolation? = nil, _ body: () throws -> Value) throws -> Value {
        try current.withTransaction(isolation: isolation, body)
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

/// Throw this inside `Database.transaction { }` to roll back without an error.
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

/// How much a transaction is isolated from the transactions that run beside it, weakest
/// first. The level of the outermost transaction holds for the savepoints inside it.
///
/// | level | SQLite | PostgreSQL |
/// |---|---|---|
/// | `nil` (the default) | serializable | `READ COMMITTED` (the server's default) |
/// | ``readCommitted`` | serializable | `READ COMMITTED`: each statement sees what was committed before it began |
/// | ``repeatableRead`` | serializable | `REPEATABLE READ`: one snapshot; a write to a row changed since fails |
/// | ``serializable`` | serializable | `SERIALIZABLE`: as if the transactions ran one at a time |
///
/// SQLite runs every transaction alone (`BEGIN IMMEDIATE` takes the database's write lock),
/// which is serializable whatever is asked. On PostgreSQL, a transaction at
/// `REPEATABLE READ` or `SERIALIZABLE` may fail with `.transactionConflict` (its
/// ``ActiveRecordError/isRetryable`` is true): run the whole transaction again.
///
/// ```swift
/// try db.transaction(isolation: .serializable) {
///     let from = try Account.find(1)!, to = try Account.find(2)!
///     from.balance -= 10; to.balance += 10
///     try from.save(); try to.save()
/// }
/// ```
public enum TransactionIsolation: Int, Sendable, Comparable, CustomStringConvertible {
    /// Each statement sees the data committed before it began.
    case readCommitted
    /// The transaction sees one snapshot, taken at its first statement.
    case repeatableRead
    /// The transactions behave as if they ran one after the other.
    case serializable

    /// Whether `lhs` is weaker than `rhs`.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level as SQL writes it: `READ COMMITTED`, `REPEATABLE READ`, `SERIALIZABLE`.
    public var description: String {
        switch self {
        case .readCommitted: "READ COMMITTED"
        case .repeatableRead: "REPEATABLE READ"
        case .serializable: "SERIALIZABLE"
        }
    }
}
