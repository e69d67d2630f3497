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
                    // libpq ends every value with a NUL, and PostgreSQL text holds none: the
                    // C-string initializer validates the whole value.
                    stored = type.storesText
                        && type.store(text: String(validatingCString: value.assumingMemoryBound(to: CChar.self)), at: address)
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
}
