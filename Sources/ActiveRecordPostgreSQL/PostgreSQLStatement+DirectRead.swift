import ARLibPQ
@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
        readColumns(fields, from: start, at: first, into: base, result: current, row: rowIndex, kinds: kinds)
    }

    /// The header and the columns in one call, each read as the two functions read them.
    func readRow(
        header: UnsafeMutablePointer<ModelMapping.HeaderValues>, fields: UnsafeBufferPointer<ModelMapping.Field>,
        into base: UnsafeMutableRawPointer
    ) -> Int? {
        let result = current, row = rowIndex, kinds = self.kinds
        guard readHeader(into: header, result: result, row: row, kinds: kinds) else { return nil }
        return readColumns(fields, from: 0, at: 3, into: base, result: result, row: row, kinds: kinds)
    }

    /// ``readRow(header:fields:into:)`` with the `id` column not read: a binary `bigint`
    /// column matched by `id = $1` holds `id` (not `NULL`, so of 8 bytes).
    func readRow(
        foundByID id: Int64, header: UnsafeMutablePointer<ModelMapping.HeaderValues>,
        fields: UnsafeBufferPointer<ModelMapping.Field>, into base: UnsafeMutableRawPointer
    ) -> Int? {
        let result = current, row = rowIndex, kinds = self.kinds
        guard resultColumnCount >= 3, kinds[0] == .int8, let createdAt = timestamp(result, row, 1, kinds[1]),
              let updatedAt = timestamp(result, row, 2, kinds[2])
        else { return nil }
        header.pointee.id = id
        header.pointee.createdAt = createdAt
        header.pointee.updatedAt = updatedAt
        return readColumns(fields, from: 0, at: 3, into: base, result: result, row: row, kinds: kinds)
    }

    var rowsLeftInResult: Int { result == nil || rowIndex < 0 ? 0 : Int(rowCount &- rowIndex) }

    /// Column after column: the header's three for every row, then each field's column for
    /// every row, by a loop chosen for the column's kind and the field's type (the common
    /// pairs; any other reads each value as ``readColumns(_:from:at:into:)`` does).
    func readRows(
        into records: UnsafeBufferPointer<Model>, headers: UnsafeMutablePointer<ModelMapping.HeaderValues>,
        fields: UnsafeBufferPointer<ModelMapping.Field>
    ) -> Bool {
        let result = current, first = rowIndex, kinds = self.kinds
        let count = min(records.count, rowsLeftInResult)
        guard count == records.count, 3 &+ fields.count <= Int(resultColumnCount) else { return false }
        // The header's three columns a column at a time too: `id` (a binary `bigint`, not
        // `NULL`), then each timestamp (a binary `double precision` or `NULL`), as
        // ``readHeader(into:)`` reads them row by row.
        guard kinds[0] == .int8 else { return false }
        var index = 0
        while index < count {
            let row = first &+ Int32(truncatingIfNeeded: index)
            guard PQgetlength(result, row, 0) == 8 else { return false }
            headers[index].id = Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 0).unsafelyUnwrapped).loadUnaligned(as: Int64.self))
            index &+= 1
        }
        let timestamps = TimestampColumnRead(result: result, first: first, headers: headers, count: count)
        guard timestamps.read(column: 1, kind: kinds[1], at: TimestampColumnRead.createdAtOffset),
              timestamps.read(column: 2, kind: kinds[2], at: TimestampColumnRead.updatedAtOffset)
        else { return false }
        for (position, field) in fields.enumerated() {
            let column = 3 &+ Int32(truncatingIfNeeded: position), offset = field.valueOffset
            let read = ColumnRead(
                result: result, first: first, column: column, records: records.baseAddress.unsafelyUnwrapped, offset: offset, count: count)
            let done: Bool
            switch (kinds[Int(column)], field.storage) {
            case (.int8, .int64): done = read.fixed(Int64.self, length: 8) { Int64(bigEndian: $0.loadUnaligned(as: Int64.self)) }
            case (.int8, .optionalInt64): done = read.fixed(Int64.self, nullable: true, length: 8) { Int64(bigEndian: $0.loadUnaligned(as: Int64.self)) }
            case (.int8, .int) where MemoryLayout<Int>.size == 8:
                done = read.fixed(Int.self, length: 8) { Int(Int64(bigEndian: $0.loadUnaligned(as: Int64.self))) }
            case (.int8, .optionalInt) where MemoryLayout<Int>.size == 8:
                done = read.fixed(Int.self, nullable: true, length: 8) { Int(Int64(bigEndian: $0.loadUnaligned(as: Int64.self))) }
            case (.float8, .double): done = read.fixed(Double.self, length: 8) { Self.float8($0) }
            case (.float8, .optionalDouble): done = read.fixed(Double.self, nullable: true, length: 8) { Self.float8($0) }
            case (.bool, .bool): done = read.fixed(Bool.self, length: 1) { $0.load(as: UInt8.self) != 0 }
            case (.bool, .optionalBool): done = read.fixed(Bool.self, nullable: true, length: 1) { $0.load(as: UInt8.self) != 0 }
            case (.text, .string): done = read.text()
            case (.text, .optionalString): done = read.text(nullable: true)
            default:
                done = (0..<count).allSatisfy { index in
                    let record = Unretained(records[index]).address
                    return readColumns(
                        UnsafeBufferPointer(rebasing: fields[position..<(position &+ 1)]), from: 0, at: column, into: record,
                        result: result, row: first &+ Int32(truncatingIfNeeded: index), kinds: kinds) == 1
                }
            }
            guard done else { return false }
        }
        rowIndex = first &+ Int32(truncatingIfNeeded: count &- 1)
        return true
    }

    /// A binary `double precision` value.
    @inline(__always)
    static func float8(_ value: UnsafeRawPointer) -> Double {
        Double(bitPattern: UInt64(bigEndian: value.loadUnaligned(as: UInt64.self)))
    }

    /// ``readColumns(_:from:at:into:)`` of the current `result`, `row` and column `kinds`.
    @inline(__always)
    private func readColumns(
        _ fields: UnsafeBufferPointer<ModelMapping.Field>, from start: Int, at first: Int32, into base: UnsafeMutableRawPointer,
        result: OpaquePointer, row: Int32, kinds: UnsafeMutablePointer<ResultColumnKind>
    ) -> Int {
        let columnCount = resultColumnCount
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
                    stored = type.store(real: Self.float8(value), at: address)
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
        readHeader(into: header, result: current, row: rowIndex, kinds: kinds)
    }

    /// ``readHeader(into:)`` of the current `result`, `row` and column `kinds`.
    @inline(__always)
    private func readHeader(
        into header: UnsafeMutablePointer<ModelMapping.HeaderValues>, result: OpaquePointer, row: Int32,
        kinds: UnsafeMutablePointer<ResultColumnKind>
    ) -> Bool {
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

/// A header timestamp column read into `count` rows' headers (``PostgreSQLStatement/readRows(into:headers:fields:)``),
/// as ``PostgreSQLStatement/readHeader(into:)`` reads one: `NULL` as `nil`, else a binary
/// `double precision`; `false` at the first other value.
private struct TimestampColumnRead {
    let result: OpaquePointer
    let first: Int32
    let headers: UnsafeMutablePointer<ModelMapping.HeaderValues>
    let count: Int

    /// Where each timestamp is in a header (a store through a key path would look it up per row).
    static let createdAtOffset = MemoryLayout<ModelMapping.HeaderValues>.offset(of: \.createdAt)!
    static let updatedAtOffset = MemoryLayout<ModelMapping.HeaderValues>.offset(of: \.updatedAt)!

    /// Reads the timestamp column `column` (of `kind`) into the `Double?` at `offset` of each header.
    @inline(__always)
    func read(column: Int32, kind: ResultColumnKind, at offset: Int) -> Bool {
        let base = UnsafeMutableRawPointer(headers) + offset
        let stride = MemoryLayout<ModelMapping.HeaderValues>.stride
        var index = 0
        while index < count {
            let row = first &+ Int32(truncatingIfNeeded: index)
            let length = PQgetlength(result, row, column)
            let value: Double?
            if length == 0, PQgetisnull(result, row, column) != 0 {
                value = nil
            } else {
                guard kind == .float8, length == 8 else { return false }
                value = PostgreSQLStatement.float8(UnsafeRawPointer(PQgetvalue(result, row, column).unsafelyUnwrapped))
            }
            (base + index &* stride).assumingMemoryBound(to: Double?.self).pointee = value
            index &+= 1
        }
        return true
    }
}

/// One result column read into a field of `count` records (``PostgreSQLStatement/readRows(into:headers:fields:)``),
/// each loop storing one type: `false` at the first value left to the cells (a `NULL` for a
/// field that cannot hold one, a value of another length, text that is not UTF-8).
private struct ColumnRead {
    let result: OpaquePointer
    let first: Int32
    let column: Int32
    let records: UnsafePointer<Model>
    let offset: Int
    let count: Int

    /// The field of record `index`, as a `Field`.
    @inline(__always)
    func field<Field>(_ index: Int, _ type: Field.Type) -> UnsafeMutablePointer<Field> {
        (Unretained(records[index]).address + offset).assumingMemoryBound(to: Field.self)
    }

    /// A fixed-width binary value of `length` bytes, `decode`d into a `Value` field, or with
    /// `nullable` a `Value?` one (which `NULL` sets to `nil`).
    @inline(__always)
    func fixed<Value>(
        _ type: Value.Type, nullable: Bool = false, length: Int32, _ decode: (UnsafeRawPointer) -> Value
    ) -> Bool {
        var index = 0
        while index < count {
            let row = first &+ Int32(truncatingIfNeeded: index)
            let got = PQgetlength(result, row, column)
            if got != length {
                guard nullable, got == 0, PQgetisnull(result, row, column) != 0 else { return false }
                field(index, Value?.self).pointee = nil
            } else {
                let decoded = decode(UnsafeRawPointer(PQgetvalue(result, row, column).unsafelyUnwrapped))
                if nullable {
                    field(index, Value?.self).pointee = decoded
                } else {
                    field(index, Value.self).pointee = decoded
                }
            }
            index &+= 1
        }
        return true
    }

    /// Text into a `String` field, or with `nullable` a `String?` one (which `NULL` sets to `nil`).
    @inline(__always)
    func text(nullable: Bool = false) -> Bool {
        var index = 0
        while index < count {
            let row = first &+ Int32(truncatingIfNeeded: index)
            let length = PQgetlength(result, row, column)
            if length == 0, PQgetisnull(result, row, column) != 0 {
                guard nullable else { return false }
                field(index, String?.self).pointee = nil
            } else {
                let value = UnsafeRawPointer(PQgetvalue(result, row, column).unsafelyUnwrapped)
                guard let text = PostgreSQLStatement.text(value, count: Int(length)) else { return false }
                if nullable {
                    field(index, String?.self).pointee = text
                } else {
                    field(index, String.self).pointee = text
                }
            }
            index &+= 1
        }
        return true
    }
}
