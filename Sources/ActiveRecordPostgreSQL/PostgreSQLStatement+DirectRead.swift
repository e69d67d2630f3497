import ARLibPQ
@_spi(Engines) import ARCore
import Foundation

/// Reading the current row straight into a record's fields: per column the libpq calls
/// ``row()`` makes (`PQgetlength`, `PQgetvalue`, and `PQgetisnull` only for an empty value),
/// then the value stored as the field's type takes it (``KnownFieldType``), with no cell
/// between them. What ``row()`` reads in place is read so (binary `bigint`, `double precision`,
/// `boolean`, `bytea`, and text of either format); any other column, a `NULL` for a field that
/// cannot hold one, or a value the field's type takes only through a conversion, is left to the
/// cells (see ``DirectRowReading``).
extension PostgreSQLStatement: DirectRowReading {
    func readColumns(
        _ fields: UnsafeBufferPointer<ModelMapping.Field>, from start: Int, at first: Int32, into base: UnsafeMutableRawPointer
    ) -> Int {
        // Read once per call, not per column (as in ``row()``).
        let result = current, row = rowIndex, kinds = self.kinds, columnCount = resultColumnCount
        let count = fields.count
        var index = start
        while index < count {
            let column = first &+ Int32(truncatingIfNeeded: index)
            guard column < columnCount else { return index }
            let field = fields[index]
            let address = base + field.valueOffset
            let type = field.storage
            let length = PQgetlength(result, row, column)
            if length == 0, PQgetisnull(result, row, column) != 0 {
                guard type.storeNull(at: address) else { return index }
            } else {
                let value = UnsafeRawPointer(PQgetvalue(result, row, column).unsafelyUnwrapped)
                let stored: Bool
                switch kinds[Int(column)] {
                case .int8 where length == 8:
                    stored = type.store(integer: Int64(bigEndian: value.loadUnaligned(as: Int64.self)), at: address)
                case .float8 where length == 8:
                    stored = type.store(real: Double(bitPattern: UInt64(bigEndian: value.loadUnaligned(as: UInt64.self))), at: address)
                case .bool where length == 1:
                    stored = type.store(integer: value.load(as: UInt8.self) == 0 ? 0 : 1, at: address)
                case .text:
                    stored = type.storesText && type.store(text: Self.text(value, count: Int(length)), at: address)
                case .blob:
                    stored = type.store(blob: UnsafeRawBufferPointer(start: value, count: Int(length)), at: address)
                default:
                    return index
                }
                guard stored else { return index }
            }
            index &+= 1
        }
        return index
    }

    /// The header's three columns read with no loop over fields: `id` a binary `bigint` (not
    /// `NULL`), each timestamp a binary `double precision` or `NULL`, as
    /// ``readColumns(_:from:at:into:)`` reads ``ModelMapping/headerFields``; any other column
    /// is left to the cells.
    func readHeader(into header: UnsafeMutablePointer<ModelMapping.HeaderValues>) -> Bool {
        let result = current, row = rowIndex, kinds = self.kinds
        guard resultColumnCount >= 3, kinds[0] == .int8, PQgetlength(result, row, 0) == 8 else { return false }
        header.pointee.id = Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 0).unsafelyUnwrapped).loadUnaligned(as: Int64.self))
        guard let createdAt = timestamp(result, row, 1, kinds[1]), let updatedAt = timestamp(result, row, 2, kinds[2]) else {
            return false
        }
        header.pointee.createdAt = createdAt
        header.pointee.updatedAt = updatedAt
        return true
    }

    /// A header timestamp: `.some(nil)` for `NULL`, `nil` for a value not read in place.
    @inline(__always)
    private func timestamp(_ result: OpaquePointer, _ row: Int32, _ column: Int32, _ kind: ResultColumnKind) -> Double?? {
        let length = PQgetlength(result, row, column)
        if length == 0, PQgetisnull(result, row, column) != 0 { return .some(nil) }
        guard kind == .float8, length == 8 else { return nil }
        return Double(bitPattern: UInt64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, column).unsafelyUnwrapped).loadUnaligned(as: UInt64.self)))
    }

    func advanceInResult() -> Bool {
        // What ``step()`` does within a result (a cursor's next batch, the end: left to it).
        guard rowIndex &+ 1 < rowCount else { return false }
        rowIndex &+= 1
        return true
    }

    /// A text value of `count` bytes at `bytes` as a string, `nil` when it is not UTF-8. ASCII
    /// (most text) is copied as it is, found so a word at a time: the validating initializers
    /// would look for the end (`strlen`) and check every byte again. Other text goes through
    /// the C-string initializer, which validates it (libpq ends every value with a NUL, and
    /// PostgreSQL text holds none).
    @inline(__always)
    static func text(_ bytes: UnsafeRawPointer, count: Int) -> String? {
        guard isASCII(bytes, count: count) else { return String(validatingCString: bytes.assumingMemoryBound(to: CChar.self)) }
        return String(unsafeUninitializedCapacity: count) { buffer in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: count))
            return count
        }
    }

    /// Whether the `count` bytes at `bytes` are all ASCII (no high bit set): read a word at a
    /// time, the last word (or half word, for a short value) overlapping the one before.
    @inline(__always)
    static func isASCII(_ bytes: UnsafeRawPointer, count: Int) -> Bool {
        let bits: UInt64
        if count >= 8 {
            var words: UInt64 = 0, offset = 0
            while offset &+ 8 < count {
                words |= bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                offset &+= 8
            }
            bits = words | bytes.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        } else if count >= 4 {
            bits = UInt64(
                bytes.loadUnaligned(as: UInt32.self) | bytes.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
        } else if count > 0 {
            bits = UInt64(
                bytes.load(as: UInt8.self) | bytes.load(fromByteOffset: count >> 1, as: UInt8.self)
                    | bytes.load(fromByteOffset: count &- 1, as: UInt8.self))
        } else {
            bits = 0
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }
}
