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
