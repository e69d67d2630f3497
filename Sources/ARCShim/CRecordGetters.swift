// Records' values: typed getters by column name.
import ActiveRecord
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

/// The cursor's row and result column a getter reads `column` of `record` from directly (see
/// `RecordHandle.rowLocation(of:)`); `nil`: take the general path, which also explains errors.
@inline(__always)
private func rowLocation(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?) -> (row: UnsafePointer<Cell>, index: Int32)? {
    guard let record, let column else { return nil }
    return Unretained<Handle>(address: UnsafeRawPointer(record)).with { handle in
        guard handle.kind == .record else { return nil }
        return unsafeDowncast(handle, to: RecordHandle.self).rowLocation(of: column)
    }
}

/// The record handle behind `record`, which `rowLocation` found to be one.
@inline(__always)
private func knownRecord<R>(_ record: OpaquePointer?, _ body: (RecordHandle) -> R) -> R {
    Unretained<RecordHandle>(address: UnsafeRawPointer(record.unsafelyUnwrapped)).with(body)
}

/// A getter's general path (the fast paths above it read a cursor's row in place): `*out` is
/// first set to `cleared` (0 or NULL), so that it holds no stale value when the call fails.
private func get<T>(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<T>?, cleared: T, _ function: String,
    _ read: (RecordHandle, Cell) throws -> T?
) -> ar_result {
    out?.pointee = cleared
    return withRecordInMemory(record, function) { handle in
        guard let out else { throw ActiveRecordError(.misuse, "\(function): the out pointer must not be NULL") }
        let position = try position(column, in: handle, function)
        guard let converted = try handle.withCell(at: position, { try read(handle, $0) }) else {
            // Read again for the message, so that the read above captures nothing it does not use.
            let storageClass = try handle.withCell(at: position) { $0.storageClassName }
            let name = handle.frozen.model.schema.allColumnNames[position]
            throw ActiveRecordError(.typeMismatch, "\(handle.model.name).\(name) holds \(storageClass); \(function) cannot read it")
        }
        out.pointee = converted
        return .ok
    }
}

/// Reads a text or decimal column. `*value_out` is owned by the record: valid until the
/// next call on it; NULL for SQL NULL. (ar_record_copy_text gives a copy to free.)
@c public func ar_record_get_text(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> ar_result {
    if let value_out, let (row, index) = rowLocation(record, column) {
        switch row[Int(index)] {
        case .text(let bytes):
            value_out.pointee = knownRecord(record) { $0.keep(bytes) }
            return .ok
        case .null:
            value_out.pointee = nil
            return .ok
        default:
            break
        }
    }
    return get(record, column, value_out, cleared: nil, "ar_record_get_text") { handle, cell in
        switch cell {
        case .null: return .some(nil)
        case .text(let bytes): return handle.keep(bytes)
        default: return nil
        }
    }
}

/// Reads a text or decimal column as a copy the caller frees with ar_free (NULL for SQL NULL).
@c public func ar_record_copy_text(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> ar_result {
    get(record, column, value_out, cleared: nil, "ar_record_copy_text") { _, cell -> UnsafeMutablePointer<CChar>?? in
        switch cell {
        case .null: return .some(nil)
        case .text(let bytes):
            guard let copy = malloc(bytes.count + 1)?.assumingMemoryBound(to: CChar.self) else {
                throw ActiveRecordError(.init(rawValue: "outOfMemory"), "ar_record_copy_text: out of memory for \(bytes.count) bytes")
            }
            if let base = bytes.baseAddress { memcpy(copy, base, bytes.count) }
            copy[bytes.count] = 0
            return .some(copy)
        default: return nil
        }
    }
}

/// Reads an integer or bool column (SQL NULL: AR_TYPE_MISMATCH; check ar_record_is_null first).
@c public func ar_record_get_int64(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<Int64>?) -> ar_result {
    if let value_out, let (row, index) = rowLocation(record, column), case .integer(let int) = row[Int(index)] {
        value_out.pointee = int
        return .ok
    }
    return get(record, column, value_out, cleared: 0, "ar_record_get_int64") { _, cell in
        if case .integer(let int) = cell { int } else { nil }
    }
}

/// Reads a real or date column (an integer is converted).
@c public func ar_record_get_double(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<Double>?) -> ar_result {
    if let value_out, let (row, index) = rowLocation(record, column), let real = readReal(row[Int(index)]) {
        value_out.pointee = real
        return .ok
    }
    return get(record, column, value_out, cleared: 0, "ar_record_get_double", readReal)
}

/// Reads a bool column as 0 or 1.
@c public func ar_record_get_bool(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<Int32>?) -> ar_result {
    if let value_out, let (row, index) = rowLocation(record, column), case .integer(let int) = row[Int(index)] {
        value_out.pointee = int == 0 ? 0 : 1
        return .ok
    }
    return get(record, column, value_out, cleared: 0, "ar_record_get_bool") { _, cell in
        if case .integer(let int) = cell { int == 0 ? 0 : 1 } else { nil }
    }
}

/// Reads a date column in seconds since 1970-01-01 UTC.
@c public func ar_record_get_date(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ seconds_out: UnsafeMutablePointer<Double>?) -> ar_result {
    if let seconds_out, let (row, index) = rowLocation(record, column), let real = readReal(row[Int(index)]) {
        seconds_out.pointee = real
        return .ok
    }
    return get(record, column, seconds_out, cleared: 0, "ar_record_get_date", readReal)
}

private func readReal(_ handle: RecordHandle, _ cell: Cell) -> Double? { readReal(cell) }

/// A real, or an integer converted.
@inline(__always)
private func readReal(_ cell: Cell) -> Double? {
    switch cell {
    case .real(let real): real
    case .integer(let int): Double(int)
    default: nil
    }
}

/// Reads a blob column. `*bytes_out` is owned by the record (valid until the next call on
/// it); an empty or NULL blob gives length 0 (use ar_record_is_null to tell them apart).
@c public func ar_record_get_blob(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ bytes_out: UnsafeMutablePointer<UnsafeRawPointer?>?,
    _ length_out: UnsafeMutablePointer<UInt>?
) -> ar_result {
    if let bytes_out, let length_out, let (row, index) = rowLocation(record, column) {
        switch row[Int(index)] {
        case .blob(let bytes):
            bytes_out.pointee = UnsafeRawPointer(knownRecord(record) { $0.keep(bytes) })
            length_out.pointee = UInt(bytes.count)
            return .ok
        case .null:
            bytes_out.pointee = nil
            length_out.pointee = 0
            return .ok
        default:
            break
        }
    }
    length_out?.pointee = 0
    guard let length_out else {
        bytes_out?.pointee = nil
        return withRecordInMemory(record, "ar_record_get_blob") { _ in
            throw ActiveRecordError(.misuse, "ar_record_get_blob: out pointers must not be NULL")
        }
    }
    var length: UInt = 0
    let status = get(record, column, bytes_out, cleared: nil, "ar_record_get_blob") { handle, cell -> UnsafeRawPointer?? in
        switch cell {
        case .null:
            length = 0
            return .some(nil)
        case .blob(let bytes):
            length = UInt(bytes.count)
            return .some(UnsafeRawPointer(handle.keep(bytes)))
        default:
            return nil
        }
    }
    if status == .ok { length_out.pointee = length }
    return status
}

/// Sets `*is_null_out` to 1 when the column is SQL NULL, else 0.
@c public func ar_record_is_null(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ is_null_out: UnsafeMutablePointer<Int32>?) -> ar_result {
    if let is_null_out, let (row, index) = rowLocation(record, column) {
        if case .null = row[Int(index)] { is_null_out.pointee = 1 } else { is_null_out.pointee = 0 }
        return .ok
    }
    return get(record, column, is_null_out, cleared: 0, "ar_record_is_null") { _, cell in
        if case .null = cell { 1 } else { 0 }
    }
}
