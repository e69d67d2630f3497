import ARCore

/// A ``DynamicQuery``'s rows, stepped one at a time at the caller's pace on a reader
/// connection leased for the cursor's life: what the C API's `ar_query_next` reads from.
///
/// The rows are those of the database as the first step found it (the reader's snapshot),
/// as with ``DynamicQuery/fetch()``. The reader goes back to the pool when the rows run out,
/// a step fails, or the cursor is closed or released.
package final class DynamicRowCursor {
    package let model: DynamicModel
    /// The statement, on the row of the last successful ``step()``; `nil` once closed.
    package private(set) var statement: Statement?
    private var lease: ReaderLease?

    init(model: DynamicModel, statement: Statement, lease: ReaderLease) {
        self.model = model
        self.statement = statement
        self.lease = lease
    }

    deinit { close() }

    /// Moves to the next row: `true` when there is one (read it through ``statement``),
    /// `false` when the rows ran out (the cursor is then closed).
    package func step() throws -> Bool {
        guard let statement else { return false }
        do {
            if try statement.step() { return true }
        } catch {
            close()
            throw error
        }
        close()
        return false
    }

    /// Finalizes the statement, then gives the reader back.
    package func close() {
        statement = nil
        lease = nil
    }
}

@available(*, unavailable, message: "A cursor is used from one thread at a time")
extension DynamicRowCursor: Sendable {}

extension DynamicQuery {
    /// A cursor over the matching rows on a leased reader connection, or `nil` when no reader
    /// can be leased (in a transaction, in memory, all readers busy): then ``fetch()``.
    /// - Throws: `.invalidPredicate`, `.unknownColumn`, SQLite errors.
    package func rowCursor() throws -> DynamicRowCursor? {
        let (clauses, arguments) = try compile(ordered: true)
        let mapping = model.mapping
        guard let lease = try Database.current.leaseReader(for: mapping) else { return nil }
        let statement = try lease.connection.prepare("SELECT \(mapping.qualifiedSelectList) \(clauses)")
        try statement.bind(arguments)
        lease.connection.tracer?(statement.sql)
        return DynamicRowCursor(model: model, statement: statement, lease: lease)
    }
}
