#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// `insertAll` through an engine's bulk insert (``EngineBulkInsert``; PostgreSQL: many rows per
// statement): each record binds its row as it would to the `INSERT` (the same conversions and
// checks, -0.0 and NaN refused), into a ``Statement`` whose engine hands every row to the bulk
// insert instead of running it; the records get their ids once the engine has them all.

extension TableOperations {
    /// Inserts `records` through the engine's bulk insert, giving each its id and the batch's
    /// timestamps (`now`); `false`, having done nothing, when the engine has none (SQLite).
    /// - Throws: the engine's error, naming the record that failed when the engine can tell.
    func insertAllInBulk<Record: RecordStorage>(_ records: [Record], now: Date, in connection: Connection) throws -> Bool {
        let count = schema.columns.count
        try connection.startStatement()
        guard let bulk = try connection.engineConnection.prepareBulkInsert(
            into: schema.name, columns: schema.insertColumns, rowCount: records.count, trace: connection.tracer)
        else { return false }
        let rows = Statement(
            engine: BulkRowCollector(bulk, parameterCount: Int32(count + 2)), sql: insertSQL(connection.dialect),
            connection: connection)
        let stamp = DatabaseValue.real(now.timeIntervalSince1970)
        let ids: [Int64]
        do {
            for offset in records.indices {
                if offset > 0 { rows.resetForRebinding() }
                try rows.bind(stamp, at: 1)
                try rows.bind(stamp, at: 2)
                try records[offset].bindAllColumns(count: count, to: rows, from: 3)
                _ = try rows.insert()
            }
            ids = try bulk.finish()
        } catch let failure as BulkInsertFailure {
            throw Self.failure(failure.error, row: failure.row, of: records.count)
        }
        guard ids.count == records.count else {
            throw ActiveRecordError(.engine, "insertAll: the engine returned \(ids.count) ids for \(records.count) records")
        }
        for offset in records.indices {
            let record = records[offset]
            record.header.id = ids[offset]
            record.header.createdAt = now
            record.header.updatedAt = now
            record.markAllColumnsSaved(count: count)
        }
        return true
    }

    /// A batch's error, its message prefixed with the record that caused it (`row`, from 0),
    /// as a failed validation names it.
    static func failure(_ error: any Error, row: Int?, of total: Int) -> any Error {
        guard let row, var failure = error as? ActiveRecordError else { return error }
        failure.message = "record \(row + 1) of \(total): \(failure.message)"
        return failure
    }
}

/// The engine of the ``Statement`` that records bind their rows to in a bulk insert: it hands
/// each row to the bulk insert (``EngineStatement/insert(binding:)``), which copies what it keeps.
private final class BulkRowCollector: EngineStatement {
    private let bulk: any EngineBulkInsert
    let parameterCount: Int32
    private var bound = UnsafeBufferPointer<Cell>(start: nil, count: 0)

    init(_ bulk: any EngineBulkInsert, parameterCount: Int32) {
        self.bulk = bulk
        self.parameterCount = parameterCount
    }

    func bind(_ parameters: UnsafeBufferPointer<Cell>) throws { bound = parameters }

    /// Appends the row bound; its id comes from ``EngineBulkInsert/finish()``.
    func insert() throws -> Int64 {
        try bulk.append(bound)
        return 0
    }

    func insert(binding parameters: UnsafeBufferPointer<Cell>) throws -> Int64 {
        try bulk.append(parameters)
        return 0
    }

    func step() throws -> Bool { false }
    func row() -> UnsafeBufferPointer<Cell> { UnsafeBufferPointer(start: nil, count: 0) }
    func upsert() throws -> Bool { throw ActiveRecordError(.misuse, "a bulk insert's rows are not upserted") }
    func reset() { bound = UnsafeBufferPointer(start: nil, count: 0) }
    func resetKeepingBindings() {}
    func finalize() {}
    func expandedSQL() -> String? { nil }
    var columnCount: Int32 { 0 }
    func columnName(_ index: Int32) -> String { "" }
}
