@_spi(Engines) import ARCore

/// What destroying a record does to its children (`@HasMany`) or to the records it is
/// related to through a join model (`@HasManyThrough`): the seeds' `ARDependencyDestroy`
/// and `ARDependencyNullify`.
public enum Dependency: Sendable, Equatable {
    /// Nothing: related records keep their keys.
    case none
    /// Destroy the related records too (recursively, with their own dependencies).
    case destroy
    /// Clear the related records' keys (has-many-through: delete only the join rows).
    case nullify
}

/// What destroying a record does to the parent it belongs to (`@BelongsTo`). There is no
/// `nullify`: the key to clear is the record's own, and it is being destroyed.
public enum BelongsToDependency: Sendable, Equatable {
    /// Nothing: the parent stays.
    case none
    /// Destroy the parent too (and so, with its own dependencies, say, its other children).
    case destroy
}

/// The default foreign key for `type`: `Group` → `groupId`. Made once per class on each thread
/// (a relation's query asks for it per owner: written anew, the name cost more than the rest
/// of the relation's query building).
func foreignKey(for type: Model.Type) -> String {
    let id = ObjectIdentifier(type)
    return defaultForeignKeys.withValue { keys in
        if let last = keys.last, last.type == id { return last.key }
        let key: String
        if let known = keys.byType[id] {
            key = known
        } else {
            key = foreignKeyName(forModelNamed: ModelMapping.modelName(type))
            // Model classes are few; the bound only keeps a program that makes classes at run time in check.
            if keys.byType.count >= 256 { keys.byType.removeAll() }
            keys.byType[id] = key
        }
        keys.last = (id, key)
        return key
    }
}

/// One thread's default foreign keys by model class (see ``foreignKey(for:)``), and the one
/// asked for last (a walk over one relation finds it without hashing).
private struct DefaultForeignKeys {
    var byType: [ObjectIdentifier: String] = [:]
    var last: (type: ObjectIdentifier, key: String)?
}

private let defaultForeignKeys = PerThread { DefaultForeignKeys() }

/// The error for a relation whose key column is missing.
func missingKey(_ key: String, in model: Model.Type, for relation: String) -> ActiveRecordError {
    ActiveRecordError(
        .unknownColumn,
        "\(model) has no column '\(key)' for \(relation); declare it (for example @BelongsTo) or name the key in the relation")
}

/// Saves a record related to `owner` as part of the owner's save: a validation
/// failure becomes the owner's, carrying the related record's failures.
func saveRelated(_ related: Model, of owner: Model) throws {
    do {
        try related.save()
    } catch let error as ActiveRecordError where error.code == .validationFailed {
        owner.errors = error.validationFailures
        throw ActiveRecordError.validationFailed(ModelMapping.modelName(type(of: owner)), owner.errors)
    }
}
