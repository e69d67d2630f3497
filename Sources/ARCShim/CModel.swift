@_spi(Engines) import ARCore
// Models defined at run time.
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Starts defining the model for table `name` (created, or migrated by adding columns,
/// on first use). Add columns with ar_model_add_column before the first record, query
/// or find. Release with ar_model_free.
@c public func ar_model_define(
    _ database: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ model_out: UnsafeMutablePointer<OpaquePointer?>?
) -> ar_result {
    model_out?.pointee = nil
    guard let handle = Handle.from(database, as: DatabaseHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_model_define: not a database handle")
    }
    guard let name, let model_out else { return handle.fail(.misuse, "ar_model_define: name and model_out must not be NULL") }
    let text: String
    do { text = try utf8Text(name, "the name", in: "ar_model_define") } catch { return handle.fail(error) }
    guard !text.isEmpty else { return handle.fail(.misuse, "ar_model_define: the name is empty") }
    model_out.pointee = ModelHandle(database: handle, name: text).retainedPointer()
    return .ok
}

/// Adds a column: `type` is an ar_type, `flags` AR_COLUMN_FLAG_NULLABLE / _INDEXED / _UNIQUE
/// combined with |. The names id, createdAt and updatedAt are built in. An unknown type
/// is AR_MISUSE.
@c public func ar_model_add_column(_ model: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ type: Int32, _ flags: Int32) -> ar_result {
    // The type arrives as a plain integer: a C caller may pass any value, and a Swift
    // enum parameter holding an unknown one would be undefined behaviour.
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_model_add_column: not a model handle")
    }
    guard let name else { return handle.database.fail(.misuse, "ar_model_add_column: name must not be NULL") }
    guard let type = ar_type(rawValue: type) else {
        return handle.database.fail(.misuse, "ar_model_add_column: \(type) is not an ar_type")
    }
    let column: String
    do { column = try utf8Text(name, "the column name", in: "ar_model_add_column") } catch { return handle.database.fail(error) }
    let sqlType: SQLType = switch type {
    case .text, .decimal: .text
    case .integer, .bool: .integer
    case .real, .date: .real
    case .blob: .blob
    }
    let index: IndexKind? = flags & ar_column_flag.unique.rawValue != 0 ? .unique
        : flags & ar_column_flag.indexed.rawValue != 0 ? .index : nil
    let problem: String? = handle.withDefinition { definition, isFrozen in
        guard !isFrozen else { return "\(handle.name): add columns before the first record, query or find" }
        guard !column.isEmpty, !TableSchema.isReserved(column),
              !definition.columns.contains(where: { isSameName($0.name, column) }) else {
            return "\(handle.name): the column name '\(column)' is empty, reserved or declared twice"
        }
        let kind: ColumnKind = type == .bool ? .boolean : type == .decimal ? .decimal : .plain
        definition.columns.append(ColumnSchema(
            name: column, type: sqlType, kind: kind, isNullable: flags & ar_column_flag.nullable.rawValue != 0, index: index))
        definition.types[column] = type
        return nil
    }
    if let problem { return handle.database.fail(.misuse, problem) }
    return .ok
}

/// Requires `column` to be present (not NULL, not empty text or blob) when saving;
/// a failure is AR_VALIDATION_FAILED with the error key "cant_be_blank".
@c public func ar_model_validate_presence(_ model: OpaquePointer?, _ column: UnsafePointer<CChar>?) -> ar_result {
    addValidation(model, column, "ar_model_validate_presence") { $0.presence.append($1) }
}

/// Requires `column`'s value to be unique among the other rows when saving;
/// a failure is AR_VALIDATION_FAILED with the error key "already_exists".
@c public func ar_model_validate_uniqueness(_ model: OpaquePointer?, _ column: UnsafePointer<CChar>?) -> ar_result {
    addValidation(model, column, "ar_model_validate_uniqueness") { $0.uniqueness.append($1) }
}

private func addValidation(
    _ model: OpaquePointer?, _ column: UnsafePointer<CChar>?, _ function: String, _ add: (inout ModelHandle.Definition, String) -> Void
) -> ar_result {
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "\(function): not a model handle")
    }
    guard let column else { return handle.database.fail(.misuse, "\(function): column must not be NULL") }
    let name: String
    do { name = try utf8Text(column, "the column name", in: function) } catch { return handle.database.fail(error) }
    let problem: String? = handle.withDefinition { definition, _ in
        guard definition.columns.contains(where: { $0.name == name }) else {
            return "\(handle.name) has no column '\(name)'; its columns are: \(definition.columns.map(\.name).joined(separator: ", "))"
        }
        add(&definition, name)
        return nil
    }
    if let problem { return handle.database.fail(.unknownColumn, problem) }
    return .ok
}

/// Declares that `model` belongs to `parent_model`: adds the nullable, indexed column
/// <lowerCamel(parent name)>Id (Group → groupId), a foreign key to the parent's primary key
/// (a key naming no parent row fails with AR_CONSTRAINT when its transaction commits). The
/// column takes the parent's key type: AR_TYPE_INTEGER for an integer key; AR_TYPE_TEXT for a
/// UUID or text key (ar_model_set_primary_key, which must come before this call), set with
/// ar_record_set_text to the parent's key as ar_record_get_text reads it from the parent.
/// Use ar_query_children for the other direction (has-many).
@c public func ar_model_belongs_to(_ model: OpaquePointer?, _ parent_model: OpaquePointer?) -> ar_result {
    guard let handle = Handle.from(model, as: ModelHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_model_belongs_to: not a model handle")
    }
    guard let parentHandle = Handle.from(parent_model, as: ModelHandle.self) else {
        return handle.database.fail(.misuse, "ar_model_belongs_to: parent is not a model handle")
    }
    // The parent's key, which can no longer change once a model belongs to it.
    let parentKey = parentHandle.withDefinition { definition, _ in
        definition.hasChildren = true
        return definition.primaryKey
    }
    let key = foreignKeyName(forModelNamed: parentHandle.name)
    let type: ar_type = parentKey.isAutoincrement ? .integer : .text
    let status = key.withCString { key in
        ar_model_add_column(model, key, type.rawValue, ar_column_flag.nullable.rawValue | ar_column_flag.indexed.rawValue)
    }
    guard status == .ok else { return status }
    // The key references the parent's key column: no row can point at a parent that does not exist.
    handle.withDefinition { definition, _ in
        if let index = definition.columns.firstIndex(where: { $0.name == key }) {
            definition.columns[index].references = parentHandle.name
            definition.columns[index].referencedColumn = parentKey.name
            if parentKey.kind == .uuid { definition.columns[index].kind = .uuid }
        }
        definition.parents.append(parentHandle)
    }
    return .ok
}

/// Defines a model from an existing table's columns (their types read from the declared
/// types as the engine reads them: INTEGER, REAL, TEXT, BLOB; on PostgreSQL also BOOLEAN as
/// AR_TYPE_BOOL and NUMERIC as AR_TYPE_DECIMAL; NOT NULL when declared so). Release with
/// ar_model_free.
@c public func ar_model_attach(
    _ database: OpaquePointer?, _ table: UnsafePointer<CChar>?, _ model_out: UnsafeMutablePointer<OpaquePointer?>?
) -> ar_result {
    model_out?.pointee = nil
    guard let handle = Handle.from(database, as: DatabaseHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_model_attach: not a database handle")
    }
    guard let table, let model_out else { return handle.fail(.misuse, "ar_model_attach: table and model_out must not be NULL") }
    return handle.run {
        let name = try utf8Text(table, "the table name", in: "ar_model_attach")
        let info = try handle.database.withSchema { connection, dialect in
            try dialect.columns(of: name, connection).map { ($0, dialect.storage(ofDeclaredType: $0.type)) }
        }
        guard !info.isEmpty else { throw ActiveRecordError(.unknownTable, "there is no table \(name)") }
        let model = ModelHandle(database: handle, name: name)
        for (column, (sqlType, kind)) in info where !TableSchema.isReserved(column.name) {
            let type: ar_type = switch (sqlType, kind) {
            case (.integer, .boolean): .bool
            case (.integer, _): .integer
            case (.real, _): .real
            case (.text, .decimal): .decimal
            case (.text, _): .text
            case (.blob, _): .blob
            }
            model.withDefinition { definition, _ in
                definition.columns.append(ColumnSchema(name: column.name, type: sqlType, kind: kind, isNullable: column.isNullable))
                definition.types[column.name] = type
            }
        }
        model_out.pointee = model.retainedPointer()
        return .ok
    }
}

/// Releases a model handle. Records and queries made from it keep it alive until
/// they are released. NULL is ignored; a handle released already (or not a model handle)
/// is refused: nothing is released, and ar_last_error(NULL) says so.
@c public func ar_model_free(_ model: OpaquePointer?) {
    _ = Handle.takeBack(model, as: ModelHandle.self, in: "ar_model_free")
}
