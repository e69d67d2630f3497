// The only file that uses the standard library's reflection SPI.
//
// `_forEachField(of:options:body:)` yields each stored field of a class —
// name, byte offset from the object's start, and type — once per type and
// without an instance. It includes inherited fields. If it is unavailable
// or disagrees with `Mirror`, reflection fails with a clear error instead of
// guessing: see `ReflectionTests`.
@_spi(Reflection) import Swift

/// A property of a model class that the library manages: a `@Column`, or a
/// relation (which may hold a column, its foreign key, and take part in save and destroy).
package struct ReflectedField {
    /// The property name, without the wrapper's leading underscore.
    package var propertyName: String
    /// The byte offset of the field from the object's start.
    package var offset: Int
    /// The column the field is or holds: its offset from the object's start and its type.
    package var column: (offset: Int, kind: any ColumnField.Type)?
    /// The column's name when its declaration gives none and it is not the property name.
    package var defaultColumnName: String?
    /// The model whose `id` the column holds (a belongs-to's key).
    package var references: Model.Type?
    /// The field's save and destroy hooks.
    package var hook: (any RecordHookField.Type)?
}

/// Whether the library manages fields of this type.
private func isManaged(_ type: Any.Type) -> Bool {
    type is any ColumnField.Type || type is any EmbeddedColumnField.Type || type is any RecordHookField.Type
}

/// The managed fields of `type`, in declaration order (superclass fields first).
///
/// - Parameter prototype: an instance, used once to cross-check with `Mirror`.
/// - Throws: `.invalidModel` when the runtime cannot describe the class.
package func reflectColumnFields(of modelClass: AnyClass, prototype: AnyObject) throws -> [ReflectedField] {
    var fields: [ReflectedField] = []
    let classType = _EachFieldOptions(rawValue: 1)  // `.classType`, spelled by value (Swift 6 flags the static)
    let complete = _forEachField(of: modelClass, options: classType) { name, offset, fieldType, _ in
        guard isManaged(fieldType) else { return true }
        var propertyName = String(cString: name)
        if propertyName.hasPrefix("_") { propertyName.removeFirst() }
        var field = ReflectedField(propertyName: propertyName, offset: offset)
        if let kind = fieldType as? any ColumnField.Type {
            field.column = (offset, kind)
        } else if let embedding = fieldType as? any EmbeddedColumnField.Type {
            let embedded = embedding.embeddedLayout
            field.column = (offset + embedded.offset, embedded.kind)
            field.defaultColumnName = embedding.defaultColumnName
            field.references = embedding.referencedModel
        }
        field.hook = fieldType as? any RecordHookField.Type
        fields.append(field)
        return true
    }
    // Cross-check with Mirror (once per type): it sees the wrappers as `_name` children.
    var mirrored: [String] = []
    var mirror: Mirror? = Mirror(reflecting: prototype)
    while let current = mirror {
        let names = current.children.compactMap { child -> String? in
            guard let label = child.label, label.hasPrefix("_"), isManaged(type(of: child.value)) else { return nil }
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
