@_spi(Engines) import ARCore
// Queries: the predicate language with values bound by position, order, limit,
// offset, count and iteration.
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

func withQuery(_ query: OpaquePointer?, _ function: String, _ body: (QueryHandle) throws -> ar_result) -> ar_result {
    guard let handle = Handle.from(query, as: QueryHandle.self) else {
        return failWithoutDatabase(.misuse, "\(function): not a query handle")
    }
    return handle.model.database.run { try body(handle) }
}

/// Starts a query of `model`'s records matching `predicate` in the predicate language
/// ("name = ? AND age > ?", placeholders `?` or `%@`), or all records when NULL. Bind a
/// value to every placeholder (ar_query_bind_*) before ar_query_next or ar_query_count.
/// A syntax error is AR_INVALID_PREDICATE, with its position in ar_last_error.
/// Release with ar_query_free.
@c public func ar_query_new(
    _ model: OpaquePointer?, _ predicate: UnsafePointer<CChar>?, _ query_out: UnsafeMutablePointer<OpaquePointer?>?
) -> ar_result {
    query_out?.pointee = nil
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_query_new: not a model handle")
    }
    guard let query_out else { return handle.database.fail(.misuse, "ar_query_new: query_out must not be NULL") }
    return handle.database.run {
        let text = try predicate.map { try utf8Text($0, "the predicate", in: "ar_query_new") }
        let placeholders = try text.map { try DynamicQuery.placeholderCount(in: $0) } ?? 0
        // Unknown columns are reported now, not at the first ar_query_next.
        let frozen = try handle.frozen()
        try DynamicQuery(
            frozen.model, where: text, arguments: Array(repeating: .value(.integer(0)), count: placeholders)
        ).check()
        query_out.pointee = QueryHandle(model: handle, frozen: frozen, predicate: text, placeholders: placeholders).retainedPointer()
        return .ok
    }
}

/// The children of `parent` in `child_model` (has-many): records whose
/// <lowerCamel(parent model name)>Id equals the parent's primary key (its id, or its UUID or
/// text key; see ar_model_belongs_to). AR_MISUSE for an unsaved parent; AR_UNKNOWN_COLUMN
/// when the child model has no such column; AR_TYPE_MISMATCH when that column's type is not
/// the parent key's (an integer column for a UUID or text key, or the other way round).
@c public func ar_query_children(
    _ parent: OpaquePointer?, _ child_model: OpaquePointer?, _ query_out: UnsafeMutablePointer<OpaquePointer?>?
) -> ar_result {
    query_out?.pointee = nil
    guard let record = Handle.from(parent, as: RecordHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_query_children: parent is not a record handle")
    }
    guard let child = Handle.from(child_model, as: ModelHandle.self), let query_out else {
        return record.model.database.fail(.misuse, "ar_query_children: child_model and query_out must be given")
    }
    guard let id = record.id else {
        return record.model.database.fail(.misuse, "ar_query_children: the parent is not saved")
    }
    let key = foreignKeyName(forModelNamed: record.model.name)
    let parentKey: DatabaseValue
    do {
        // A UUID or text key is its column's value as last saved (the header's id is 0).
        let table = record.frozen.model.table
        parentKey = table.keyIndex == nil ? .integer(id) : try table.keyValue(of: record.record, id: id)
        let childSchema = try child.frozen().model.schema
        if let column = childSchema.columns.first(where: { $0.name == key }),
           column.type != (table.keyIndex == nil ? .integer : .text) {
            throw ActiveRecordError(
                .typeMismatch,
                "ar_query_children: \(child.name).\(key) is not of the type of \(record.model.name)'s primary key "
                    + "\(table.schema.primaryKey); declare it with ar_model_belongs_to")
        }
    } catch { return record.model.database.fail(error) }
    let status = "\(key.quotedIdentifier) = ?".withCString { ar_query_new(child_model, $0, query_out) }
    guard status == .ok, let query = Handle.from(query_out.pointee, as: QueryHandle.self) else { return status }
    query.arguments[0] = .value(parentKey)
    return .ok
}

private func bind(_ query: OpaquePointer?, _ index: Int32, _ function: String, _ value: () throws -> DatabaseValue) -> ar_result {
    withQuery(query, function) { handle in
        guard index >= 1, Int(index) <= handle.arguments.count else {
            throw ActiveRecordError(
                .invalidPredicate, "\(function): placeholder \(index) does not exist; the predicate has \(handle.arguments.count)")
        }
        try handle.checkNotRun(function)
        handle.arguments[Int(index) - 1] = .value(try value())
        return .ok
    }
}

/// Binds text to placeholder `index` (from 1); NULL `value` binds SQL NULL.
@c public func ar_query_bind_text(_ query: OpaquePointer?, _ index: Int32, _ value: UnsafePointer<CChar>?) -> ar_result {
    bind(query, index, "ar_query_bind_text") {
        try value.map { .text(try utf8Text($0, "the text", in: "ar_query_bind_text")) } ?? .null
    }
}

/// Binds an integer to placeholder `index` (from 1).
@c public func ar_query_bind_int64(_ query: OpaquePointer?, _ index: Int32, _ value: Int64) -> ar_result {
    bind(query, index, "ar_query_bind_int64") { .integer(value) }
}

/// Binds a real number to placeholder `index` (from 1).
@c public func ar_query_bind_double(_ query: OpaquePointer?, _ index: Int32, _ value: Double) -> ar_result {
    bind(query, index, "ar_query_bind_double") {
        guard !value.isNaN else { throw ActiveRecordError(.invalidValue, "ar_query_bind_double: NaN cannot be compared") }
        return .real(value)
    }
}

/// Binds `length` bytes (copied) to placeholder `index` (from 1).
@c public func ar_query_bind_blob(_ query: OpaquePointer?, _ index: Int32, _ bytes: UnsafeRawPointer?, _ length: UInt) -> ar_result {
    bind(query, index, "ar_query_bind_blob") { try blobValue(bytes, length, "ar_query_bind_blob") }
}

/// Binds SQL NULL to placeholder `index` (from 1): `x = ?` then matches NULL.
@c public func ar_query_bind_null(_ query: OpaquePointer?, _ index: Int32) -> ar_result {
    bind(query, index, "ar_query_bind_null") { .null }
}

/// Orders by `column`; several calls sort by each in turn (unordered: by id).
@c public func ar_query_order(_ query: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ ascending: Int32) -> ar_result {
    withQuery(query, "ar_query_order") { handle in
        guard let column else { throw ActiveRecordError(.misuse, "ar_query_order: column must not be NULL") }
        try handle.checkNotRun("ar_query_order")
        let name = try utf8Text(column, "the column name", in: "ar_query_order")
        let schema = handle.frozen.model.schema
        guard schema.allColumnNames.contains(name) else { throw schema.unknownColumn(name) }
        handle.orderings.append((name, ascending != 0))
        return .ok
    }
}

/// Returns at most `count` records (count >= 0).
@c public func ar_query_limit(_ query: OpaquePointer?, _ count: Int64) -> ar_result {
    setBound(query, count, "ar_query_limit") { $0.limit = $1 }
}

/// Skips the first `count` records (count >= 0).
@c public func ar_query_offset(_ query: OpaquePointer?, _ count: Int64) -> ar_result {
    setBound(query, count, "ar_query_offset") { $0.offset = $1 }
}

private func setBound(_ query: OpaquePointer?, _ count: Int64, _ function: String, _ set: (QueryHandle, Int) -> Void) -> ar_result {
    withQuery(query, function) { handle in
        guard count >= 0 else { throw ActiveRecordError(.invalidValue, "\(function): \(count) is negative") }
        try handle.checkNotRun(function)
        set(handle, Int(count))
        return .ok
    }
}

/// The number of matching records (with limit and offset).
@c public func ar_query_count(_ query: OpaquePointer?, _ count_out: UnsafeMutablePointer<Int64>?) -> ar_result {
    count_out?.pointee = 0
    return withQuery(query, "ar_query_count") { handle in
        guard let count_out else { throw ActiveRecordError(.misuse, "ar_query_count: count_out must not be NULL") }
        count_out.pointee = Int64(try handle.query().count())
        return .ok
    }
}

/// The next matching record: AR_OK with a new handle in `*record_out` (release it with
/// ar_record_free), or AR_DONE with NULL when there are no more. The first call runs the
/// query, and each call reads one row. On a file database outside a transaction it reads
/// through one of the database's four reader connections, held until AR_DONE or
/// ar_query_free: the records are those matching at the first call, even if rows change
/// later. Otherwise (in memory, in a transaction, all readers busy) it reads through the
/// database's writer connection, locked per call (as Swift's cursor does): then rows the
/// program changes during the loop may or may not be seen.
@c public func ar_query_next(_ query: OpaquePointer?, _ record_out: UnsafeMutablePointer<OpaquePointer?>?) -> ar_result {
    record_out?.pointee = nil
    let status = Handle.borrow(query, as: QueryHandle.self) { handle -> ar_result in
        next(handle, record_out)
    }
    return status ?? failWithoutDatabase(.misuse, "ar_query_next: not a query handle")
}

private func next(_ handle: QueryHandle, _ record_out: UnsafeMutablePointer<OpaquePointer?>?) -> ar_result {
    guard let record_out else { return handle.model.database.fail(.misuse, "ar_query_next: record_out must not be NULL") }
    if handle.rows == nil {
        // Only the first call makes the database current: it compiles the query and opens
        // the cursor; later calls step without it.
        let status = handle.model.database.run {
            handle.rows = try handle.query().rowCursor()
            return .ok
        }
        guard status == .ok else { return status }
    }
    do {
        switch try handle.stepInPlace() {
        case .row(let record):
            record_out.pointee = record.retainedPointer()
            return .ok
        case .done:
            return .done
        case .notInPlace:
            break
        }
    } catch {
        return handle.model.database.fail(error)
    }
    return handle.model.database.catching {
        // The last record lets the cursor's row go before the cursor moves (or finishes, and
        // finalizes its statement): one C holds keeps its values, one C released is reused.
        let reusable = handle.releasedCurrent()
        reusable?.reset(row: nil, record: nil)
        handle.current = nil
        guard let cursor = handle.rows else { return .done }
        // On a reader the record reads the cursor's row in place (until the next step); on
        // the writer the row is decoded under the writer's lock, as the step is taken.
        let next: DynamicRecord?? = try cursor.next { statement in
            cursor.isOnReader ? nil : try DynamicRecord(model: handle.frozen.model, decodingRowOf: statement)
        }
        guard let decoded = next else { return .done }
        let row = decoded == nil ? cursor.currentRow : nil
        let record: RecordHandle
        if let reusable {
            reusable.reset(row: row, record: decoded)
            record = reusable
        } else if let row {
            record = RecordHandle(model: handle.model, frozen: handle.frozen, row: row)
        } else {
            record = RecordHandle(model: handle.model, frozen: handle.frozen, record: decoded!)
        }
        handle.current = record
        record_out.pointee = record.retainedPointer()
        return .ok
    }
}

/// Releases a query handle. NULL is ignored; a handle released already (or not a query
/// handle) is refused: nothing is released, and ar_last_error(NULL) says so.
@c public func ar_query_free(_ query: OpaquePointer?) {
    _ = Handle.takeBack(query, as: QueryHandle.self, in: "ar_query_free")
}
