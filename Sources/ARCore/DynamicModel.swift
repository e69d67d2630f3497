#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A model defined at run time from a ``TableSchema``, with no Swift class:
/// what the C API builds on. It shares the engine with ``Model``.
///
/// ```swift
/// let notes = DynamicModel(try TableSchema(name: "Note", columns: [
///     ColumnSchema(name: "title", type: .text),
/// ]))
/// let note = notes.makeRecord()
/// try note.set("title", .text("Buy milk"))
/// try note.save()
/// let again = try notes.find(note.id!)
/// ```
public final class DynamicModel: Sendable {
    /// The table this model reads and writes.
    public let schema: TableSchema
    package let table: TableOperations
    /// Per declared column, what ``DynamicRecord/set(at:_:)`` checks: its type and whether
    /// it takes `NULL`; and the values a new record starts with.
    package let columnTypes: [SQLType]
    package let columnNullability: [Bool]
    let defaultValues: [DatabaseValue]
    /// ``defaultValues`` as a new record's slots start: copied whole when no default has
    /// text or bytes (the common case), else value by value. Immutable; freed with the model.
    nonisolated(unsafe) let defaultSlots: UnsafeMutablePointer<OwnedValue>
    let defaultsHaveBytes: Bool
    /// The bytes a record allocates with its slots for its text and blobs (see ``ByteArena``):
    /// 32 per text or blob column, enough for most short values.
    let arenaSize: Int
    /// The validations a save runs (see ``validationHook``), set at any time.
    private let validation = Lock<(any DynamicValidationHook)?>(nil)
    /// Whether ``validation`` holds any, read without the lock on every save.
    private let validates = Atomic<Bool>(false)

    /// Makes a model for `schema`. A column that ``ColumnSchema/references`` a table needs
    /// that table to exist before records are written (SQLite's foreign keys).
    public convenience init(_ schema: TableSchema) {
        self.init(schema, parents: { [] })
    }

    /// A model whose referenced tables are other models' (the C API's belongs-to), which
    /// automatic migration creates first.
    package init(_ schema: TableSchema, parents: @escaping @Sendable () throws -> [TableOperations]) {
        self.schema = schema
        table = TableOperations(schema: schema, parents: parents)
        columnTypes = schema.columns.map(\.type)
        columnNullability = schema.columns.map(\.isNullable)
        defaultValues = schema.columns.map(\.defaultValue)
        defaultSlots = .allocate(capacity: defaultValues.count)
        var malloced = ByteArena(nil, count: 0)
        for (index, value) in defaultValues.enumerated() {
            (defaultSlots + index).initialize(to: OwnedValue(value, into: &malloced))
        }
        arenaSize = 32 * columnTypes.count { $0 == .text || $0 == .blob }
        defaultsHaveBytes = defaultValues.indices.contains { [defaultSlots] in defaultSlots[$0].hasBytes }
    }

    /// The validations a save of a record of this model runs, as a model class's
    /// ``_ValidationHook``: ARValidation's `Validations` implements the hook, and the C API
    /// sets it when C declares a validation (at any time). `nil`: none, and a save goes
    /// straight to the table.
    package var validationHook: (any DynamicValidationHook)? {
        get {
            guard hasValidations else { return nil }
            return validation.withLock { $0 }
        }
        set {
            validation.withLock { $0 = newValue }
            validates.store(newValue != nil, ordering: .releasing)
        }
    }

    /// Whether ``validationHook`` is set (without taking its lock).
    @inline(__always)
    package var hasValidations: Bool { validates.load(ordering: .acquiring) }

    deinit {
        for index in defaultValues.indices { defaultSlots[index].release() }
        defaultSlots.deallocate()
    }

    /// Makes a new, unsaved record holding the columns' default values.
    public func makeRecord() -> DynamicRecord { DynamicRecord(model: self) }

    /// A record to decode a row into (its values are all set by the decoding).
    package func recordForDecoding() -> DynamicRecord { DynamicRecord(decodingFor: self) }

    private func fetch(
        _ sql: @autoclosure () -> String, key: StatementKey.Kind? = nil, _ arguments: [DatabaseValue] = []
    ) throws -> [DynamicRecord] {
        try Database.current.withReader(table) { connection in
            try table.fetch(sql(), key: key, arguments, in: connection) { DynamicRecord(decodingFor: self) }
        }
    }

    /// Every record, in id order.
    public func all() throws -> [DynamicRecord] { try fetch(table.allSQL, key: .all) }

    /// The record with this id, or `nil`.
    public func find(_ id: Int64) throws -> DynamicRecord? {
        try fetch(table.findSQL, key: .find, [.integer(id)]).first
    }

    /// The record with this primary key value (an integer, or the text of a `UUID` or
    /// `String` key), or `nil`.
    public func find(key: DatabaseValue) throws -> DynamicRecord? {
        try fetch(table.findSQL, key: .find, [key]).first
    }

    /// Every record whose `column` equals `value` (`IS NULL` for `.null`), in id order.
    /// - Throws: `.unknownColumn`.
    public func all(where column: String, equals value: DatabaseValue) throws -> [DynamicRecord] {
        let (condition, arguments) = try table.condition(column, value)
        let sql = try Database.current.dialect.selectSQL(
            schema.selectedColumns, from: schema.name, where: [condition], order: [.ascending(schema.primaryKey.name)],
            limitOne: false)
        return try fetch(sql, key: nil, arguments)
    }

    /// The number of records.
    public func count() throws -> Int {
        try Database.current.withReader(table) { connection in
            let sql = connection.dialect.selectSQL([.count], from: schema.name, where: [], order: [], limitOne: false)
            return try connection.withStatement(sql) { statement in
                try statement.step() ? Int(statement.int64(0)) : 0
            }
        }
    }

    /// Destroys every record (`DELETE FROM "T"`: a run-time model has no callbacks or
    /// dependencies). Records in memory are not marked destroyed.
    /// - Returns: how many rows were deleted.
    @discardableResult
    public func destroyAll() throws -> Int {
        try Database.current.withWriter(table) { connection in
            try connection.execute(connection.dialect.deleteSQL(from: schema.name, where: []))
            connection.noteChange(schema.name)
            return connection.changedRowCount
        }
    }
}

extension DynamicModel {
    /// Inserts new records of this model as `Model.insertAll` does, in one transaction
    /// (the caller's, or one of its own), and gives each its id and timestamps: the C API's
    /// `ar_record_insert_all`. The model's validations (those the C API declares) run first,
    /// for every record; SQL only otherwise (no callbacks), as a model class's `insertAll`.
    /// - Throws: `.misuse` for a record of another model or one that is not new;
    ///   `.validationFailed` for the first invalid record (its position in the message); the
    ///   engine's error. Nothing is inserted on error, and the records are new again.
    public func insertAll(_ records: [DynamicRecord]) throws {
        guard !records.isEmpty else { return }
        for (index, record) in records.enumerated() where record.model.table !== table || !record.isNewRecord || record.isDestroyed {
            throw ActiveRecordError(.misuse, "insertAll: record \(index + 1) is not a new record of \(table.schema.name)")
        }
        try RecordLifecycle.insertAll(records, into: table, validates: hasValidations)
    }
}

/// The validation step of a ``DynamicModel``'s save, as ``_ValidationHook`` is a model
/// class's: ARValidation's `Validations` implements it, and the core calls it.
package protocol DynamicValidationHook: Sendable {
    /// The validations of `record` that fail, in declaration order.
    /// - Parameters:
    ///   - changedColumns: a saved record's changed columns (uniqueness runs only on those);
    ///     `nil` for a new record.
    ///   - uniquenessOnly: only the uniqueness validations (after a unique index refused a write).
    ///   - upsertConflict: the conflict columns of an upsert about to write the record; empty for a save.
    func failures(
        of record: DynamicRecord, changedColumns: Set<String>?, uniquenessOnly: Bool, upsertConflict: [String]
    ) throws -> [ValidationFailure]
}

/// A run-time model's record in the record lifecycle (``RecordLifecycle``): its model's
/// validations (``DynamicModel/validationHook``), no callbacks and no relation hooks.
extension DynamicRecord: LifecycleRecord {
    package var lifecycleModelName: String { model.schema.name }

    package var lifecycleErrors: [ValidationFailure] {
        get { errors }
        set { errors = newValue }
    }

    package func lifecycleValidate(_ scope: ValidationScope) throws -> Bool {
        guard let hook = model.validationHook else { return true }
        switch scope {
        case .save(let changedColumns):
            errors = try hook.failures(of: self, changedColumns: changedColumns, uniquenessOnly: false, upsertConflict: [])
        case .upsert(let conflict):
            errors = try hook.failures(of: self, changedColumns: nil, uniquenessOnly: false, upsertConflict: conflict)
        }
        return errors.isEmpty
    }

    package func lifecycleUniquenessFailures(changedColumns: Set<String>?) throws -> [ValidationFailure] {
        try model.validationHook?.failures(of: self, changedColumns: changedColumns, uniquenessOnly: true, upsertConflict: []) ?? []
    }
}
