/// `ContentManager` → `contentManager`.
package func lowerCamel(_ name: String) -> String {
    guard let first = name.first else { return name }
    return first.lowercased() + name.dropFirst()
}

/// The conventional foreign key naming a model: `Group` → `groupId`,
/// `ContentManager` → `contentManagerId` (relations, joins by convention, the C API).
package func foreignKeyName(forModelNamed name: String) -> String { lowerCamel(name) + "Id" }

/// `records` as `[To]`: the same array, for free, when the element types are the same (a
/// relation answering for its own child type), else a conditional cast of each element.
package func castRecords<From: Model, To: Model>(_ records: [From], to type: To.Type = To.self) -> [To] {
    if From.self == To.self { return unsafeBitCast(records, to: [To].self) }
    return records.compactMap { $0 as? To }
}
