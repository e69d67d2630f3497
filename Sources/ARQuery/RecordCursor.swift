import ARCore

/// Iterates a query's records one row at a time, in constant memory.
///
/// ```swift
/// let cursor = try User.query().order(by: "id").cursor()
/// while let user = try cursor.next() { … }
/// ```
///
/// The cursor has its own prepared statement and takes the database's lock
/// for each step only, so other work may run between steps. It is finalized
/// when the rows run out or the cursor is released.
public final class RecordCursor<Record: Model> {
    private let database: Database
    private let mapping: ModelMapping
    private let columns: [Int]?
    private var statement: Statement?

    init(database: Database, mapping: ModelMapping, columns: [Int]?, statement: Statement) {
        self.database = database
        self.mapping = mapping
        self.columns = columns
        self.statement = statement
    }

    deinit { close() }

    /// The next record, or `nil` when there are no more.
    public func next() throws -> Record? {
        try database.withConnection { _ in
            guard let statement else { return nil }
            guard try statement.step() else {
                self.statement = nil
                return nil
            }
            let record = Record()
            record.adopt(mapping)
            try mapping.table.decode(record, from: statement, columns: columns)
            return record
        }
    }

    /// Releases the statement before the rows run out.
    public func close() {
        // Finalize under the lock: the connection may be in use on another thread.
        try? database.withConnection { _ in statement = nil }
    }
}

@available(*, unavailable, message: "A cursor is used from one thread at a time")
extension RecordCursor: Sendable {}

extension Query {
    /// A cursor over the query's records, for results too large to hold at once.
    public func cursor() throws -> RecordCursor<Record> {
        let sql = try compile(defaultsToIdOrder: true)
        let database = try Database.current
        // The cursor steps on the writer, taking its lock per step (see RecordCursor).
        for table in sql.tables { try database.withTable(table.table) { _ in } }
        return try database.withConnection { connection in
            let statement = try connection.prepare(recordsSQL(sql))
            try statement.bind(sql.bodyArguments + sql.tailArguments)
            connection.tracer?(statement.sql)
            return RecordCursor(database: database, mapping: sql.tables[0].model, columns: sql.selectedColumns, statement: statement)
        }
    }

    /// Calls `body` with each record in turn, in constant memory.
    public func forEach(_ body: (Record) throws -> Void) throws {
        let cursor = try cursor()
        while let record = try cursor.next() { try body(record) }
    }
}
