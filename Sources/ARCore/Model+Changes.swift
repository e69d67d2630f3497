#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a record stands relative to its row.
public enum RecordState: Sendable, Equatable {
    /// Never saved: no row, no id.
    case new
    /// Saved, and unchanged since it was loaded or saved.
    case persisted
    /// Saved, with unsaved changes.
    case changed
    /// Destroyed: its row was deleted.
    case destroyed
}

/// One changed column: its name and its original and current values.
public struct ColumnChange: Sendable, Equatable, CustomStringConvertible {
    /// The column name.
    public var column: String
    /// The value as last loaded or saved (for a new record, the default).
    public var old: DatabaseValue
    /// The current, unsaved value.
    public var new: DatabaseValue

    /// Makes a change record.
    public init(column: String, old: DatabaseValue, new: DatabaseValue) {
        self.column = column
        self.old = old
        self.new = new
    }

    /// `name: 'Alex' → 'John'`.
    public var description: String { "\(column): \(old) → \(new)" }
}

extension Model {
    /// Whether the record was never saved.
    public var isNewRecord: Bool { header.id == nil }

    /// Whether the record was destroyed.
    public var isDestroyed: Bool { header.isDestroyed }

    /// The record's state: new, persisted, changed or destroyed. (Named so that a model
    /// may have a column called `state`.)
    public var recordState: RecordState {
        if header.isDestroyed { return .destroyed }
        if header.id == nil { return .new }
        return hasChanges ? .changed : .persisted
    }

    /// Whether any column differs from its value as last loaded or saved
    /// (for a new record, from its declared default). Mutations made in
    /// place to arrays and other JSON values count.
    public var hasChanges: Bool {
        guard let mapping = try? mapping() else { return false }
        return !mapping.table.changedColumns(of: self).isEmpty
    }

    /// The changed columns, in declaration order, with old and new values.
    public var changes: [ColumnChange] {
        guard let mapping = try? mapping() else { return [] }
        return mapping.table.changedColumns(of: self).map { index in
            let values = columnValues(index)
            return ColumnChange(
                column: mapping.table.schema.columns[index].name, old: values.original, new: values.current)
        }
    }

    /// Puts every changed column back to its value as last loaded or saved.
    public func revertChanges() {
        guard let mapping = try? mapping() else { return }
        for index in mapping.table.changedColumns(of: self) { revertColumn(index) }
        // Every column holds its original again: the copies kept aside go.
        markAllColumnsSaved(count: mapping.fields.count)
    }
}
