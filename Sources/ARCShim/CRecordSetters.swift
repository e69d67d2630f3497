// Records' values: typed setters by column name.
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

/// The C types that share a storage class: a bool holds 0 or 1, a decimal holds POSIX decimal text.
func checkCType(_ value: DatabaseValue, _ frozen: ModelHandle.Frozen, _ model: String, _ position: Int) throws {
    var name: String { frozen.model.schema.allColumnNames[position] }  // for messages only
    switch (frozen.typeByPosition[position], value) {
    case (.bool?, .integer(let int)) where int != 0 && int != 1:
        throw ActiveRecordError(
            .typeMismatch, "\(model).\(name) is a bool: set 0 or 1 (or use ar_record_set_bool), not another integer")
    case (.decimal?, .text(let text)):
        guard isPlainDecimal(text), (try? Decimal.fromSQL(.text(text))) != nil else {
            throw ActiveRecordError(
                .invalidValue, "\(model).\(name) is a decimal: the text is not plain decimal text (such as \"1123.563\")")
        }
    default:
        return
    }
}

/// A setter's common case, taken without the general path's plumbing: `body` gets the
/// record's values, the column's declared index and C type (see
/// `RecordHandle.withSettableColumn`), and says whether it set the value. `false`: take the
/// general path (which reports the error, if any: a setter changes nothing when it fails).
@inline(__always)
private func setDirectly(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ body: (DynamicRecord, Int, ar_type?) -> Bool
) -> Bool {
    guard let record, let column else { return false }
    return Unretained<Handle>(address: UnsafeRawPointer(record)).with { handle in
        guard handle.kind == .record else { return false }
        return unsafeDowncast(handle, to: RecordHandle.self).withSettableColumn(column, body)
    }
}

/// Runs `body` with the record of `record` and the declared index of `column` (not one of
/// the columns the library sets), turning errors into result codes.
@inline(__always)
private func set(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ function: String,
    _ body: (_ record: DynamicRecord, _ index: Int, _ handle: RecordHandle) throws -> Void
) -> ar_result {
    withRecordInMemory(record, function) { handle in
        let position = try position(column, in: handle, function)
        guard position >= 3 else {
            throw ActiveRecordError(.misuse, "\(function): id, createdAt and updatedAt are set by the library")
        }
        try body(try handle.record, position - 3, handle)
        return .ok
    }
}

/// ``set(_:_:_:_:)`` with a value checked against the column's C type first (a bool, a decimal).
private func set(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ function: String, _ value: () throws -> DatabaseValue) -> ar_result {
    set(record, column, function) { record, index, handle in
        let value = try value()
        try checkCType(value, handle.frozen, handle.model.name, index + 3)
        try record.set(at: index, value)
    }
}

/// Sets a text column (NULL `value`: SQL NULL, for a nullable column).
@c public func ar_record_set_text(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> ar_result {
    let done = setDirectly(record, column) { record, index, type in
        guard let value else { return (try? record.setNull(at: index)) != nil }
        guard type != .decimal else { return false }
        let utf8 = UnsafeRawBufferPointer(start: value, count: strlen(value))
        return isValidUTF8(utf8) && (try? record.setText(at: index, utf8)) != nil
    }
    if done { return .ok }
    return set(record, column, "ar_record_set_text") { record, index, handle in
        guard let value else { return try record.setNull(at: index) }
        let utf8 = UnsafeRawBufferPointer(start: value, count: strlen(value))
        guard isValidUTF8(utf8) else {
            throw ActiveRecordError(.invalidValue, "ar_record_set_text: the text is not valid UTF-8 text; pass UTF-8")
        }
        if handle.frozen.typeByPosition[index + 3] == .decimal {
            let text = DatabaseValue.text(String(decoding: utf8, as: UTF8.self))
            try checkCType(text, handle.frozen, handle.model.name, index + 3)
            return try record.set(at: index, text)
        }
        try record.setText(at: index, utf8)
    }
}

/// Sets an integer column.
@c public func ar_record_set_int64(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: Int64) -> ar_result {
    let done = setDirectly(record, column) { record, index, type in
        type != .bool && (try? record.setInteger(at: index, value)) != nil
    }
    if done { return .ok }
    return set(record, column, "ar_record_set_int64") { record, index, handle in
        if value != 0, value != 1, handle.frozen.typeByPosition[index + 3] == .bool {
            try checkCType(.integer(value), handle.frozen, handle.model.name, index + 3)
        }
        try record.setInteger(at: index, value)
    }
}

/// Sets a real column (an integer column refuses it: AR_TYPE_MISMATCH). AR_INVALID_VALUE for
/// NaN (SQLite would store NULL: set NULL instead) and -0.0 (SQLite stores 0.0: set 0.0).
@c public func ar_record_set_double(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: Double) -> ar_result {
    if setDirectly(record, column, { record, index, _ in (try? record.setReal(at: index, value)) != nil }) { return .ok }
    return set(record, column, "ar_record_set_double") { record, index, _ in try record.setReal(at: index, value) }
}

/// Sets a bool column: 0 is false, anything else true (stored as 0 or 1).
@c public func ar_record_set_bool(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: Int32) -> ar_result {
    if setDirectly(record, column, { record, index, _ in (try? record.setInteger(at: index, value == 0 ? 0 : 1)) != nil }) {
        return .ok
    }
    return set(record, column, "ar_record_set_bool") { record, index, _ in try record.setInteger(at: index, value == 0 ? 0 : 1) }
}

/// Sets a date column, in seconds since 1970-01-01 UTC (-0.0 is the epoch, stored as 0.0).
@c public func ar_record_set_date(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ seconds: Double) -> ar_result {
    let seconds = seconds + 0
    if setDirectly(record, column, { record, index, _ in (try? record.setReal(at: index, seconds)) != nil }) { return .ok }
    return set(record, column, "ar_record_set_date") { record, index, _ in try record.setReal(at: index, seconds) }
}

/// Sets a decimal column from plain decimal text: digits with an optional sign and decimal
/// point, such as "1123.563" or "-0.5" (anything else, an exponent too: AR_INVALID_VALUE).
@c public func ar_record_set_decimal(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> ar_result {
    set(record, column, "ar_record_set_decimal") {
        guard let value else { return .null }
        let text = try utf8Text(value, "the decimal", in: "ar_record_set_decimal")
        guard isPlainDecimal(text) else {
            throw ActiveRecordError(
                .invalidValue, "ar_record_set_decimal: not plain decimal text (digits, an optional sign and point, such as \"1123.563\")")
        }
        do {
            return .text(try Decimal.fromSQL(.text(text)).description)
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(.invalidValue, "ar_record_set_decimal: \(error.message)")
        }
    }
}

/// `-12.50`, `+3`, `.5`: a sign, digits, an optional point and digits; nothing else.
private func isPlainDecimal(_ text: String) -> Bool {
    var digits = 0, points = 0
    for (offset, byte) in text.utf8.enumerated() {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
        case UInt8(ascii: "."): points += 1
        case UInt8(ascii: "-") where offset == 0, UInt8(ascii: "+") where offset == 0: continue
        default: return false
        }
    }
    return digits > 0 && points <= 1
}

/// Sets a blob column from `length` bytes (copied). NULL `bytes` with length 0: an empty blob.
@c public func ar_record_set_blob(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ bytes: UnsafeRawPointer?, _ length: UInt
) -> ar_result {
    let done = setDirectly(record, column) { record, index, _ in
        guard length <= UInt(Int32.max), bytes != nil || length == 0 else { return false }
        return (try? record.setBlob(at: index, UnsafeRawBufferPointer(start: bytes, count: Int(length)))) != nil
    }
    if done { return .ok }
    return set(record, column, "ar_record_set_blob") { record, index, _ in
        try record.setBlob(at: index, try blobBytes(bytes, length, "ar_record_set_blob"))
    }
}

/// `length` bytes from C, copied: a blob value (NULL `bytes` with length 0: an empty blob).
/// - Throws: `.misuse` for no bytes, or more than 2 GiB.
func blobValue(_ bytes: UnsafeRawPointer?, _ length: UInt, _ function: String) throws -> DatabaseValue {
    .blob(Data(try blobBytes(bytes, length, function)))
}

/// `length` bytes from C (NULL `bytes` with length 0: none), checked.
/// - Throws: `.misuse` for no bytes, or more than 2 GiB.
private func blobBytes(_ bytes: UnsafeRawPointer?, _ length: UInt, _ function: String) throws -> UnsafeRawBufferPointer {
    guard length <= UInt(Int32.max), bytes != nil || length == 0 else {
        throw ActiveRecordError(.misuse, "\(function): no bytes, or more than 2 GiB")
    }
    return UnsafeRawBufferPointer(start: bytes, count: Int(length))
}

/// Sets a nullable column to NULL (a required one refuses: AR_TYPE_MISMATCH).
@c public func ar_record_set_null(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?) -> ar_result {
    set(record, column, "ar_record_set_null") { record, index, _ in try record.setNull(at: index) }
}
