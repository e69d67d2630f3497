@_spi(Engines) import ARCore
// Records: new, free, id, save, reload, destroy, validation errors.
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs `body` for a record handle, on its database.
func withRecord(_ record: OpaquePointer?, _ function: String, _ body: (RecordHandle) throws -> ar_result) -> ar_result {
    guard let handle = Handle.from(record, as: RecordHandle.self) else {
        return failWithoutDatabase(.misuse, "\(function): not a record handle")
    }
    return handle.model.database.run { try body(handle) }
}

/// Runs `body` for a record handle without making its database current (getters, setters).
@inline(__always)
func withRecordInMemory(_ record: OpaquePointer?, _ function: String, _ body: (RecordHandle) throws -> ar_result) -> ar_result {
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
func position(_ column: UnsafePointer<CChar>?, in handle: RecordHandle, _ function: String) throws -> Int {
    guard let column else { throw ActiveRecordError(.misuse, "\(function): column must not be NULL") }
    guard let position = handle.position(of: column) else {
        throw handle.frozen.model.schema.unknownColumn(String(cString: column))
    }
    return position
}

/// Makes a new, unsaved record of `model` (columns at their defaults). Release with ar_record_free.
@c public func ar_record_new(_ model: OpaquePointer?, _ record_out: UnsafeMutablePointer<OpaquePointer?>?) -> ar_result {
    record_out?.pointee = nil
    let status = Handle.borrow(model, as: ModelHandle.self) { handle -> ar_result in
        guard let record_out else { return handle.database.fail(.misuse, "ar_record_new: record_out must not be NULL") }
        do {  // no database access: a new record lives in memory
            let frozen = try handle.frozen()
            record_out.pointee = RecordHandle(model: handle, frozen: frozen, record: frozen.model.makeRecord()).retainedPointer()
            return .ok
        } catch {
            return handle.database.fail(error)
        }
    }
    return status ?? failWithoutDatabase(.misuse, "ar_record_new: not a model handle")
}

/// Releases a record handle (and the strings and bytes it returned). NULL is ignored; a
/// handle released already (or not a record handle) is refused: nothing is released, and
/// ar_last_error(NULL) says so.
@c public func ar_record_free(_ record: OpaquePointer?) {
    _ = Handle.takeBack(record, as: RecordHandle.self, in: "ar_record_free")
}

/// The record's id, or 0 while it is unsaved (or for a NULL handle).
@c public func ar_record_id(_ record: OpaquePointer?) -> Int64 {
    Handle.borrow(record, as: RecordHandle.self) { $0.id ?? 0 } ?? 0
}

/// Saves the record: INSERT when new, else an UPDATE of the changed columns. Validations
/// run first (for a new record, or one with changes): on failure nothing is written and
/// AR_VALIDATION_FAILED is returned (see ar_record_error_count and ar_record_error).
// The record lifecycle is the Swift models' (ARCore's RecordLifecycle): the validations and
// the write in one transaction, a unique violation that a uniqueness validation explains (a
// concurrent saver won) reported as that validation's already_exists.
@c public func ar_record_save(_ record: OpaquePointer?) -> ar_result {
    let status = Handle.borrow(record, as: RecordHandle.self) { handle -> ar_result in
        // Saved through the handle's database, not made current (a task-local scope costs
        // about as much as a small INSERT): the record's save makes it current when its
        // model validates.
        do {
            try handle.withRecord { record in
                do {
                    try record.save(in: handle.model.database.database)
                } catch {
                    handle.keepErrors(of: record, failed: error)
                    throw error
                }
                // The last save found none. Touched only when the model validates: an access to
                // the record's errors from this module is checked for exclusivity at run time.
                if record.model.hasValidations, !record.errors.isEmpty { record.errors = [] }
            }
            handle.clearErrors()
            return .ok
        } catch {
            return handle.model.database.fail(error)
        }
    }
    return status ?? failWithoutDatabase(.misuse, "ar_record_save: not a record handle")
}

/// Reads the record's row again, discarding unsaved changes (AR_NOT_FOUND when gone).
@c public func ar_record_reload(_ record: OpaquePointer?) -> ar_result {
    withRecord(record, "ar_record_reload") { handle in
        try handle.record.reload()
        return .ok
    }
}

/// Destroys the record: deletes its row (the handle stays valid to release).
@c public func ar_record_destroy(_ record: OpaquePointer?) -> ar_result {
    withRecord(record, "ar_record_destroy") { handle in
        try handle.record.destroy()
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
    property_out?.pointee = nil
    key_out?.pointee = nil
    message_out?.pointee = nil
    return withRecord(record, "ar_record_error") { handle in
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
