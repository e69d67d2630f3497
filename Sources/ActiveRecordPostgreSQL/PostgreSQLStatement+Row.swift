import ARLibPQ
@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A statement's current row: each column decoded from the result's format by its type.
extension PostgreSQLStatement {
    /// A column's value, decoded from the result's format by its type.
    enum Decoded {
        case null, integer(Int64), real(Double), text(String), blob(Data)
        /// Text that is not valid UTF-8.
        case invalid
    }

    @inline(__always)
    func decode(_ index: Int32) -> Decoded {
        let result = current
        guard PQgetisnull(result, rowIndex, index) == 0, let pointer = PQgetvalue(result, rowIndex, index) else { return .null }
        let value = UnsafeRawBufferPointer(start: pointer, count: Int(PQgetlength(result, rowIndex, index)))
        return binary ? decodeBinary(value, type: type(index)) : decodeText(value, type: type(index))
    }

    func decodeText(_ text: UnsafeRawBufferPointer, type: Int) -> Decoded {
        switch type {
        case AR_PG_BOOL: return .integer(text.first == UInt8(ascii: "t") ? 1 : 0)
        case AR_PG_INT8, AR_PG_INT4, AR_PG_INT2, AR_PG_OID: return .integer(parseInteger(text) ?? 0)
        case AR_PG_FLOAT8, AR_PG_FLOAT4: return .real(parseDouble(text))
        case AR_PG_BYTEA: return .blob(decodingHex(text))
        case AR_PG_NUMERIC:
            if let int = parseInteger(text) { return .integer(int) }
            fallthrough
        default:
            return utf8(text)
        }
    }

    /// PostgreSQL's binary formats (network byte order) of ``binaryTypes``.
    func decodeBinary(_ value: UnsafeRawBufferPointer, type: Int) -> Decoded {
        func load<T: FixedWidthInteger>(_: T.Type) -> T {
            value.count >= MemoryLayout<T>.size ? T(bigEndian: value.loadUnaligned(as: T.self)) : 0
        }
        switch type {
        case AR_PG_INT8: return .integer(load(Int64.self))
        case AR_PG_INT4: return .integer(Int64(load(Int32.self)))
        case AR_PG_INT2: return .integer(Int64(load(Int16.self)))
        case AR_PG_OID: return .integer(Int64(load(UInt32.self)))
        case AR_PG_BOOL: return .integer(value.first == 0 || value.isEmpty ? 0 : 1)
        case AR_PG_FLOAT8: return .real(Double(bitPattern: load(UInt64.self)))
        case AR_PG_FLOAT4: return .real(Double(Float(bitPattern: load(UInt32.self))))
        case AR_PG_BYTEA: return .blob(Data(value))
        case AR_PG_NUMERIC:
            guard let numeric = numericText(value) else { return .invalid }
            if numeric.isInteger, let int = Int64(numeric.text) { return .integer(int) }
            return .text(numeric.text)
        case AR_PG_UUID: return value.count == 16 ? .text(uuidText(value)) : .invalid
        case AR_PG_JSONB: return value.isEmpty ? .invalid : utf8(UnsafeRawBufferPointer(rebasing: value.dropFirst()))
        default: return utf8(value)
        }
    }

    /// Text from libpq, which ends every value with a NUL (PostgreSQL text holds none): the
    /// C-string initializer validates on its fast path (the generic `String(validating:as:)`
    /// looks up type metadata per call).
    func utf8(_ bytes: UnsafeRawBufferPointer) -> Decoded {
        guard let base = bytes.baseAddress else { return .text("") }
        let text = base.withMemoryRebound(to: CChar.self, capacity: bytes.count + 1) { cString in
            strlen(cString) == bytes.count
                ? String(validatingCString: cString)
                : String(validating: UnsafeRawBufferPointer(start: base, count: bytes.count).bindMemory(to: UInt8.self), as: UTF8.self)
        }
        return text.map(Decoded.text) ?? .invalid
    }

    /// The current row's cells: text and `bytea` as libpq holds them (binary results), the
    /// common binary types decoded in place, others decoded (``decode(_:)``), what they decode
    /// to kept until the next row. Per column: `PQgetlength` and `PQgetvalue`, and
    /// `PQgetisnull` only for an empty value (libpq gives `NULL` an empty value; a libpq call
    /// per column is a good part of a row's cost).
    func row() -> UnsafeBufferPointer<Cell> {
        if !kept.isEmpty { releaseKept() }
        // The cells, kinds, result and row read once per row (each read of a stored property is
        // checked for exclusivity at run time), not once per column; room for the cells was made
        // when the result came (``prepareRows()``).
        let count = resultColumnCount, target = cells, kinds = self.kinds, result = current, row = rowIndex
        var index: Int32 = 0
        while index < count {
            let length = PQgetlength(result, row, index)
            let cell: Cell
            if length == 0, PQgetisnull(result, row, index) != 0 {
                cell = .null
            } else {
                let value = UnsafeRawPointer(PQgetvalue(result, row, index).unsafelyUnwrapped)
                switch kinds[Int(index)] {
                case .text: cell = .text(UnsafeRawBufferPointer(start: value, count: Int(length)))
                case .blob: cell = .blob(UnsafeRawBufferPointer(start: value, count: Int(length)))
                case .int8 where length == 8: cell = .integer(Int64(bigEndian: value.loadUnaligned(as: Int64.self)))
                case .float8 where length == 8:
                    cell = .real(Double(bitPattern: UInt64(bigEndian: value.loadUnaligned(as: UInt64.self))))
                case .bool where length == 1: cell = .integer(value.load(as: UInt8.self) == 0 ? 0 : 1)
                default: cell = decodedCell(UnsafeRawBufferPointer(start: value, count: Int(length)), column: index)
                }
            }
            target[Int(index)] = cell
            index &+= 1
        }
        return UnsafeBufferPointer(start: target, count: Int(count))
    }

    /// Makes room for the new result's cells and copies its ``columnKinds`` where ``row()``
    /// reads them: once per result, not per row.
    func prepareRows() {
        let count = resultColumnCount
        if count > cellCapacity {
            cells.deallocate()
            kinds.deallocate()
            cells = .allocate(capacity: Int(count))
            kinds = .allocate(capacity: Int(count))
            cellCapacity = count
        }
        let target = kinds
        columnKinds.withUnsafeBufferPointer { source in
            for index in source.indices { target[index] = source[index] }
        }
    }

    @inline(never)
    private func releaseKept() {
        for bytes in kept { bytes.deallocate() }
        kept.removeAll(keepingCapacity: true)
    }

    /// ``decodedCell(_:type:binary:)`` of the current result's column `index`.
    @inline(never)
    private func decodedCell(_ raw: UnsafeRawBufferPointer, column index: Int32) -> Cell {
        decodedCell(raw, type: columnTypes[Int(index)], binary: binary)
    }

    /// A cell for the types ``row()`` does not read in place, and text results: decoded, and
    /// what a decoded value needs kept until the next row.
    private func decodedCell(_ raw: UnsafeRawBufferPointer, type: Int, binary: Bool) -> Cell {
        switch binary ? decodeBinary(raw, type: type) : decodeText(raw, type: type) {
        case .null: return .null
        case .integer(let int): return .integer(int)
        case .real(let double): return .real(double)
        case .text(var text): return text.withUTF8 { .text(keep(UnsafeRawBufferPointer($0), terminated: true)) }
        case .blob(let data): return data.withUnsafeBytes { .blob(keep($0, terminated: false)) }
        case .invalid: return .text(raw)
        }
    }

    /// A copy of `bytes` (followed by a NUL when `terminated`) that lasts until the next row.
    func keep(_ bytes: UnsafeRawBufferPointer, terminated: Bool) -> UnsafeRawBufferPointer {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count + 1, alignment: 1)
        copy.copyMemory(from: bytes)
        copy[bytes.count] = 0
        kept.append(copy)
        return UnsafeRawBufferPointer(rebasing: copy[..<bytes.count])
    }
}

/// How ``PostgreSQLStatement/row()`` reads a result column, decided once per result (or per
/// prepared form) from its type and format rather than per value.
enum ResultColumnKind: UInt8 {
    /// Text of either format, as libpq holds it.
    case text
    /// Binary `bytea`, as libpq holds it.
    case blob
    /// Binary `bigint`, `double precision`, `boolean`, read in place.
    case int8, float8, bool
    /// Anything else: decoded (``PostgreSQLStatement/decodeBinary(_:type:)``, ``PostgreSQLStatement/decodeText(_:type:)``).
    case other

    /// The kinds of columns of `types` in a result of that format, into `kinds`.
    static func kinds(of types: [Int], binary: Bool, into kinds: inout [ResultColumnKind]) {
        kinds.removeAll(keepingCapacity: true)
        for type in types {
            switch type {
            case AR_PG_TEXT, AR_PG_VARCHAR, AR_PG_NAME, AR_PG_BPCHAR, AR_PG_JSON: kinds.append(.text)
            case AR_PG_BYTEA where binary: kinds.append(.blob)
            case AR_PG_INT8 where binary: kinds.append(.int8)
            case AR_PG_FLOAT8 where binary: kinds.append(.float8)
            case AR_PG_BOOL where binary: kinds.append(.bool)
            default: kinds.append(.other)
            }
        }
    }
}
