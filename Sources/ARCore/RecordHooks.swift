/// A model field that takes part in saving and dropping its record: the
/// relations of `ARRelations` implement it, and reflection finds such fields
/// the way it finds columns. This is how the core calls a feature it does not
/// know: the core defines the hook, the feature plugs into it.
///
/// Each call gets the address of the field inside `record` and runs on the
/// current database, inside the transaction (or savepoint) of the save or drop.
package protocol RecordHookField: SendableMetatype {
    /// Whether the field has work queued (an unsaved related record), so that
    /// saving runs even when no column changed.
    static func hasPendingWork(_ field: UnsafeRawPointer) -> Bool
    /// Before the record's `INSERT` or `UPDATE`: save a pending parent and set the key.
    static func willSave(_ field: UnsafeMutableRawPointer, of record: Model) throws
    /// After it: save queued children with the record's id.
    static func didSave(_ field: UnsafeMutableRawPointer, of record: Model) throws
    /// Before the record's `DELETE`, in the same savepoint: dependencies.
    static func willDrop(_ field: UnsafeMutableRawPointer, of record: Model) throws
}

/// A model field that holds a ``Column`` inside it (a belongs-to holds its foreign key).
package protocol EmbeddedColumnField: SendableMetatype {
    /// Where the column sits inside the field, and its type.
    static var embeddedColumn: (offset: Int, kind: any ColumnField.Type) { get }
    /// The column name when the declaration does not give one (asked once per model, at reflection).
    static var defaultColumnName: String? { get }
}

/// A record being dropped by a cascade, so that a cycle of dependencies
/// (a user destroys its group, which destroys its users) drops it once.
package struct DropKey: Hashable {
    package var table: String
    package var id: Int64
}
