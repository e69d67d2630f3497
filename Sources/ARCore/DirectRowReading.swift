#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An engine statement that reads its current row's values straight into a record's fields,
/// without making the row's ``Cell``s first (``EngineStatement/row()``): the library's fetch of
/// model records asks it, column after column, through ``Statement/readColumns(_:from:at:into:)``.
///
/// An engine need not have it: a statement whose engine does not conform reads every row
/// through its cells. One that does reads the types it can at no more cost than a cell, and
/// leaves the rest to the cells: a value of another storage class than the field's type takes
/// as it is (a conversion, a mismatch and its error), text that is not UTF-8, a server type it
/// does not read in place. The values stored are those of ``KnownFieldType``'s stores, the
/// same the cells give.
package protocol DirectRowReading: AnyObject {
    /// Reads result column `first + index` into `fields[index]` at `base`, for each index from
    /// `start` on, until one it cannot read: that one's index, `fields.count` when it read them
    /// all. The field it stops at is untouched.
    func readColumns(
        _ fields: UnsafeBufferPointer<ModelMapping.Field>, from start: Int, at first: Int32, into base: UnsafeMutableRawPointer
    ) -> Int

    /// Moves to the next row of the result the statement holds, when it holds one more: `false`,
    /// not moved, otherwise (the engine's step then ends the rows or fetches more). What
    /// ``EngineStatement/step()`` does within a result, without its other checks.
    func advanceInResult() -> Bool

    /// Reads the row's header columns (`id`, `createdAt`, `updatedAt`, the first three) into
    /// `header`, as ``readColumns(_:from:at:into:)`` reads ``ModelMapping/headerFields``: `true`
    /// when it read all three, else `false` (the row is then read through its cells).
    func readHeader(into header: UnsafeMutablePointer<ModelMapping.HeaderValues>) -> Bool

    /// Reads a row selected with ``TableSchema/selectList``: its header into `header`, as
    /// ``readHeader(into:)`` does, then the columns after it into `fields` at `base`, as
    /// ``readColumns(_:from:at:into:)`` does from field 0 and column 3, in one call (a row's
    /// read is then one call into the engine, not two). `nil` when the header was not read
    /// (nothing then is read); else the index ``readColumns(_:from:at:into:)`` returns.
    func readRow(
        header: UnsafeMutablePointer<ModelMapping.HeaderValues>, fields: UnsafeBufferPointer<ModelMapping.Field>,
        into base: UnsafeMutableRawPointer
    ) -> Int?

    /// ``readRow(header:fields:into:)`` of a row selected by its `id` (`WHERE id = ?` bound to
    /// `id`): its `id` column is neither `NULL` nor another value (the comparison found the
    /// row), so `header`'s id is `id`, not read.
    func readRow(
        foundByID id: Int64, header: UnsafeMutablePointer<ModelMapping.HeaderValues>,
        fields: UnsafeBufferPointer<ModelMapping.Field>, into base: UnsafeMutableRawPointer
    ) -> Int?

    /// How many rows of the result the statement holds are left from the current one on (it
    /// included), when it reads them with ``readRows(into:headers:fields:)``; else 0.
    var rowsLeftInResult: Int { get }

    /// Reads the ``rowsLeftInResult`` rows from the current one on, column after column (each
    /// column's kind and field type looked at once, not per row): row `i`'s header into
    /// `headers[i]` and its columns into `records[i]`'s fields, as
    /// ``readRow(header:fields:into:)`` reads one row, and then moves to the last of them:
    /// `true`. `false` when it met a value that ``readRow(header:fields:into:)`` would leave
    /// to the cells (or one it does not read so): still on the same row, some fields and
    /// headers written, for the caller to read the rows one by one.
    func readRows(
        into records: UnsafeBufferPointer<Model>, headers: UnsafeMutablePointer<ModelMapping.HeaderValues>,
        fields: UnsafeBufferPointer<ModelMapping.Field>
    ) -> Bool
}

extension DirectRowReading {
    var rowsLeftInResult: Int { 0 }

    func readRows(
        into records: UnsafeBufferPointer<Model>, headers: UnsafeMutablePointer<ModelMapping.HeaderValues>,
        fields: UnsafeBufferPointer<ModelMapping.Field>
    ) -> Bool {
        false
    }

    func readHeader(into header: UnsafeMutablePointer<ModelMapping.HeaderValues>) -> Bool {
        readColumns(ModelMapping.headerFields, from: 0, at: 0, into: UnsafeMutableRawPointer(header)) == 3
    }

    func readRow(
        header: UnsafeMutablePointer<ModelMapping.HeaderValues>, fields: UnsafeBufferPointer<ModelMapping.Field>,
        into base: UnsafeMutableRawPointer
    ) -> Int? {
        guard readHeader(into: header) else { return nil }
        return readColumns(fields, from: 0, at: 3, into: base)
    }

    func readRow(
        foundByID id: Int64, header: UnsafeMutablePointer<ModelMapping.HeaderValues>,
        fields: UnsafeBufferPointer<ModelMapping.Field>, into base: UnsafeMutableRawPointer
    ) -> Int? {
        readRow(header: header, fields: fields, into: base)
    }
}

/// The reader of an engine statement that reads no row straight into records: every column
/// is left to the cells.
final class NoDirectRowReading: DirectRowReading, Sendable {
    static let shared = NoDirectRowReading()

    func readColumns(
        _ fields: UnsafeBufferPointer<ModelMapping.Field>, from start: Int, at first: Int32, into base: UnsafeMutableRawPointer
    ) -> Int {
        start
    }

    func advanceInResult() -> Bool { false }
}

extension ModelMapping {
    /// The header's columns (`id`, `createdAt`, `updatedAt`) as fields of a ``HeaderValues``,
    /// for ``DirectRowReading/readColumns(_:from:at:into:)``.
    /// Never written after it is made, so threads share it.
    nonisolated(unsafe) package static let headerFields: UnsafeBufferPointer<Field> = {
        func field<Value: ColumnValue>(_ offset: Int?, _ type: Value.Type) -> Field {
            Field(
                valueOffset: offset!, originalOffset: 0, size: MemoryLayout<Value>.size, isTrivial: true,
                kind: Column<Value>.self, storage: KnownFieldType(Column<Value>.self))
        }
        let fields = UnsafeMutableBufferPointer<Field>.allocate(capacity: 3)
        _ = fields.initialize(from: [
            field(MemoryLayout<HeaderValues>.offset(of: \.id), Int64.self),
            field(MemoryLayout<HeaderValues>.offset(of: \.createdAt), Double?.self),
            field(MemoryLayout<HeaderValues>.offset(of: \.updatedAt), Double?.self),
        ])
        return UnsafeBufferPointer(fields)  // kept as long as the process
    }()

    /// A row's header columns as read, before they become a ``RecordHeader``.
    package struct HeaderValues {
        package var id: Int64 = 0
        package var createdAt: Double?
        package var updatedAt: Double?
        package init() {}

        /// The header, as ``RecordHeader/init(decoding:at:)`` reads it from cells.
        @inline(__always)
        package var header: RecordHeader {
            var header = RecordHeader()
            header.id = id
            if let createdAt { header.createdAt = Date(timeIntervalSince1970: createdAt) }
            if let updatedAt { header.updatedAt = Date(timeIntervalSince1970: updatedAt) }
            return header
        }
    }
}
