import Foundation

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
}

extension DirectRowReading {
    func readHeader(into header: UnsafeMutablePointer<ModelMapping.HeaderValues>) -> Bool {
        readColumns(ModelMapping.headerFields, from: 0, at: 0, into: UnsafeMutableRawPointer(header)) == 3
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
