import Foundation

extension Date {
    /// Now, rounded to what a REAL column holds, so that a record's timestamp
    /// equals the one read back (`Date` counts from 2001, the column from 1970).
    package static var nowAsStored: Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970) }
}

/// The bookkeeping every record carries: its row id, timestamps and whether it was destroyed.
package struct RecordHeader {
    package var id: Int64?
    package var createdAt: Date?
    package var updatedAt: Date?
    package var isDestroyed = false
    package init() {}

    /// The header of a row selected with ``TableSchema/selectList``, whose `id` is result
    /// column `offset` (`createdAt` and `updatedAt` follow it).
    package init(decoding statement: Statement, at offset: Int32 = 0) {
        id = statement.int64(offset)
        createdAt = statement.isNull(offset + 1) ? nil : Date(timeIntervalSince1970: statement.double(offset + 1))
        updatedAt = statement.isNull(offset + 2) ? nil : Date(timeIntervalSince1970: statement.double(offset + 2))
    }
}

/// What the engine needs from a record: its header and access to its
/// declared columns by index. ``Model`` implements it through reflected
/// field offsets, ``DynamicRecord`` through an array of values.
package protocol RecordStorage: AnyObject {
    var header: RecordHeader { get set }
    /// Binds the current value of column `index` to parameter `parameter`.
    func bindColumn(_ index: Int, to statement: Statement, at parameter: Int32) throws
    /// Reads column `index` from result column `column` as both current and original value
    /// (a storage may set the originals in ``didDecode()`` instead, once per row).
    func decodeColumn(_ index: Int, from statement: Statement, at column: Int32) throws
    /// Called after a row was decoded into the record.
    func didDecode()
    /// Whether column `index` differs from its original (last loaded or saved) value.
    func isColumnChanged(_ index: Int) -> Bool
    /// Makes the current value of column `index` its original one, after a save.
    func markColumnSaved(_ index: Int)
    /// Makes the current value of each of the first `count` columns (all of them) its
    /// original one, after an insert.
    func markAllColumnsSaved(count: Int)
    /// The original (last loaded or saved) value of column `index`.
    func originalValue(_ index: Int) -> DatabaseValue
    /// Sets the original value of column `index` back, after a rollback.
    func restoreOriginal(_ index: Int, _ value: DatabaseValue)
}

extension RecordStorage {
    package func didDecode() {}

    package func markAllColumnsSaved(count: Int) {
        for index in 0..<count { markColumnSaved(index) }
    }
}

/// How to put a record back in memory when the transaction that wrote it rolls back.
/// Values rather than closures: a transaction of many writes holds one per write.
package enum UndoEntry {
    /// Restore the header (an insert: new again; a destroy: not destroyed).
    case header(any RecordStorage, RecordHeader)
    /// Restore the header and the original values of the updated columns.
    case update(any RecordStorage, RecordHeader, columns: [Int], originals: [DatabaseValue])
    /// Anything else (a relation's queue).
    case action(() -> Void)

    package func undo() {
        switch self {
        case .header(let record, let header):
            record.header = header
        case .update(let record, let header, let columns, let originals):
            record.header = header
            for (index, original) in zip(columns, originals) { record.restoreOriginal(index, original) }
        case .action(let action):
            action()
        }
    }
}
