#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Statement timeouts: a limit for every statement of a database, and a limit for the
/// statements of one block.
extension Database {
    /// How long each statement this database runs may take; `nil` (the default): no limit.
    ///
    /// ```swift
    /// db.statementTimeout = .seconds(5)
    /// do {
    ///     try Report.query().where("total > %@", 0).fetch()
    /// } catch let error as ActiveRecordError where error.code == .timeout {
    ///     print(error.message)          // "… ran longer than its statement timeout of 5 s …"
    /// }
    /// ```
    ///
    /// A statement that runs longer fails with ``ActiveRecordError/Code/timeout``:
    /// - SQLite interrupts it (a progress handler, installed only while a limit applies); the
    ///   connection stays usable. A read interrupted inside a transaction leaves the
    ///   transaction as it was; a write interrupted inside one makes SQLite roll the whole
    ///   transaction back, even from a savepoint: the `.timeout` ends it, and levels that go
    ///   on after catching it run in a transaction that can only roll back (its commit fails
    ///   with `.transactionAborted`).
    /// - PostgreSQL cancels it (the server's `statement_timeout`, set on each connection when
    ///   the limit changes); the transaction it ran in is aborted, the connection stays usable.
    ///   If the server does not answer at all (stopped, or cut off by the network while its
    ///   kernel still acknowledges), the library gives up once the limit plus a grace of
    ///   1 s + 10% has passed: it closes the connection (so any transaction on it is rolled
    ///   back by the server) and the pool opens another for the next work.
    ///
    /// The limit counts from the start of each statement (on SQLite, a whole batch of rows
    /// written through one statement counts as one; on PostgreSQL, each round trip to the
    /// server, and each step of a cursor, has the limit). Setting it applies to each connection
    /// before its next use: a transaction running on another thread ends under the limit it
    /// began with. ``withStatementTimeout(_:_:)`` sets another for one block.
    /// Zero or less is taken as one millisecond.
    public var statementTimeout: Duration? {
        get { statementTimeoutStorage.withLock { $0 } }
        set {
            statementTimeoutStorage.withLock { $0 = newValue }
            configureConnections { $0.statementTimeout = newValue }
        }
    }

    /// Runs `body` with another statement timeout for the statements it runs on this
    /// database, on the calling thread: `timeout` instead of ``statementTimeout`` (`nil`: no
    /// limit at all inside the block). The innermost block's limit wins; when the block ends,
    /// the next statement has the database's limit again.
    ///
    /// ```swift
    /// let totals = try db.withStatementTimeout(.seconds(2)) {
    ///     try Order.query().sum("total")          // stopped with .timeout after 2 s
    /// }
    /// try db.withStatementTimeout(nil) { try migrator.apply(to: db) }   // no limit here
    /// ```
    ///
    /// A block opened on no thread costs the statements of the database nothing (one atomic
    /// counter says that none is open); the limit does not follow work the block hands to
    /// another thread or task.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws (``ActiveRecordError/Code/timeout`` for a statement over
    ///   the limit).
    public func withStatementTimeout<R>(_ timeout: Duration?, _ body: () throws -> R) rethrows -> R {
        statementTimeouts.open(timeout)
        defer { statementTimeouts.close() }
        return try body()
    }
}

/// The per-call statement timeouts of one database: the blocks of
/// ``Database/withStatementTimeout(_:_:)`` open on each thread, and how many are open on any.
/// Every connection of the database holds it, to find the limit of the thread it runs for.
package final class StatementTimeoutScopes: Sendable {
    /// How many blocks are open on this database, on any thread: while none is, a statement
    /// learns it with one relaxed atomic load, without a thread-local look-up.
    private let openCount = Atomic<Int>(0)

    package init() {}

    /// Whether a block is open on this database, on any thread.
    @inline(__always)
    package var anyOpen: Bool { openCount.load(ordering: .relaxed) > 0 }

    /// The limit of the calling thread's innermost block on this database: `nil` when none is
    /// open, `.some(nil)` for a block without limit.
    package func innermost() -> Duration?? {
        let key = ObjectIdentifier(self)
        return Self.scopes.withValue { scopes in
            for scope in scopes.reversed() where scope.database == key { return .some(scope.timeout) }
            return nil
        }
    }

    fileprivate func open(_ timeout: Duration?) {
        let key = ObjectIdentifier(self)
        Self.scopes.withValue { $0.append(Scope(database: key, timeout: timeout)) }
        openCount.add(1, ordering: .relaxed)
    }

    fileprivate func close() {
        openCount.subtract(1, ordering: .relaxed)
        let key = ObjectIdentifier(self)
        Self.scopes.withValue { scopes in
            if let index = scopes.lastIndex(where: { $0.database == key }) { scopes.remove(at: index) }
        }
    }

    /// An open block: its database's scopes (by identity) and its limit.
    private struct Scope {
        let database: ObjectIdentifier
        let timeout: Duration?
    }

    /// Each thread's open blocks, innermost last.
    private static let scopes = PerThread { [Scope]() }
}

extension Duration {
    /// `200 ms`, `5 s`, `1.5 s`: a limit as messages name it.
    package var limitDescription: String {
        let milliseconds = components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
        if milliseconds < 1000 { return "\(max(milliseconds, 0)) ms" }
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return "\(Double(milliseconds) / 1000) s"
    }

    /// Whole milliseconds, rounded up, at least 1: what an engine sets as a limit.
    package var limitMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds < 0 ? 1 : Int64.max / 2 }
        let fraction = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return max(1, whole + fraction)
    }
}
