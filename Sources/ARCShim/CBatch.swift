@_spi(Engines) import ARCore
// Batch writes: delete or update every record a query matches with one statement, and
// insert many records with one prepared statement in one transaction. SQL only, as in
// Swift: records already in memory are not changed.
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Deletes every record the query matches (its predicate, order, limit and offset) with one
/// DELETE, and sets `*count_out` (when not NULL) to how many it deleted. SQL only: records
/// in memory are not changed. The query can still be counted or iterated afterwards.
@c public func ar_query_delete_all(_ query: OpaquePointer?, _ count_out: UnsafeMutablePointer<Int64>?) -> ar_result {
    count_out?.pointee = 0
    return withQuery(query, "ar_query_delete_all") { handle in
        let count = try handle.query().deleteAll()
        count_out?.pointee = Int64(count)
        return .ok
    }
}

/// Sets what the next ar_query_update_all writes to `column` (text; NULL `value`: SQL NULL).
/// Setting a column again replaces its value.
@c public func ar_query_set_text(_ query: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> ar_result {
    assign(query, column, "ar_query_set_text") {
        try value.map { .text(try utf8Text($0, "the text", in: "ar_query_set_text")) } ?? .null
    }
}

/// Sets what the next ar_query_update_all writes to an integer or bool (0 or 1) column.
@c public func ar_query_set_int64(_ query: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: Int64) -> ar_result {
    assign(query, column, "ar_query_set_int64") { .integer(value) }
}

/// Sets what the next ar_query_update_all writes to a real or date (seconds since 1970) column.
/// AR_INVALID_VALUE for NaN (SQLite would store NULL), -0.0 (SQLite stores 0.0) and infinities.
@c public func ar_query_set_double(_ query: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ value: Double) -> ar_result {
    assign(query, column, "ar_query_set_double") {
        do {
            try DatabaseValue.real(value).checkStorable()
        } catch let error as ActiveRecordError {
            throw error.with(message: "ar_query_set_double: \(error.message)")
        }
        guard value.isFinite else { throw ActiveRecordError(.invalidValue, "ar_query_set_double: \(value) cannot be stored") }
        return .real(value)
    }
}

/// Sets what the next ar_query_update_all writes to a blob column: `length` bytes, copied.
@c public func ar_query_set_blob(
    _ query: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ bytes: UnsafeRawPointer?, _ length: UInt
) -> ar_result {
    assign(query, column, "ar_query_set_blob") { try blobValue(bytes, length, "ar_query_set_blob") }
}

/// Sets what the next ar_query_update_all writes to a nullable column: SQL NULL.
@c public func ar_query_set_null(_ query: OpaquePointer?, _ column: UnsafePointer<CChar>?) -> ar_result {
    assign(query, column, "ar_query_set_null") { .null }
}

private func assign(
    _ query: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ function: String, _ value: () throws -> DatabaseValue
) -> ar_result {
    withQuery(query, function) { handle in
        guard let column else { throw ActiveRecordError(.misuse, "\(function): column must not be NULL") }
        let name = try utf8Text(column, "the column name", in: function)
        let schema = handle.frozen.model.schema
        guard let position = schema.allColumnNames.firstIndex(of: name) else { throw schema.unknownColumn(name) }
        guard position >= 3 else {
            throw ActiveRecordError(.misuse, "\(function): id, createdAt and updatedAt are set by the library")
        }
        let value = try value()
        try checkCType(value, handle.frozen, handle.model.name, position)
        handle.assignments.removeAll { $0.column == name }
        handle.assignments.append((name, value))
        return .ok
    }
}

/// Writes the values set with ar_query_set_* (and updatedAt, the time now) to every record
/// the query matches, with one UPDATE, and sets `*count_out` (when not NULL) to how many
/// rows it changed. The values are then forgotten. SQL only: no validations run, and records
/// in memory keep their values (ar_record_reload reads them again).
/// AR_MISUSE when nothing was set; AR_TYPE_MISMATCH for a value of the wrong type.
@c public func ar_query_update_all(_ query: OpaquePointer?, _ count_out: UnsafeMutablePointer<Int64>?) -> ar_result {
    count_out?.pointee = 0
    return withQuery(query, "ar_query_update_all") { handle in
        guard !handle.assignments.isEmpty else {
            throw ActiveRecordError(.misuse, "ar_query_update_all: set a column first (ar_query_set_text, _int64, _double, _blob, _null)")
        }
        let count = try handle.query().updateAll(handle.assignments)
        handle.assignments = []
        count_out?.pointee = Int64(count)
        return .ok
    }
}

/// Inserts `count` new records of one model (from ar_record_new, set as for ar_record_save)
/// in one transaction with one prepared statement: each gets its id, as if saved. The
/// model's validations run first, for every record; if one fails, or an insert fails (a
/// unique violation), nothing is inserted and every record stays new (the invalid one's
/// errors are readable with ar_record_error). AR_MISUSE for records of several models or
/// one that is not new.
@c public func ar_record_insert_all(_ records: UnsafePointer<OpaquePointer?>?, _ count: UInt) -> ar_result {
    guard count > 0 else { return .ok }
    guard let records, let first = Handle.from(records[0], as: RecordHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_record_insert_all: records must hold record handles")
    }
    let model = first.model
    return model.database.run {
        let handles = try (0..<Int(count)).map { index in
            guard let handle = Handle.from(records[index], as: RecordHandle.self), handle.model === model else {
                throw ActiveRecordError(.misuse, "ar_record_insert_all: record \(index + 1) is not a record of \(model.name)")
            }
            return handle
        }
        let dynamic = try handles.map { try $0.record }
        do {
            try model.frozen().model.insertAll(dynamic)  // validations first, as a Swift model's insertAll
        } catch {
            // The records validated before the failure, and the one that failed, keep what
            // their validation found (the others what they had).
            for (handle, record) in zip(handles, dynamic) { handle.keepErrors(of: record) }
            throw error
        }
        for handle in handles { handle.clearErrors() }
        return .ok
    }
}
