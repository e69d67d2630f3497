/// A model field that takes part in saving and destroying its record: the
/// relations of `ARRelations` implement it, and reflection finds such fields
/// the way it finds columns. This is how the core calls a feature it does not
/// know: the core defines the hook, the feature plugs into it.
///
/// Each call gets the field's ``HookFieldSite``: typed access to the field inside its
/// record (the field's address stays in ARCore). The calls run on the current database,
/// inside the transaction (or savepoint) of the save or destroy.
package protocol RecordHookField: SendableMetatype {
    /// Whether the field has work queued (an unsaved related record), so that
    /// saving runs even when no column changed.
    static func hasPendingWork(_ field: Self) -> Bool
    /// Before the record's `INSERT` or `UPDATE`: save a pending parent and set the key.
    static func willSave(_ site: HookFieldSite<Self>) throws
    /// After it: save queued children with the record's id.
    static func didSave(_ site: HookFieldSite<Self>) throws
    /// Before the record's `DELETE`, in the same savepoint: dependencies.
    static func willDestroy(_ site: HookFieldSite<Self>) throws
    /// Whether ``willDestroy(_:)`` has anything to do for a field declared like this one
    /// (asked once per model, on its prototype): a model whose fields have none destroys its
    /// records with a plain `DELETE`.
    static func hasDestroyWork(_ field: Self) -> Bool
}

/// A model field that holds a ``Column`` inside it (a belongs-to holds its foreign key).
package protocol EmbeddedColumnField: SendableMetatype {
    associatedtype EmbeddedValue: ColumnValue
    /// The column inside the field.
    static var embeddedColumn: WritableKeyPath<Self, Column<EmbeddedValue>> { get }
    /// The column name when the declaration does not give one (asked once per model, at reflection).
    static var defaultColumnName: String? { get }
    /// The model whose `id` the column holds, for its `REFERENCES` clause (asked at reflection).
    static var referencedModel: Model.Type? { get }
}

extension EmbeddedColumnField {
    /// Where the column sits inside the field, and its type: the layout reflection needs.
    static var embeddedLayout: (offset: Int, kind: any ColumnField.Type) {
        guard let offset = MemoryLayout<Self>.offset(of: embeddedColumn) else {
            preconditionFailure("\(Self.self).embeddedColumn must be a stored property")
        }
        return (offset, Column<EmbeddedValue>.self)
    }
}

/// One hook field of one record: typed access to it for the feature that owns it.
///
/// The field lives inside the record object, at an offset found by reflection; this
/// value hides that address, so features read and change their fields as Swift values.
package struct HookFieldSite<Field: RecordHookField> {
    /// The record the field belongs to.
    package let record: Model
    let offset: Int

    /// The field's value.
    package var field: Field { record.withHookField(at: offset, as: Field.self) { $0 } }

    /// Changes the field in place.
    package func modify<R>(_ body: (inout Field) throws -> R) rethrows -> R {
        try record.withHookField(at: offset, as: Field.self, body)
    }

    /// The original (as last loaded or saved) of the column the field holds, as `Value`;
    /// `nil` when it holds none, or `NULL`.
    package func originalKey<Value: ColumnValue>(_ type: Value.Type) -> Value? {
        guard let mapping = try? record.mapping(),
              let column = mapping.hooks.first(where: { $0.offset == offset })?.columnIndex else { return nil }
        return try? Value.fromSQL(record.originalValue(column))
    }

    /// Registers `restore` to run on the field if the current transaction level rolls back
    /// (put a queue back that the save emptied). Outside a transaction it is dropped.
    package func onRollback(_ restore: @escaping (inout Field) -> Void) throws {
        let record = record, offset = offset
        try Database.current.withConnection { connection in
            connection.onRollback { record.withHookField(at: offset, as: Field.self, restore) }
        }
    }
}

extension Model {
    /// The site of the hook field at `offset` of this record (a ``ModelMapping/Hook``'s, found
    /// once for its class), as `Field`: the field's own type as reflection found it, or the
    /// same generic type over a superclass of its model type argument (a relation's field,
    /// whose layout is the same for every model class it holds), so that a feature reaches a
    /// field of any of its classes with one non-generic type. Unlike
    /// ``hookSite(_:as:)``, it checks nothing: the caller found the offset for this type.
    package final func hookSite<Field: RecordHookField>(at offset: Int, as type: Field.Type) -> HookFieldSite<Field> {
        HookFieldSite(record: self, offset: offset)
    }
}

extension RecordHookField {
    /// The calls on a type-erased hook: ARCore knows the field only by its type and offset.
    static func hasPendingWork(in record: Model, at offset: Int) -> Bool {
        hasPendingWork(record.withHookField(at: offset, as: Self.self) { $0 })
    }
    static func willSave(in record: Model, at offset: Int) throws {
        try willSave(HookFieldSite(record: record, offset: offset))
    }
    static func didSave(in record: Model, at offset: Int) throws {
        try didSave(HookFieldSite(record: record, offset: offset))
    }
    static func willDestroy(in record: Model, at offset: Int) throws {
        try willDestroy(HookFieldSite(record: record, offset: offset))
    }
    static func hasDestroyWork(in record: Model, at offset: Int) -> Bool {
        hasDestroyWork(record.withHookField(at: offset, as: Self.self) { $0 })
    }
}

/// A record being destroyed by a cascade, so that a cycle of dependencies
/// (a user destroys its group, which destroys its users) destroys it once.
package struct DestroyKey: Hashable {
    package var table: String
    package var id: Int64
    /// The key of a table keyed by a declared `UUID` or `String` column (`.null` otherwise).
    package var key: DatabaseValue = .null
}
