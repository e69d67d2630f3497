@_spi(Engines) import ARCore
// Primary keys other than an integer "id" (issue 36).
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sets the model's primary key, before its first record, query or find: `kind` is an
/// ar_key_kind. AR_KEY_KIND_AUTOINCREMENT names the integer key column (default "id");
/// AR_KEY_KIND_UUID and AR_KEY_KIND_TEXT add the column `name` (text: a UUID as its canonical
/// upper-case text, generated on insert when left NULL; a text that must be set before the
/// first save, else AR_INVALID_VALUE). Find such records with ar_find_by_key_text. AR_MISUSE
/// for an unknown kind, a name declared already, a frozen model, or a model that another
/// belongs to already (ar_model_belongs_to takes the key's type: set the key first).
@c public func ar_model_set_primary_key(_ model: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ kind: Int32) -> ar_result {
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_model_set_primary_key: not a model handle")
    }
    guard let name else { return handle.database.fail(.misuse, "ar_model_set_primary_key: name must not be NULL") }
    guard let kind = ar_key_kind(rawValue: kind) else {
        return handle.database.fail(.misuse, "ar_model_set_primary_key: \(kind) is not an ar_key_kind")
    }
    let column: String
    do { column = try utf8Text(name, "the key name", in: "ar_model_set_primary_key") } catch { return handle.database.fail(error) }
    let problem: String? = handle.withDefinition { definition, isFrozen in
        guard !isFrozen else { return "\(handle.name): set the primary key before the first record, query or find" }
        guard !column.isEmpty, column == "id" || !TableSchema.isReserved(column),
              !definition.columns.contains(where: { isSameName($0.name, column) }) else {
            return "\(handle.name): the key name '\(column)' is empty, reserved or declared already"
        }
        guard !definition.hasChildren else {
            return "\(handle.name): set its primary key before ar_model_belongs_to declares a model belonging to it"
        }
        guard definition.primaryKey.isAutoincrement, definition.primaryKey.name == "id" else {
            return "\(handle.name): its primary key is set already (\(definition.primaryKey))"
        }
        switch kind {
        case .autoincrement:
            definition.primaryKey = .autoincrement(column)
        case .uuid, .text:
            definition.columns.append(ColumnSchema(name: column, type: .text, kind: kind == .uuid ? .uuid : .plain, isNullable: true))
            definition.types[column] = .text
            definition.primaryKey = kind == .uuid ? .uuid(column) : .string(column)
        }
        return nil
    }
    if let problem { return handle.database.fail(.misuse, problem) }
    return .ok
}

/// Finds the record of `model` whose UUID or text primary key is `key` (a UUID in any case):
/// AR_OK with a new handle (release with ar_record_free), or AR_NOT_FOUND with NULL.
/// AR_TYPE_MISMATCH for a model keyed by an integer (use ar_find) or a key that is not a UUID.
@c public func ar_find_by_key_text(
    _ model: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ record_out: UnsafeMutablePointer<OpaquePointer?>?
) -> ar_result {
    record_out?.pointee = nil
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_find_by_key_text: not a model handle")
    }
    guard let key, let record_out else { return handle.database.fail(.misuse, "ar_find_by_key_text: key and record_out must not be NULL") }
    return handle.database.run {
        let frozen = try handle.frozen()
        var text = try utf8Text(key, "the key", in: "ar_find_by_key_text")
        switch frozen.model.schema.primaryKey.kind {
        case .autoincrement:
            throw ActiveRecordError(.typeMismatch, "\(handle.name) has an integer primary key; find its records with ar_find")
        case .uuid:
            guard let uuid = UUID(uuidString: text) else {
                throw ActiveRecordError(.typeMismatch, "ar_find_by_key_text: \(handle.name)'s key is a UUID, and the key given is not one")
            }
            text = uuid.uuidString
        case .string:
            break
        }
        guard let found = try frozen.model.find(key: .text(text)) else {
            throw ActiveRecordError(.notFound, "\(handle.name) has no record with \(frozen.model.schema.primaryKey.name) '\(text)'")
        }
        record_out.pointee = RecordHandle(model: handle, frozen: frozen, record: found).retainedPointer()
        return .ok
    }
}
