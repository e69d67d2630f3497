#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ModelClassMethods where Self: Model {
    /// Inserts new records in one transaction and gives each its id and timestamps (one time
    /// for the batch): on SQLite with one prepared statement run per record; on PostgreSQL by
    /// a binary `COPY` from 200 records when the table allows it (no triggers or rules of the
    /// user's, no row-level security, ids from a sequence: the ids are taken from it first, in
    /// order), else with up to 1,000 records per `INSERT … VALUES (…), (…) … RETURNING "id"`.
    ///
    /// ```swift
    /// let imported = feed.map { item in let b = Bookmark(); b.url = item.link; return b }
    /// try Bookmark.insertAll(imported)            // each has its id now
    /// ```
    /// SQL only, as Rails' `insert_all`: no callbacks and no relation hooks run (relations
    /// queued on the records are not saved). A model that validates validates every record
    /// first, and inserts nothing if one is invalid; uniqueness is checked against the table,
    /// not among the batch's own records (a unique index catches those).
    /// - Throws: `.misuse` for a record that is not new; `.validationFailed` for the first
    ///   invalid record (its position in the message, its ``Model/errors`` set); the engine's
    ///   error (a unique violation, …), its message naming the record that caused it ("record
    ///   5001 of 10000: …"). Nothing is inserted on error, and the records are new again.
    public static func insertAll(_ records: [Self]) throws {
        guard !records.isEmpty else { return }
        let mapping = try mapping()
        let models = try mapped(records, mapping)
        for position in models.indices where models[position].header.id != nil || models[position].header.isDestroyed {
            throw ActiveRecordError(
                .misuse,
                "insertAll: record \(position + 1) of \(models.count) is not new (id \(models[position].header.id ?? 0)); save() updates a saved record")
        }
        try RecordLifecycle.insertAll(models, into: mapping.table, validates: mapping.validates)
    }

    /// Makes a record of each dictionary of column values and inserts them all, as
    /// `insertAll(_:)` of records does.
    ///
    /// ```swift
    /// let tags = try Tag.insertAll([["name": "swift"], ["name": "sqlite"]])
    /// ```
    /// - Throws: what ``Model/init(_:)`` throws for a dictionary (an unknown column, a value
    ///   of the wrong type), and what `insertAll(_:)` of records throws.
    @discardableResult
    public static func insertAll(_ rows: [[String: (any ColumnValue)?]]) throws -> [Self] {
        let records = try rows.map { try Self($0) }
        try insertAll(records)
        return records
    }

    /// Inserts each record, or updates the row that has the same values in `conflict` —
    /// the columns of a unique index — and makes the record that row: ``upsert(onConflict:updating:)``
    /// for many records, in one transaction with one prepared statement.
    ///
    /// ```swift
    /// let outcomes = try Tag.upsertAll(tags, onConflict: ["name"])   // existing names keep their rows and ids
    /// let added = outcomes.filter { $0 == .inserted }.count
    /// ```
    /// - Returns: what the upsert did with each record, in the records' order (a record whose
    ///   conflict values an earlier record of the batch inserted is `.updated`).
    /// - Throws: see ``upsert(onConflict:updating:)``; nothing is written on error.
    @discardableResult
    public static func upsertAll(_ records: [Self], onConflict conflict: [String], updating: [String]? = nil) throws -> [UpsertOutcome] {
        guard !records.isEmpty else { return [] }
        let mapping = try mapping()
        let (conflictColumns, updateColumns) = try upsertColumns(mapping, conflict, updating)
        let models = try mapped(records, mapping)
        return try RecordLifecycle.upsertAll(
            models, into: mapping.table, conflict: conflictColumns, updating: updateColumns, validates: mapping.validates)
    }

    /// The records as ``Model``s (the table engine's loops are specialized for that class,
    /// not for each model), each mapped (a record made with `init()` is mapped on first use)
    /// to this model's table, not a subclass's.
    private static func mapped(_ records: [Self], _ mapping: ModelMapping) throws -> [Model] {
        // The same buffer: an upcast of an array of class references needs no conversion, but
        // `as` builds a new array checking each element's type (see Benchmarks/README.md,
        // Hot-path notes).
        let models = unsafeBitCast(records, to: [Model].self)
        for record in models {
            if type(of: record) == Self.self {
                record.adopt(mapping)
            } else if try record.mapping().table !== mapping.table {
                throw ActiveRecordError(.misuse, "a batch of \(Self.self) holds a \(type(of: record)), which has a table of its own")
            }
        }
        return models
    }
}

extension ModelClassMethods where Self: Model {
    /// Inserts the record, or — when a row with the same values in `conflict` exists (the
    /// columns of a unique index) — updates that row instead: the `updating` columns and
    /// `updatedAt` from this record (`nil`: every declared column but the conflict ones;
    /// `[]`: none, the row stays as it is). Either way the record becomes that row, as the
    /// database has it: its id, its timestamps (`createdAt` of an existing row stays), and
    /// every column (those not updated read back as the row holds them).
    ///
    /// ```swift
    /// let tag = Tag(); tag.name = "swift"
    /// if try tag.upsert(onConflict: ["name"]) == .inserted { … }   // a new row, or the existing "swift" row
    /// ```
    /// `ON CONFLICT (…) DO UPDATE` on both engines. SQL only: no callbacks run; a model that
    /// validates validates the record first, as a new record, except that a uniqueness
    /// validation does not count the row this upsert would update (so
    /// `uniqueness(\.name, index: true)` and `upsert(onConflict: ["name"])` go together);
    /// it still fails for another row holding the value (a unique column not in `conflict`).
    /// On PostgreSQL the insert is attempted first, so an upsert that updates still takes
    /// a value of the id sequence: ids have gaps.
    /// - Returns: ``UpsertOutcome/inserted`` or ``UpsertOutcome/updated``.
    /// - Throws: `.misuse` when no unique index covers exactly the `conflict` columns (with
    ///   the fix), `.unknownColumn`, `.validationFailed`, the engine's error. Nothing is
    ///   written on error.
    @discardableResult
    public func upsert(onConflict conflict: [String], updating: [String]? = nil) throws -> UpsertOutcome {
        try Self.upsertAll([self], onConflict: conflict, updating: updating)[0]
    }
}

extension ModelClassMethods where Self: Model {
    /// The declared column indexes of an upsert's conflict and update columns.
    private static func upsertColumns(_ mapping: ModelMapping, _ conflict: [String], _ updating: [String]?) throws -> ([Int], [Int]) {
        guard !conflict.isEmpty else {
            throw ActiveRecordError(.misuse, "upsert: name the columns of a unique index in onConflict:")
        }
        let conflictColumns = try conflict.map { try mapping.columnIndex($0) }
        let updateColumns = try updating.map { try $0.map { try mapping.columnIndex($0) } }
            ?? mapping.table.schema.columns.indices.filter { !conflictColumns.contains($0) }
        return (conflictColumns, updateColumns)
    }
}

extension Array where Element == Model {
    /// The records as an array of their class, `Record`, which every one of them is (made by
    /// `Record()`), without a cast per element: arrays of class references share a layout.
    package func asRecords<Record: Model>(of type: Record.Type) -> [Record] {
        unsafeBitCast(self, to: [Record].self)
    }
}

extension Array where Element: Model {
    /// The records as `Model`s, without a cast per element (the inverse of `asRecords(of:)`).
    package var asModels: [Model] { unsafeBitCast(self, to: [Model].self) }
}
