// Records: new, set, get, save, reload, drop, validation errors; find and count.
import ActiveRecord
import Foundation

/// Runs `body` for a record handle, on its database.
private func withRecord(_ record: OpaquePointer?, _ function: String, _ body: (RecordHandle) throws -> ar_result) -> ar_result {
    guard let handle = Handle.from(record, as: RecordHandle.self) else {
        return failWithoutDatabase(.misuse, "\(function): not a record handle")
    }
    return handle.model.database.run { try body(handle) }
}

/// Runs `body` for a record handle without making its database current (getters, setters).
private func withRecordInMemory(_ record: OpaquePointer?, _ function: String, _ body: (RecordHandle) throws -> ar_result) -> ar_result {
    let status = Handle.borrow(record, as: RecordHandle.self) { handle in
        do {
            return try body(handle)
        } catch {
            return handle.model.database.fail(error)
        }
    }
    return status ?? failWithoutDatabase(.misuse, "\(function): not a record handle")
}

/// The position of a column (in id, createdAt, updatedAt, then the declared columns).
/// - Throws: `.misuse` for NULL, `.unknownColumn` naming the model's columns.
private func position(_ column: UnsafePointer<CChar>?, in handle: RecordHandle, _ function: String) throws -> Int {
    guard let column else { throw ActiveRecordError(.misuse, "\(function): column must not be NULL") }
    guard let position = handle.frozen.position(of: column) else {
        throw handle.frozen.model.schema.unknownColumn(String(cString: column))
    }
    return position
}

/// The C types that share a storage class: a bool holds 0 or 1, a decimal holds POSIX decimal text.
private func checkCType(_ value: DatabaseValue, _ handle: RecordHandle, _ position: Int, _ function: String) throws {
    var name: String { handle.frozen.model.schema.allColumnNames[position] }  // for messages only
    switch (handle.frozen.typeByPosition[position], value) {
    case (.bool?, .integer(let int)) where int != 0 && int != 1:
        throw ActiveRecordError(.typeMismatch, "\(handle.model.name).\(name) is a bool: 0 or 1 (or use ar_record_set_bool), not \(int)")
    case (.decimal?, .text(let text)):
        guard (try? Decimal.fromSQL(.text(text))) != nil else {
            throw ActiveRecordError(.invalidValue, "\(handle.model.name).\(name) is a decimal: '\(text.prefix(40))' is not one")
        }
    default:
        return
    }
}

/// Makes a new, unsaved record of `model` (columns at their defaults). Release with ar_record_free.
@c public func ar_record_new(_ model: OpaquePointer?, _ record_out: UnsafeMutablePointer<OpaquePointer?>?) -> ar_result {
    let status = Handle.borrow(model, as: ModelHandle.self) { handle -> ar_result in
        guard let record_out else { return handle.database.fail(.misuse, "ar_record_new: record_out must not be NULL") }
        record_out.pointee = nil
        do {  // no database access: a new record lives in memory
            let frozen = try handle.frozen()
            record_out.pointee = RecordHandle(model: handle, frozen: frozen, record: frozen.model.new()).retainedPointer()
            return .ok
        } catch {
            return handle.database.fail(error)
        }
    }
    return status ?? failWithoutDatabase(.misuse, "ar_record_new: not a model handle")
}

/// Releases a record handle (and the strings and bytes it returned). NULL is ignored.
@c public func ar_record_free(_ record: OpaquePointer?) {
    guard Handle.borrow(record, as: RecordHandle.self, { _ in true }) == true else { return }
    Handle.release(record)
}

/// The record's id, or 0 while it is unsaved (or for a NULL handle).
@c public func ar_record_id(_ record: OpaquePointer?) -> Int64 {
    Handle.borrow(record, as: RecordHandle.self) { $0.id ?? 0 } ?? 0
}

private func set(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ function: String, _ value: () throws -> DatabaseValue) -> ar_result {
    withRecordInMemory(record, function) { handle in
        let position = try position(column, in: handle, function)
        guard position >= 3 else {
            throw ActiveRecordError(.misuse, "\(function): id, createdAt and updatedAt are set by the library")
        }
        let value = try value()
        try checkCType(value, handle, position, function)
        try handle.record.set(at: position - 3, value)
        return .ok
    }
}

/// Sets a text column (NULL `value`: SQL NULL, for a nullable column).
@c public func ar_record_set_text(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> ar_result {
    set(record, column, "ar_record_set_text") { value.map { .text(String(cString: $0)) } ?? .null }
}

/// Sets an integer column.
@c public func ar_record_set_int64(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: Int64) -> ar_result {
    set(record, column, "ar_record_set_int64") { .integer(value) }
}

/// Sets a real column (an integer column refuses it: AR_TYPE_MISMATCH).
@c public func ar_record_set_double(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: Double) -> ar_result {
    set(record, column, "ar_record_set_double") { .real(value) }
}

/// Sets a bool column: 0 is false, anything else true (stored as 0 or 1).
@c public func ar_record_set_bool(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: Int32) -> ar_result {
    set(record, column, "ar_record_set_bool") { .integer(value == 0 ? 0 : 1) }
}

/// Sets a date column, in seconds since 1970-01-01 UTC.
@c public func ar_record_set_date(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ seconds: Double) -> ar_result {
    set(record, column, "ar_record_set_date") { .real(seconds) }
}

/// Sets a decimal column from POSIX text such as "1123.563" (anything else: AR_INVALID_VALUE).
@c public func ar_record_set_decimal(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> ar_result {
    set(record, column, "ar_record_set_decimal") {
        guard let value else { return .null }
        let text = String(cString: value)
        do {
            return .text(try Decimal.fromSQL(.text(text)).description)
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(.invalidValue, error.message)
        }
    }
}

/// Sets a blob column from `length` bytes (copied). NULL `bytes` with length 0: an empty blob.
@c public func ar_record_set_blob(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ bytes: UnsafeRawPointer?, _ length: UInt
) -> ar_result {
    set(record, column, "ar_record_set_blob") {
        guard length <= UInt(Int32.max), bytes != nil || length == 0 else {
            throw ActiveRecordError(.misuse, "ar_record_set_blob: no bytes, or more than 2 GiB")
        }
        return .blob(length == 0 ? Data() : Data(bytes: bytes!, count: Int(length)))
    }
}

/// Sets a nullable column to NULL (a required one refuses: AR_TYPE_MISMATCH).
@c public func ar_record_set_null(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?) -> ar_result {
    set(record, column, "ar_record_set_null") { .null }
}

private func get<T>(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<T>?, _ function: String,
    _ read: (RecordHandle, Cell) throws -> T?
) -> ar_result {
    withRecordInMemory(record, function) { handle in
        guard let out else { throw ActiveRecordError(.misuse, "\(function): the out pointer must not be NULL") }
        let position = try position(column, in: handle, function)
        return try handle.withCell(at: position) { cell in
            guard let converted = try read(handle, cell) else {
                // The error path alone decodes a row record (it keeps the same values).
                let name = handle.frozen.model.schema.allColumnNames[position]
                let storageClass = handle.record.value(at: position).storageClassName
                throw ActiveRecordError(.typeMismatch, "\(handle.model.name).\(name) holds \(storageClass); \(function) cannot read it")
            }
            out.pointee = converted
            return .ok
        }
    }
}

/// Reads a text or decimal column. `*value_out` is owned by the record: valid until the
/// next call on it; NULL for SQL NULL. (ar_record_copy_text gives a copy to free.)
@c public func ar_record_get_text(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> ar_result {
    get(record, column, value_out, "ar_record_get_text") { handle, cell in
        switch cell {
        case .null: return .some(nil)
        case .text(let bytes): return handle.kept.set(bytes)
        default: return nil
        }
    }
}

/// Reads a text or decimal column as a copy the caller frees with ar_free (NULL for SQL NULL).
@c public func ar_record_copy_text(
    _ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> ar_result {
    get(record, column, value_out, "ar_record_copy_text") { _, cell -> UnsafeMutablePointer<CChar>?? in
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
    get(record, column, value_out, "ar_record_get_int64") { _, cell in
        if case .integer(let int) = cell { int } else { nil }
    }
}

/// Reads a real or date column (an integer is converted).
@c public func ar_record_get_double(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<Double>?) -> ar_result {
    get(record, column, value_out, "ar_record_get_double", readReal)
}

/// Reads a bool column as 0 or 1.
@c public func ar_record_get_bool(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value_out: UnsafeMutablePointer<Int32>?) -> ar_result {
    get(record, column, value_out, "ar_record_get_bool") { _, cell in
        if case .integer(let int) = cell { int == 0 ? 0 : 1 } else { nil }
    }
}

/// Reads a date column in seconds since 1970-01-01 UTC.
@c public func ar_record_get_date(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ seconds_out: UnsafeMutablePointer<Double>?) -> ar_result {
    get(record, column, seconds_out, "ar_record_get_date", readReal)
}

/// A real, or an integer converted.
private func readReal(_ handle: RecordHandle, _ cell: Cell) -> Double? {
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
    guard let length_out else {
        return withRecordInMemory(record, "ar_record_get_blob") { _ in
            throw ActiveRecordError(.misuse, "ar_record_get_blob: out pointers must not be NULL")
        }
    }
    var length: UInt = 0
    let status = get(record, column, bytes_out, "ar_record_get_blob") { handle, cell -> UnsafeRawPointer?? in
        switch cell {
        case .null:
            length = 0
            return .some(nil)
        case .blob(let bytes):
            length = UInt(bytes.count)
            return .some(UnsafeRawPointer(handle.kept.set(bytes)))
        default:
            return nil
        }
    }
    if status == .ok { length_out.pointee = length }
    return status
}

/// Sets `*is_null_out` to 1 when the column is SQL NULL, else 0.
@c public func ar_record_is_null(_ record: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ is_null_out: UnsafeMutablePointer<Int32>?) -> ar_result {
    get(record, column, is_null_out, "ar_record_is_null") { _, cell in
        if case .null = cell { 1 } else { 0 }
    }
}

/// Saves the record: INSERT when new, else an UPDATE of the changed columns. Validations
/// run first: on failure nothing is written and AR_VALIDATION_FAILED is returned (see
/// ar_record_error_count and ar_record_error).
@c public func ar_record_save(_ record: OpaquePointer?) -> ar_result {
    let status = Handle.borrow(record, as: RecordHandle.self) { handle -> ar_result in
        // Without validations, save straight through the handle's database: making it
        // current (a task-local scope) costs about as much as a small INSERT.
        if let validations = handle.model.validations { return validateAndSave(record, validations) }
        let database = handle.model.database
        do {
            try handle.record.save(in: database.database)
            handle.errors = []
            return .ok
        } catch {
            return database.fail(error)
        }
    }
    return status ?? failWithoutDatabase(.misuse, "ar_record_save: not a record handle")
}

private func validateAndSave(_ record: OpaquePointer?, _ validations: (presence: [String], uniqueness: [String])) -> ar_result {
    withRecord(record, "ar_record_save") { handle in
        guard try validate(handle, validations) else {
            throw ActiveRecordError(
                .validationFailed,
                "\(handle.model.name) is invalid: " + handle.errors.map { "\($0.property.text) \($0.message.text)" }.joined(separator: "; "))
        }
        try handle.record.save()
        return .ok
    }
}

/// Presence and uniqueness, as declared on the model; sets the record's errors.
private func validate(_ handle: RecordHandle, _ validations: (presence: [String], uniqueness: [String])) throws -> Bool {
    handle.errors = []
    func fail(_ column: String, _ key: String, _ message: String) {
        let property = Handle.KeptBytes(), keyText = Handle.KeptBytes(), messageText = Handle.KeptBytes()
        _ = property.set(column)
        _ = keyText.set(key)
        _ = messageText.set(message)
        handle.errors.append((property, keyText, messageText))
    }
    for column in validations.presence {
        switch try handle.record.value(column) {
        case .null: fail(column, "cant_be_blank", "can't be blank")
        case .text(let text) where text.allSatisfy(\.isWhitespace): fail(column, "cant_be_blank", "can't be blank")
        case .blob(let data) where data.isEmpty: fail(column, "cant_be_blank", "can't be blank")
        default: break
        }
    }
    for column in validations.uniqueness {
        let value = try handle.record.value(column)
        guard !value.isNull else { continue }
        let quoted = "\"" + column.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        var predicate = "\(quoted) = ?"
        var arguments: [QueryArgument] = [.value(value)]
        if let id = handle.record.id {
            predicate += " AND id <> ?"
            arguments.append(.value(.integer(id)))
        }
        if try DynamicQuery(handle.record.model, where: predicate, arguments: arguments).count() > 0 {
            fail(column, "already_exists", "already exists")
        }
    }
    return handle.errors.isEmpty
}

/// Reads the record's row again, discarding unsaved changes (AR_NOT_FOUND when gone).
@c public func ar_record_reload(_ record: OpaquePointer?) -> ar_result {
    withRecord(record, "ar_record_reload") { handle in
        try handle.record.reload()
        return .ok
    }
}

/// Deletes the record's row (the handle stays valid to release).
@c public func ar_record_drop(_ record: OpaquePointer?) -> ar_result {
    withRecord(record, "ar_record_drop") { handle in
        try handle.record.drop()
        return .ok
    }
}

/// How many validation errors the last ar_record_save found (0 for a NULL handle).
@c public func ar_record_error_count(_ record: OpaquePointer?) -> Int32 {
    Int32(Handle.from(record, as: RecordHandle.self)?.errors.count ?? 0)
}

/// The validation error at `index` (from 0): its property, key ("cant_be_blank",
/// "already_exists") and message. The strings are owned by the record: valid until its
/// next save or release. Any out pointer may be NULL.
@c public func ar_record_error(
    _ record: OpaquePointer?, _ index: Int32, _ property_out: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
    _ key_out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ message_out: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> ar_result {
    withRecord(record, "ar_record_error") { handle in
        guard index >= 0, Int(index) < handle.errors.count else {
            throw ActiveRecordError(.misuse, "ar_record_error: no error \(index); there are \(handle.errors.count)")
        }
        let error = handle.errors[Int(index)]
        property_out?.pointee = error.property.pointer
        key_out?.pointee = error.key.pointer
        message_out?.pointee = error.message.pointer
        return .ok
    }
}

/// Finds the record of `model` with this id: AR_OK with a new handle (release with
/// ar_record_free), or AR_NOT_FOUND with NULL.
@c public func ar_find(_ model: OpaquePointer?, _ id: Int64, _ record_out: UnsafeMutablePointer<OpaquePointer?>?) -> ar_result {
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_find: not a model handle")
    }
    guard let record_out else { return handle.database.fail(.misuse, "ar_find: record_out must not be NULL") }
    record_out.pointee = nil
    return handle.database.run {
        let frozen = try handle.frozen()
        guard let found = try frozen.model.find(id) else {
            throw ActiveRecordError(.notFound, "\(handle.name) has no record with id \(id)")
        }
        record_out.pointee = RecordHandle(model: handle, frozen: frozen, record: found).retainedPointer()
        return .ok
    }
}

/// The number of records of `model`.
@c public func ar_count(_ model: OpaquePointer?, _ count_out: UnsafeMutablePointer<Int64>?) -> ar_result {
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_count: not a model handle")
    }
    guard let count_out else { return handle.database.fail(.misuse, "ar_count: count_out must not be NULL") }
    return handle.database.run {
        count_out.pointee = Int64(try handle.frozen().model.count())
        return .ok
    }
}
