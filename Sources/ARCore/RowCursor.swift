/// The rows of one query, stepped at the caller's pace: what ``Database/openCursor(_:_:tables:)``
/// opens, and what both Swift's `RecordCursor` and the C API's `ar_query_next` read from.
///
/// On a leased connection (a reader outside a transaction, or a pooled connection) the
/// cursor holds no lock; on a single writer it takes the writer's lock for each step only, so
/// other work runs between steps. It is closed — its statement finalized, its connection given
/// back — when the rows run out, a step fails, or it is closed or released.
package final class RowCursor {
    package enum Source {
        /// A reader connection leased for the cursor's life.
        case reader(ReaderLease)
        /// The single writer, locked per step.
        case writer(Database)
        /// A pooled connection leased for the cursor's life.
        case pooled(PooledLease)
    }

    // Unchecked exclusivity: a cursor is confined to the thread stepping it (not Sendable),
    // and a step reads these on every row (a dynamic check on each read; see
    // Benchmarks/README.md, Hot-path notes).
    /// What keeps the leased connection the cursor's (released on close).
    @exclusivity(unchecked) private var lease: AnyObject?
    /// The database whose single writer the cursor steps on, locking it per step.
    private let writer: Database?
    /// The statement, on the row of the last successful step; `nil` once closed.
    @exclusivity(unchecked) private var statement: Statement?
    /// The statement's connection, for its statement timeout per step: kept open by the lease,
    /// or by the database whose writer it is.
    private let connection: Unretained<Connection>

    /// Prepares and binds `sql` on the source's connection. On the writer, the caller
    /// holds the writer's lock.
    init(on source: Source, _ sql: String, _ arguments: [DatabaseValue]) throws {
        let connection: Connection
        switch source {
        case .reader(let lease):
            self.lease = lease
            writer = nil
            connection = lease.connection
        case .writer(let database):
            writer = database
            guard let held = database.heldByCaller else { preconditionFailure("a writer cursor opened without the writer") }
            connection = held
        case .pooled(let lease):
            self.lease = lease
            writer = nil
            connection = lease.connection
        }
        self.connection = Unretained(connection)
        let statement = try connection.prepare(sql, .cursor)
        try statement.bind(arguments)
        connection.tracer?(sql)
        if let logger = connection.sqlLogger { connection.log(statement, to: logger) }
        self.statement = statement
    }

    deinit { close() }

    /// Whether the cursor reads through a leased connection (not the single writer).
    package var isOnReader: Bool { writer == nil }

    /// The statement on its current row, for a cursor on a leased connection only: no other
    /// thread uses it, so its row may be read between steps without a lock (until the next step).
    package var currentRow: Statement? { isOnReader ? statement : nil }

    /// Moves to the next row and reads it with `read`; `nil` when the rows ran out (the
    /// cursor is then closed). On the writer, the step and `read` run under its lock.
    package func next<R>(_ read: (Statement) throws -> R) throws -> R? {
        guard let writer else { return try stepAndRead(read) }
        return try writer.withConnection { _ in try stepAndRead(read) }
    }

    private func stepAndRead<R>(_ read: (Statement) throws -> R) throws -> R? {
        // No local reference to the statement: finish() must hold the only one.
        guard statement != nil else { return nil }
        let hasRow: Bool
        try connection.with { try $0.startStatement() }
        do {
            hasRow = try statement.unsafelyUnwrapped.step()
        } catch {
            finish()
            throw error
        }
        guard hasRow else {
            finish()
            return nil
        }
        return try read(statement.unsafelyUnwrapped)
    }

    /// Steps a cursor on a leased connection to its next row: `false` when the rows ran out.
    /// Unlike ``next(_:)`` it leaves the statement open either way, so that whoever reads
    /// the rows in place (``currentRow``) can let the statement go before ``close()``.
    package func advance() throws -> Bool {
        precondition(isOnReader, "advance() steps a cursor on a leased connection")
        guard statement != nil else { return false }
        try connection.with { try $0.startStatement() }
        return try statement.unsafelyUnwrapped.step()
    }

    /// Finalizes the statement (under the writer's lock, on the writer) and gives a leased
    /// reader back. Closing twice does nothing.
    package func close() {
        guard let writer else { return finish() }
        try? writer.withConnection { _ in finish() }
    }

    /// The statement first: it is finalized on its connection, which the lease keeps open,
    /// before the reader goes back to its pool (where another thread may take it). Whoever
    /// borrowed the row through ``currentRow`` must have let it go by now.
    private func finish() {
        assert(statement == nil || isKnownUniquelyReferenced(&statement), "a cursor's statement outlives its cursor")
        statement = nil
        lease = nil
    }
}

@available(*, unavailable, message: "A cursor is used from one thread at a time")
extension RowCursor: Sendable {}
