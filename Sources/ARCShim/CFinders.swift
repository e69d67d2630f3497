@_spi(Engines) import ARCore
// Finding records by id, and counting them.
import ActiveRecord

/// Finds the record of `model` with this id: AR_OK with a new handle (release with
/// ar_record_free), or AR_NOT_FOUND with NULL.
@c public func ar_find(_ model: OpaquePointer?, _ id: Int64, _ record_out: UnsafeMutablePointer<OpaquePointer?>?) -> ar_result {
    record_out?.pointee = nil
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_find: not a model handle")
    }
    guard let record_out else { return handle.database.fail(.misuse, "ar_find: record_out must not be NULL") }
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
    count_out?.pointee = 0
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_count: not a model handle")
    }
    guard let count_out else { return handle.database.fail(.misuse, "ar_count: count_out must not be NULL") }
    return handle.database.run {
        count_out.pointee = Int64(try handle.frozen().model.count())
        return .ok
    }
}
