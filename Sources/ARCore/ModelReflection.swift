// The only file that uses the standard library's reflection SPI.
//
// `_forEachField(of:options:body:)` yields each stored field of a class —
// name, byte offset from the object's start, and type — once per type and
// without an instance. It includes inherited fields. If it is unavailable
// or disagrees with `Mirror`, reflection fails with a clear error instead of
// guessing: see `ReflectionTests`.
@_spi(Reflection) import Swift

/// A `@Column` property found in a model class.
package struct ReflectedField {
    /// The property name, without the wrapper's leading underscore.
    package var propertyName: String
    /// The byte offset of the `Column` storage from the object's start.
    package var offset: Int
    /// The `Column<Value>` type, for type-erased access.
    package var kind: any ColumnField.Type
}

/// The `@Column` fields of `type`, in declaration order (superclass fields first).
///
/// - Parameter prototype: an instance, used once to cross-check with `Mirror`.
/// - Throws: `.invalidModel` when the runtime cannot describe the class.
package func reflectColumnFields(of modelClass: AnyClass, prototype: AnyObject) throws -> [ReflectedField] {
    var fields: [ReflectedField] = []
    let classType = _EachFieldOptions(rawValue: 1)  // `.classType`, spelled by value (Swift 6 flags the static)
    let complete = _forEachField(of: modelClass, options: classType) { name, offset, fieldType, _ in
        if let kind = fieldType as? any ColumnField.Type {
            var propertyName = String(cString: name)
            if propertyName.hasPrefix("_") { propertyName.removeFirst() }
            fields.append(ReflectedField(propertyName: propertyName, offset: offset, kind: kind))
        }
        return true
    }
    // Cross-check with Mirror (once per type): it sees the wrappers as `_name` children.
    var mirrored: [String] = []
    var mirror: Mirror? = Mirror(reflecting: prototype)
    while let current = mirror {
        let names = current.children.compactMap { child -> String? in
            guard let label = child.label, label.hasPrefix("_"), type(of: child.value) is any ColumnField.Type
            else { return nil }
            return String(label.dropFirst())
        }
        mirrored.insert(contentsOf: names, at: 0)
        mirror = current.superclassMirror
    }
    guard complete, mirrored == fields.map(\.propertyName) else {
        throw ActiveRecordError(
            .invalidModel,
            "cannot reflect the columns of \(modelClass): the runtime reported \(fields.map(\.propertyName)) "
                + "but Mirror sees \(mirrored). Please report this with your Swift version.")
    }
    return fields
}
