import ARCore

// What a relation holds in memory, for a record's encoding (ARCore's Model+Codable.swift):
// nothing is loaded to encode a record.

extension BelongsTo: LoadedRelationField {
    /// The parent assigned or loaded, when it is still the one the key names.
    package static func loadedRecords(_ field: BelongsTo) -> LoadedRecords? {
        guard let parent = field.parent, parent.id == nil || parent.id == field.key.value else { return nil }
        return .one(parent)
    }
}

extension HasMany: LoadedRelationField {
    /// The children eager-loaded (`includes`).
    package static func loadedRecords(_ field: HasMany) -> LoadedRecords? {
        field.preloaded.map { .many($0.asModels) }
    }
}

extension HasOne: LoadedRelationField {
    /// The child loaded (on first read, or eager-loaded by `includes`), when there is one; an
    /// assigned child not yet linked by the owner's save is not (as has-many's pending children).
    package static func loadedRecords(_ field: HasOne) -> LoadedRecords? {
        guard field.state == .loaded, let child = field.child else { return nil }
        return .one(child)
    }
}

extension HasManyThrough: LoadedRelationField {
    /// The related records eager-loaded (`includes`).
    package static func loadedRecords(_ field: HasManyThrough) -> LoadedRecords? {
        field.preloaded.map { .many($0.asModels) }
    }
}
