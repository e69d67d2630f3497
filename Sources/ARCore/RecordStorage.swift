#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Date {
    /// Now, rounded to what a REAL column holds, so that a record's timestamp
    /// equals the one read back (`Date` counts from 2001, the column from 1970).
    package static var nowAsStored: Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970) }
}

/// The bookkeeping every record carries: its row id, timestamps and whether it was destroyed.
///
/// 32 bytes (optionals would take 56): the three values are stored plain (dates as `Date`
/// holds them, from 2001), with a bit each saying whether they are set.
package struct RecordHeader {
    private var rawID: Int64 = 0
    private var rawCreatedAt: Double = 0
    private var rawUpdatedAt: Double = 0
    private var flags: UInt8 = 0

    private static let hasID: UInt8 = 1
    private static let hasCreatedAt: UInt8 = 2
    private static let hasUpdatedAt: UInt8 = 4
    private static let destroyed: UInt8 = 8

    package init() {}

    /// The row id; `nil` before the first save.
    package var id: Int64? {
        get { flags & Self.hasID == 0 ? nil : rawID }
        set { set(Self.hasID, newValue != nil); rawID = newValue ?? 0 }
    }

    /// When the record was first saved.
    package var createdAt: Date? {
        get { flags & Self.hasCreatedAt == 0 ? nil : Date(timeIntervalSinceReferenceDate: rawCreatedAt) }
        set { set(Self.hasCreatedAt, newValue != nil); rawCreatedAt = newValue?.timeIntervalSinceReferenceDate ?? 0 }
    }

    /// When the record was last saved with changes.
    package var updatedAt: Date? {
        get { flags & Self.hasUpdatedAt == 0 ? nil : Date(timeIntervalSinceReferenceDate: rawUpdatedAt) }
        set { set(Self.hasUpdatedAt, newValue != nil); rawUpdatedAt = newValue?.timeIntervalSinceReferenceDate ?? 0 }
    }

    package var isDestroyed: Bool {
        get { flags & Self.destroyed != 0 }
        set { set(Self.destroyed, newValue) }
    }

    private mutating func set(_ flag: UInt8, _ isOn: Bool) {
        flags = isOn ? flags | flag : flags & ~flag
    }

    /// The header of a row selected with ``TableSchema/selectList``, whose `id` is result
    /// column `offset` (`createdAt` and `updatedAt` follow it). The statement is borrowed (an
    /// initializer's argument is otherwise passed retained, a retain and release per row).
    package init(decoding statement: borrowing Statement, at offset: Int32 = 0) {
        rawID = statement.int64(offset)
        flags = Self.hasID
        if let createdAt = statement.optionalDouble(offset + 1) {
            rawCreatedAt = Date(timeIntervalSince1970: createdAt).timeIntervalSinceReferenceDate
            flags |= Self.hasCreatedAt
        }
        if let updatedAt = statement.optionalDouble(offset + 2) {
            rawUpdatedAt = Date(timeIntervalSince1970: updatedAt).timeIntervalSinceReferenceDate
            flags |= Self.hasUpdatedAt
        }
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
    /// Reads each of the first `count` columns (all of them), column `index` from result column
    /// `first + index`, as ``decodeColumn(_:from:at:)`` does; a storage that reads some types
    /// straight from their cells calls `decodeOther(index)` for the columns it does not read.
    func decodeAllColumns(count: Int, from statement: Statement, at first: Int32, other decodeOther: (Int) throws -> Void) throws
    /// Called after a row was decoded into the record.
    func didDecode()
    /// Whether column `index` differs from its original (last loaded or saved) value.
    func isColumnChanged(_ index: Int) -> Bool
    /// Calls `body` with the index of each of the first `count` columns (all of them) that
    /// differs from its original value, in order.
    func forEachChangedColumn(count: Int, _ body: (Int) -> Void)
    /// The changed column among the first `count` when the record can tell at once that no
    /// other one may have changed (it keeps one column's original, or none): that column's
    /// index when it changed, -1 when nothing did; -2 when it cannot tell
    /// (``forEachChangedColumn(count:_:)`` then says). The default says -2.
    func onlyChangedColumn(count: Int) -> Int
    /// Makes the current value of column `index` its original one, after a save.
    func markColumnSaved(_ index: Int)
    /// Makes the current value of each of the first `count` columns (all of them) its
    /// original one, after an insert.
    func markAllColumnsSaved(count: Int)
    /// Binds each of the first `count` columns (all of them), column `index` to parameter
    /// `first + index`: an insert's values.
    func bindAllColumns(count: Int, to statement: Statement, from first: Int32) throws
    /// The original (last loaded or saved) value of column `index`.
    func originalValue(_ index: Int) -> DatabaseValue
    /// Sets the original value of column `index` back, after a rollback.
    func restoreOriginal(_ index: Int, _ value: DatabaseValue)
    /// The current value of column `index`.
    func currentValue(_ index: Int) throws -> DatabaseValue
    /// Sets the current value of column `index` (its original stays).
    /// - Throws: `.typeMismatch` for a value the column cannot hold.
    func assignColumn(_ index: Int, _ value: DatabaseValue) throws
}

extension RecordStorage {
    package func didDecode() {}

    package func markAllColumnsSaved(count: Int) {
        for index in 0..<count { markColumnSaved(index) }
    }

    package func forEachChangedColumn(count: Int, _ body: (Int) -> Void) {
        for index in 0..<count where isColumnChanged(index) { body(index) }
    }

    package func decodeAllColumns(count: Int, from statement: Statement, at first: Int32, other decodeOther: (Int) throws -> Void) throws {
        for index in 0..<count { try decodeOther(index) }
    }

    package func onlyChangedColumn(count: Int) -> Int { -2 }

    package func bindAllColumns(count: Int, to statement: Statement, from first: Int32) throws {
        for index in 0..<count { try bindColumn(index, to: statement, at: first + Int32(index)) }
    }
}

/// How to put a record back in memory when the transaction that wrote it rolls back.
/// Values rather than closures: a transaction of many writes holds one per write.
package enum UndoEntry {
    /// Restore the header (an insert: new again).
    case header(any RecordStorage, RecordHeader)
    /// Restore the header and the original values of the updated columns.
    case update(any RecordStorage, RecordHeader, columns: [Int], originals: [DatabaseValue])
    /// ``update(_:_:columns:originals:)`` of one column, without the two arrays (allocated
    /// per update and freed at the commit: most of what an update's undo entry cost).
    case updateOne(any RecordStorage, RecordHeader, column: Int, original: DatabaseValue)
    /// Anything else (a relation's queue).
    case action(() -> Void)

    package func undo() {
        switch self {
        case .header(let record, let header):
            record.header = header
        case .update(let record, let header, let columns, let originals):
            record.header = header
            for (index, original) in zip(columns, originals) { record.restoreOriginal(index, original) }
        case .updateOne(let record, let header, let column, let original):
            record.header = header
            record.restoreOriginal(column, original)
        case .action(let action):
            action()
        }
    }
}

/// Where a transaction level's entries start in ``TransactionState/undoLog`` and
/// ``TransactionState/destroyed``.
package struct UndoLevelStart {
    package var log: Int
    package var destroyed: Int
}

/// What a transaction keeps to undo (``UndoEntry``s, destroyed records) in the order written,
/// kept in chunks: a long transaction appends without ever copying the entries it holds, where
/// one array would copy them all each time it doubled (see Benchmarks/README.md, Hot-path notes).
package struct ChunkedLog<Entry> {
    /// The chunks filled, each holding ``chunkCapacity`` entries.
    private var full: [[Entry]] = []
    /// The chunk entries go to: one array appended to, as a write appends to one array.
    private var tail: [Entry] = []
    static var chunkCapacity: Int { 1024 }

    package init() {}

    /// How many entries the log holds.
    package var count: Int { full.count * Self.chunkCapacity + tail.count }

    @inline(__always)
    package mutating func append(_ entry: consuming Entry) {
        if tail.count == Self.chunkCapacity { startChunk() }
        tail.append(entry)
    }

    /// Files the full tail and starts the next at its full size. (The first grows as an array
    /// does: a transaction of a few writes holds a small one.)
    @inline(never)
    private mutating func startChunk() {
        full.append(tail)
        tail = []
        tail.reserveCapacity(Self.chunkCapacity)
    }

    /// Removes every entry.
    package mutating func removeAll() {
        full = []
        tail = []
    }

    /// Removes the entries from position `start` on and returns them, in the order written.
    package mutating func removeEntries(from start: Int) -> [Entry] {
        let count = count
        precondition(start >= 0 && start <= count, "undo log position \(start) out of 0...\(count)")
        guard start < count else { return [] }
        let (firstChunk, offset) = start.quotientAndRemainder(dividingBy: Self.chunkCapacity)
        var removed: [Entry] = []
        removed.reserveCapacity(count - start)
        if firstChunk == full.count {
            removed += tail[offset...]
            tail.removeSubrange(offset...)
            return removed
        }
        removed += full[firstChunk][offset...]
        for number in (firstChunk + 1)..<full.count { removed += full[number] }
        removed += tail
        // The chunk the removed entries start in is the tail again.
        tail = Array(full[firstChunk][..<offset])
        tail.reserveCapacity(Self.chunkCapacity)
        full.removeSubrange(firstChunk...)
        return removed
    }
}
