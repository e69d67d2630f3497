/// What an upsert did with its record: inserted a new row, or found the row with the same
/// conflict values and updated it.
///
/// ```swift
/// let tag = Tag(); tag.name = "swift"
/// switch try tag.upsert(onConflict: ["name"]) {
/// case .inserted: print("new tag \(tag.id!)")
/// case .updated: print("tag \(tag.id!) was there")
/// }
/// ```
public enum UpsertOutcome: Sendable, Hashable {
    /// No row had the record's values in the conflict columns: the record's row is new.
    case inserted
    /// A row had them, and the record became that row, with the `updating` columns written
    /// (with `updating: []`, the row as it was).
    case updated
}
