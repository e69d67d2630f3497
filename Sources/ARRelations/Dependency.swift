import ARCore

/// What dropping a record does to the records related to it (the seeds'
/// `ARDependencyDestroy` and `ARDependencyNullify`).
public enum Dependency: Sendable, Equatable {
    /// Nothing: related records keep their keys.
    case none
    /// Drop the related records too (recursively, with their own dependencies).
    case destroy
    /// Clear the related records' keys (has-many-through: delete only the join rows).
    case nullify
}

/// `ContentManager` → `contentManager`.
func lowerCamel(_ name: String) -> String {
    guard let first = name.first else { return name }
    return first.lowercased() + name.dropFirst()
}

/// The default foreign key for `type`: `Group` → `groupId`.
func foreignKey(for type: Model.Type) -> String { lowerCamel(ModelMapping.modelName(type)) + "Id" }

extension Model {
    /// The record's id as a bound value (`NULL` when unsaved).
    var idValue: DatabaseValue { id.map { .integer($0) } ?? .null }
}

/// The error for a relation whose key column is missing.
func missingKey(_ key: String, in model: Model.Type, for relation: String) -> ActiveRecordError {
    ActiveRecordError(
        .unknownColumn,
        "\(model) has no column '\(key)' for \(relation); declare it (for example @BelongsTo) or name the key in the relation")
}

/// Saves a record related to `owner` as part of the owner's save: a validation
/// failure becomes the owner's, carrying the related record's errors.
func saveRelated(_ related: Model, of owner: Model) throws {
    do {
        try related.save()
    } catch let error as ActiveRecordError where error.code == .validationFailed {
        owner.errors = error.validationErrors
        throw ActiveRecordError.validationFailed(ModelMapping.modelName(type(of: owner)), owner.errors)
    }
}

/// Puts a queue back if the transaction that emptied it rolls back.
func restoreOnRollback<Field>(_ pointer: UnsafeMutablePointer<Field>, of owner: Model, _ restore: @escaping (inout Field) -> Void) throws {
    try Database.current.withConnection { connection in
        connection.onRollback { withExtendedLifetime(owner) { restore(&pointer.pointee) } }
    }
}

/// `records` as `[Record]`: the same array when the types match (a relation asked for
/// its own child type), else a conditional cast of each element.
func typed<Child: Model, Record: Model>(_ records: [Child]) -> [Record] {
    if Child.self == Record.self { return unsafeBitCast(records, to: [Record].self) }
    return records.compactMap { $0 as? Record }
}
