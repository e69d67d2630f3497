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
        try withConnection { connection in try transaction(on: connection, body) }
    }

    private func transaction(on connection: Connection, _ body: () throws -> Void) throws -> TransactionOutcome {
        let depth = connection.transactionDepth
        let savepoint = "activerecord_\(depth)"
        try connection.execute(depth == 0 ? "BEGIN IMMEDIATE" : "SAVEPOINT \(savepoint)")
        connection.transactionDepth += 1
        connection.rollbackActions.append([])
        defer { connection.transactionDepth -= 1 }
        do {
            try body()
        } catch {
            try rollback(depth: depth, savepoint: savepoint)
            if error is Rollback { return .rolledBack }
            throw error
        }
        do {
            try connection.execute(depth == 0 ? "COMMIT" : "RELEASE \(savepoint)")
        } catch {
            try? rollback(depth: depth, savepoint: savepoint)
            throw error
        }
        // Committed: the parent level now owns what to undo (nothing, at the top).
        let undo = connection.rollbackActions.removeLast()
        if !connection.rollbackActions.isEmpty { connection.rollbackActions[connection.rollbackActions.count - 1] += undo }
        return .committed
    }

    private func rollback(depth: Int, savepoint: String) throws {
        let connection = self.connection
        // Put records back as they were before this level: ids, saved values, dropped flags.
        for entry in connection.rollbackActions.removeLast().reversed() { entry.undo() }
        forgetCheckedTables()
        if depth == 0 {
            try connection.execute("ROLLBACK")
        } else {
            try connection.execute("ROLLBACK TO \(savepoint)")
            try connection.execute("RELEASE \(savepoint)")
        }
    }

    /// ``transaction(_:)`` on the ``current`` database.
    @discardableResult
    public static func transaction(_ body: () throws -> Void) throws -> TransactionOutcome {
        try current.transaction(body)
    }
}

/// Throw this inside ``Database/transaction(_:)`` to roll back without an error.
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
