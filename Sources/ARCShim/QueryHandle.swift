@_spi(Engines) import ARCore
import ActiveRecord

/// `ar_query`: a query being built, then iterated.
final class QueryHandle: Handle {
    let model: ModelHandle
    /// The model as frozen when the query was made (ar_query_new freezes it).
    let frozen: ModelHandle.Frozen
    let predicate: String?
    var arguments: [QueryArgument?]
    var orderings: [(String, Bool)] = []
    var limit: Int?
    var offset: Int?
    /// The columns and values the next ar_query_update_all sets (ar_query_set_*).
    var assignments: [(column: String, value: DatabaseValue)] = []
    /// Set when ar_query_next first runs the query: the cursor over its rows, on a leased
    /// reader (outside a transaction) or on the writer (see ``RowCursor``).
    var rows: RowCursor?
    // Unchecked exclusivity: a query handle is used by one thread at a time (the C API's
    // rule), and ar_query_next reads this on every row.
    /// The record last returned, kept to be reused once C releases it.
    @exclusivity(unchecked) var current: RecordHandle?

    init(model: ModelHandle, frozen: ModelHandle.Frozen, predicate: String?, placeholders: Int) {
        self.model = model
        self.frozen = frozen
        self.predicate = predicate
        arguments = Array(repeating: nil, count: placeholders)
        super.init(kind: .query)
    }

    /// The records first let go of the cursor's row, so that the cursor finalizes its
    /// statement before it gives its reader back.
    deinit { forgetCurrent() }

    /// Lets the last record go: a record C still holds gets its row's values; one C released
    /// drops its row. Call when the rows end, before the cursor closes.
    func forgetCurrent() {
        releasedCurrent()?.reset(row: nil, record: nil)
        current = nil
    }

    /// The record last returned if C released it (to reuse), else `nil`, the record then
    /// keeping its values: call before the cursor leaves the row.
    func releasedCurrent() -> RecordHandle? {
        guard current != nil else { return nil }
        if isKnownUniquelyReferenced(&current) { return current }
        current?.detach()
        current = nil
        return nil
    }

    /// What ``stepInPlace()`` did.
    enum InPlaceStep { case notInPlace, row(RecordHandle), done }

    /// ar_query_next's common case: C released the record it was given last, and that record
    /// still reads the cursor's row in place (on a reader). The cursor steps with the record
    /// left on its statement, and the same record comes back for the new row. When the rows
    /// run out (or the step fails) the record lets the statement go before the cursor closes.
    /// `.notInPlace`: take the general path.
    func stepInPlace() throws -> InPlaceStep {
        guard let cursor = rows, isKnownUniquelyReferenced(&current), let record = current, reads(cursor, record)
        else { return .notInPlace }
        // At the end (or a failed step) the record lets the statement go, then the cursor closes.
        func finish() {
            record.reset(row: nil, record: nil)
            current = nil
            cursor.close()
        }
        let hasRow: Bool
        do {
            hasRow = try cursor.advance()
        } catch {
            finish()
            throw error
        }
        guard hasRow else {
            finish()
            return .done
        }
        record.movedToNextRow()
        return .row(record)
    }

    /// Whether `record` reads `cursor`'s row in place. A function of its own, so that no
    /// reference to the statement outlives it (closing the cursor needs the only one).
    private func reads(_ cursor: RowCursor, _ record: RecordHandle) -> Bool {
        guard let statement = cursor.currentRow else { return false }
        return record.readsRow(of: statement)
    }

    /// Throws AR_MISUSE once ar_query_next has run the query: it can no longer change.
    func checkNotRun(_ function: String) throws {
        guard rows == nil else { throw ActiveRecordError(.misuse, "\(function): the query already ran; make a new one") }
    }

    func query() throws -> DynamicQuery {
        guard arguments.allSatisfy({ $0 != nil }) else {
            let missing = arguments.indices.filter { arguments[$0] == nil }.map { String($0 + 1) }
            throw ActiveRecordError(.invalidPredicate, "placeholders \(missing.joined(separator: ", ")) have no value; bind them first")
        }
        var query = DynamicQuery(frozen.model, where: predicate, arguments: arguments.compactMap { $0 })
        for (column, ascending) in orderings { query = query.order(by: column, ascending: ascending) }
        if let limit { query = query.limit(limit) }
        if let offset { query = query.offset(offset) }
        return query
    }
}
