@_spi(Engines) import ARCore

/// Iterates a query's records one row at a time, in constant memory.
///
/// ```swift
/// let cursor = try User.query().order(by: "id").cursor()
/// while let user = try cursor.next() { … }
/// ```
///
/// Outside a transaction, on a file database, the cursor reads through one of the
/// database's reader connections, leased until the rows run out or the cursor is closed:
/// it sees the rows as they were at its first step, and other threads write meanwhile.
/// Inside a transaction it reads through the writer (and so sees the transaction's own
/// writes), as it does in memory or when every reader is in use; it then takes the
/// writer's lock for each step only.
public final class RecordCursor<Record: Model> {
    private let rows: RowCursor
    private let mapping: ModelMapping
    private let columns: [Int]?

    init(rows: RowCursor, mapping: ModelMapping, columns: [Int]?) {
        self.rows = rows
        self.mapping = mapping
        self.columns = columns
    }

    /// The next record, or `nil` when there are no more.
    public func next() throws -> Record? {
        try rows.next { statement in
            let record = Record()
            record.adopt(mapping)
            try mapping.table.decode(record, from: statement, columns: columns)
            return record
        }
    }

    /// Releases the statement (and the reader) before the rows run out.
    public func close() { rows.close() }
}

@available(*, unavailable, message: "A cursor is used from one thread at a time")
extension RecordCursor: Sendable {}

extension Query {
    /// A cursor over the query's records, for results too large to hold at once.
    /// - Throws: what ``fetch()`` throws.
    public func cursor() throws -> RecordCursor<Record> {
        let sql = try compile(defaultsToIdOrder: true)
        let cursor = try sql.openCursor()
        return RecordCursor(rows: cursor, mapping: try Record.mapping(), columns: sql.selectedColumns)
    }

    /// Calls `body` with each record in turn, in constant memory.
    public func forEach(_ body: (Record) throws -> Void) throws {
        let cursor = try cursor()
        while let record = try cursor.next() { try body(record) }
    }
}
