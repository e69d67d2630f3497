/// `ContentManager` → `contentManager`.
package func lowerCamel(_ name: String) -> String {
    guard let first = name.first else { return name }
    return first.lowercased() + name.dropFirst()
}

/// The conventional foreign key naming a model: `Group` → `groupId`,
/// `ContentManager` → `contentManagerId` (relations, joins by convention, the C API).
package func foreignKeyName(forModelNamed name: String) -> String { lowerCamel(name) + "Id" }
