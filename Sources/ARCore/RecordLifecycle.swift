/// What the record lifecycle asks of a kind of record: a ``Model`` (its class's callbacks,
/// validations and relation hooks) or a ``DynamicRecord`` (its model's validations, the C
/// API's). The steps and their order live in ``RecordLifecycle``; a conformance only says
/// what each step means for its kind of record.
package protocol LifecycleRecord: RecordStorage {
    /// The model's name in a `.validationFailed` error (`User is invalid: …`).
    var lifecycleModelName: String { get }
    /// The failures of the record's last validation (``Model/errors``).
    var lifecycleErrors: [ValidationFailure] { get set }
    /// Runs the record's validations for `scope`, keeping the failures in ``lifecycleErrors``.
    /// - Returns: whether the record is valid (`true` when its model has no validations).
    func lifecycleValidate(_ scope: ValidationScope) throws -> Bool
    /// After a unique index refused the record's write: the uniqueness validations that fail
    /// now (a concurrent saver won the race), as `already_exists` failures; empty when none does.
    func lifecycleUniquenessFailures(changedColumns: Set<String>?) throws -> [ValidationFailure]
    /// Runs the record's relation hooks before or after its table's write (none for a run-time model).
    func lifecycleRelations(_ point: RelationPoint) throws
}

extension LifecycleRecord {
    package func lifecycleRelations(_ point: RelationPoint) throws {}
}

/// Which validations a write runs.
package enum ValidationScope {
    /// A save: every validation; uniqueness only of `changedColumns` (`nil`: a new record, all).
    case save(changedColumns: Set<String>?)
    /// An upsert on the `conflict` columns: every validation, as for a new record, except that
    /// uniqueness does not count the row the upsert would update.
    case upsert(conflict: [String])
}

/// Where in a save the relation hooks run.
package enum RelationPoint {
    /// Before the `INSERT` or `UPDATE`: save a pending parent and set the key.
    case beforeWrite
    /// After it: save queued children with the record's id.
    case afterWrite
}

/// What one save of a record runs beyond its table's write, decided by its kind of record
/// before the lifecycle starts (a record that needs none of it is written straight to its table).
package struct SavePlan {
    /// The table the record is written to.
    package let table: TableOperations
    /// Whether validations run (before the write, and to explain a unique violation after it).
    package let validates: Bool
    /// The record as its callbacks, when its class has them.
    package let callbacks: (any Callbacks)?
    /// Whether relation hooks run (``LifecycleRecord/lifecycleRelations(_:)``).
    package let hasRelations: Bool
    /// Whether a relation has work queued, so that the save runs with no column changed.
    package let hasPendingWork: Bool

    package init(
        table: TableOperations, validates: Bool, callbacks: (any Callbacks)? = nil, hasRelations: Bool = false, hasPendingWork: Bool = false
    ) {
        self.table = table
        self.validates = validates
        self.callbacks = callbacks
        self.hasRelations = hasRelations
        self.hasPendingWork = hasPendingWork
    }
}

/// The one record lifecycle: what `Model.save()`, `insertAll`/`upsertAll`, ``DynamicRecord``'s
/// save and ``DynamicModel/insertAll(_:)`` (the C API's `ar_record_save` and
/// `ar_record_insert_all`) run around their table's write, in one place:
///
/// * a save: nothing when nothing is to be written; else, in one transaction (or savepoint),
///   `beforeValidation` → validations → `afterValidation` → `beforeSave` →
///   `beforeCreate`/`beforeUpdate` → relations before → the table's `INSERT` or `UPDATE` →
///   relations after → `afterCreate`/`afterUpdate` → `afterSave`; a unique violation that a
///   uniqueness validation explains (checked after the rollback) becomes that validation's
///   failure;
/// * a batch (SQL only, as Rails' `insert_all`: no callbacks, no relation hooks): in one
///   transaction, every record's validations (the first invalid one fails the batch, its
///   position in the message), then the table's batch write.
///
/// The write itself is the table's (``TableOperations``): the undo log that puts records back
/// as they were when the transaction rolls back, and the optimistic lock version.
package enum RecordLifecycle {
    /// Saves `record` with the steps of `plan` (its kind of record decided it needs them).
    /// - Throws: what ``TableOperations/save(_:)`` throws; `.validationFailed` with the
    ///   failures, which the record keeps too; a callback's or relation's error. The record
    ///   is unchanged on error.
    package static func save<Record: LifecycleRecord>(_ record: Record, _ plan: SavePlan) throws {
        let table = plan.table
        guard !record.header.isDestroyed else { return try table.save(record) }  // throws the error for a destroyed record
        let isNew = record.header.id == nil
        let changed = table.changedColumns(of: record)
        guard isNew || !changed.isEmpty || plan.hasPendingWork else { return }  // nothing to write: no SQL, no callbacks
        let changedNames = isNew ? nil : Set(changed.map { table.schema.columns[$0].name })
        do {
            try Database.current.transaction { try runSteps(record, plan, isNew: isNew, changedNames: changedNames) }
        } catch let error as ActiveRecordError where error.isUniqueViolation && plan.validates {
            // A concurrent saver won the race at a unique index (or a callback changed the
            // value after validation): the uniqueness validations that now fail say which.
            // Checked once the save's transaction (or savepoint) has rolled back: on an engine
            // where a failed statement aborts the transaction, nothing more runs inside it.
            guard let failures = try? record.lifecycleUniquenessFailures(changedColumns: changedNames), !failures.isEmpty else {
                throw error
            }
            record.lifecycleErrors = failures
            throw ActiveRecordError.validationFailed(record.lifecycleModelName, failures)
        }
    }

    /// The steps of a save, in Rails' order, inside the transaction that ``save(_:_:)`` opened.
    private static func runSteps<Record: LifecycleRecord>(
        _ record: Record, _ plan: SavePlan, isNew: Bool, changedNames: Set<String>?
    ) throws {
        let callbacks = plan.callbacks
        if plan.validates {
            try callbacks?.beforeValidation()
            guard try record.lifecycleValidate(.save(changedColumns: changedNames)) else {
                throw ActiveRecordError.validationFailed(record.lifecycleModelName, record.lifecycleErrors)
            }
            try callbacks?.afterValidation()
        }
        try callbacks?.beforeSave()
        try isNew ? callbacks?.beforeCreate() : callbacks?.beforeUpdate()
        if plan.hasRelations { try record.lifecycleRelations(.beforeWrite) }
        try plan.table.save(record)  // a unique violation is explained by save(_:_:), after the rollback
        if plan.hasRelations { try record.lifecycleRelations(.afterWrite) }
        try isNew ? callbacks?.afterCreate() : callbacks?.afterUpdate()
        try callbacks?.afterSave()
        if let callbacks { try Database.current.withConnection { $0.awaitOutcome(callbacks) } }
    }

    /// Inserts new records (the caller checked that they are) in one transaction: every
    /// record's validations first when `validates`, then the table's batch `INSERT`
    /// (``TableOperations/insertAll(_:in:)``). Nothing is inserted on error, and the records are new again.
    package static func insertAll<Record: LifecycleRecord>(_ records: [Record], into table: TableOperations, validates: Bool) throws {
        let database = try Database.current
        try database.transaction {
            if validates { try validateAll(records, .save(changedColumns: nil)) }
            try database.withWriter(table) { try table.insertAll(records, in: $0) }
        }
    }

    /// Inserts or updates records on the `conflict` columns (declared column indexes of a
    /// unique index, which it checks) in one transaction with one prepared statement: every
    /// record's validations first when `validates`, then the table's batch upsert.
    /// - Returns: what the upsert did with each record, in order.
    package static func upsertAll<Record: LifecycleRecord>(
        _ records: [Record], into table: TableOperations, conflict: [Int], updating: [Int], validates: Bool
    ) throws -> [UpsertOutcome] {
        let database = try Database.current
        var outcomes: [UpsertOutcome] = []
        try database.transaction {
            if validates { try validateAll(records, .upsert(conflict: conflict.map { table.schema.columns[$0].name })) }
            try database.withWriter(table) { connection in
                try requireUniqueIndex(conflict, of: table, on: connection)
                outcomes = try table.upsert(records, conflict: conflict, updating: updating, in: connection)
            }
        }
        return outcomes
    }

    /// Runs every record's validations; the first invalid record fails the batch, with its
    /// position in the message and its failures kept by the record.
    private static func validateAll<Record: LifecycleRecord>(_ records: [Record], _ scope: ValidationScope) throws {
        for (position, record) in records.enumerated() {
            guard try !record.lifecycleValidate(scope) else { continue }
            var error = ActiveRecordError.validationFailed(record.lifecycleModelName, record.lifecycleErrors)
            error.message = "record \(position + 1) of \(records.count): \(error.message)"
            throw error
        }
    }

    /// Refuses an upsert whose conflict columns are not exactly a unique index's (the engines
    /// would refuse it too, in words that do not say what to do).
    private static func requireUniqueIndex(_ columns: [Int], of table: TableOperations, on connection: Connection) throws {
        let schema = table.schema
        if columns.count == 1, schema.columns[columns[0]].index == .unique || columns[0] == table.keyIndex { return }
        let names = Set(columns.map { schema.columns[$0].name })
        let indexes = try connection.dialect.indexes(of: schema.name, connection)
        if indexes.contains(where: { $0.isUnique && !$0.isPartial && Set($0.columns) == names }) { return }
        let list = columns.map { schema.columns[$0].name }.joined(separator: ", ")
        throw ActiveRecordError(
            .misuse,
            "upsert on \(list): \(schema.name) has no unique index over exactly these columns; "
                + (columns.count == 1 ? "declare @Column(index: .unique)" : "add a unique index over them (a migration step)"))
    }
}
