#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A model class's part in the record lifecycle (``RecordLifecycle``): its validations
/// (``_ValidationHook``, which ARValidation's `Validating` implements), its ``errors`` and its
/// relation hooks (``RecordHookField``).
extension Model: LifecycleRecord {
    package var lifecycleModelName: String { ModelMapping.modelName(type(of: self)) }

    package var lifecycleErrors: [ValidationFailure] {
        get { errors }
        set { errors = newValue }
    }

    package func lifecycleValidate(_ scope: ValidationScope) throws -> Bool {
        guard let validating = self as? any _ValidationHook else { return true }
        switch scope {
        case .save(let changedColumns): return try validating.runValidations(changedColumns: changedColumns)
        case .upsert(let conflict): return try validating.runValidations(upsertingOn: conflict)
        }
    }

    package func lifecycleUniquenessFailures(changedColumns: Set<String>?) throws -> [ValidationFailure] {
        guard let validating = self as? any _ValidationHook else { return [] }
        return try validating.uniquenessFailures(changedColumns: changedColumns)
    }

    package func lifecycleRelations(_ point: RelationPoint) throws {
        try withMapping { mapping in
            switch point {
            case .beforeWrite: for hook in mapping.hooks { try hook.kind.willSave(in: self, at: hook.offset) }
            case .afterWrite: for hook in mapping.hooks { try hook.kind.didSave(in: self, at: hook.offset) }
            }
        }
    }
}

extension Model {
    /// Sets columns by name, as a dictionary. Nothing is set when one fails.
    /// - Throws: `.unknownColumn` or `.typeMismatch`, naming the column.
    public func set(_ values: [String: (any ColumnValue)?]) throws {
        let mapping = try mapping()
        var resolved: [(Int, DatabaseValue)] = []
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            let index = try mapping.columnIndex(name)
            resolved.append((index, try value?.toSQL() ?? .null))
        }
        let saved = try resolved.map { index, _ in try currentValue(index) }
        do {
            for (index, value) in resolved {
                do {
                    try assignColumn(index, value)
                } catch let error as ActiveRecordError {
                    throw ActiveRecordError(
                        error.code, "\(mapping.table.schema.name).\(mapping.table.schema.columns[index].name): \(error.message)")
                }
            }
        } catch {
            for ((index, _), value) in zip(resolved, saved) { try? assignColumn(index, value) }
            throw error
        }
    }

    /// A column's current value, by column (or property) name.
    /// - Throws: `.unknownColumn`.
    public func value(of column: String) throws -> DatabaseValue {
        switch column {
        case "id": return primaryKeyValue
        case "createdAt": return try createdAt?.toSQL() ?? .null
        case "updatedAt": return try updatedAt?.toSQL() ?? .null
        default: return try currentValue(try mapping().columnIndex(column))
        }
    }

    /// A column's current value as a Swift value, by column (or property) name.
    ///
    /// ```swift
    /// let name = try record.value(of: "name", as: String.self)
    /// ```
    /// - Throws: `.unknownColumn`; `.typeMismatch` when the value does not fit `type`.
    public func value<Value: ColumnValue>(of column: String, as type: Value.Type) throws -> Value {
        try Value.fromSQL(value(of: column))
    }

    /// Saves the record: `INSERT` when new, else an `UPDATE` of only the
    /// changed columns (and `updatedAt`); no SQL at all when nothing changed.
    ///
    /// The table is created on first use when automatic migrations are on.
    /// - Throws: `.constraint` (unique index), `.invalidValue` (a value that
    ///   cannot be stored), `.notFound` (the row was deleted elsewhere),
    ///   `.misuse` (the record was destroyed). The record is unchanged on error.
    public func save() throws {
        // Without callbacks, validations or relation work: straight to the table (`nil`). The
        // closure returns no more than that flag: a plan made in it costs the straight path too.
        let pendingHookWork: Bool? = try withMapping { mapping in
            let pending = mapping.hooks.contains { $0.kind.hasPendingWork(in: self, at: $0.offset) }
            guard mapping.hasLifecycle || pending, !header.isDestroyed else {
                try mapping.table.save(self)  // also throws the error for a destroyed record
                return nil
            }
            return pending
        }
        guard let pending = pendingHookWork else { return }
        let mapping = try mapping()
        let plan = SavePlan(
            table: mapping.table, validates: mapping.validates, callbacks: mapping.hasCallbacks ? self as? any Callbacks : nil,
            hasRelations: !mapping.hooks.isEmpty, hasPendingWork: pending)
        try RecordLifecycle.save(self, plan)
    }

    /// Destroys the record: runs its `beforeDestroy` callback and its relations'
    /// dependencies, deletes its row (`DELETE FROM "T" WHERE "id" = ?`), then runs
    /// `afterDestroy`, all in one savepoint: if any step fails, nothing is deleted.
    ///
    /// Dependencies: a has-many or has-many-through with `.destroy` destroys the related
    /// records (each with its own dependencies), with `.nullify` clears their keys (or
    /// deletes the join rows); a belongs-to with `.destroy` destroys the parent. A record
    /// reached twice by a cascade is destroyed once. (The seeds' `dropRecord`.)
    /// - Throws: `.misuse` for a new or already destroyed record; `.notFound`
    ///   when the row was deleted elsewhere (the record counts as destroyed).
    public func destroy() throws {
        // Without callbacks or dependencies (or new, or destroyed: the table says so): straight
        // to the table.
        let deleted = try withMapping { mapping in
            guard mapping.hasDestroyLifecycle, header.id != nil, !header.isDestroyed else {
                try deleteRow(mapping)
                return true
            }
            return false
        }
        if deleted { return }
        let mapping = try mapping()
        let id = header.id.unsafelyUnwrapped
        let database = try Database.current
        let key = DestroyKey(
            table: mapping.table.schema.name, id: id, key: mapping.table.keyIndex == nil ? .null : try mapping.table.keyValue(of: self, id: id))
        let callbacks = mapping.hasCallbacks ? self as? any Callbacks : nil
        try database.transaction {
            // Inside the transaction this thread holds the connection, so the set is ours.
            let (first, cascading) = try database.withConnection { connection in
                (connection.destroyingRecords.insert(key).inserted, connection.destroyingRecords.count > 1)
            }
            guard first else { return }
            defer { try? database.withConnection { _ = $0.destroyingRecords.remove(key) } }
            try callbacks?.beforeDestroy()
            for hook in mapping.hooks { try hook.kind.willDestroy(in: self, at: hook.offset) }
            do {
                try mapping.table.delete(self)
            } catch let error as ActiveRecordError where error.code == .notFound && cascading {
                return  // deleted earlier in the same cascade
            }
            try callbacks?.afterDestroy()
            if let callbacks { try database.withConnection { $0.awaitOutcome(callbacks) } }
        }
    }

    /// Deletes the record's row without callbacks or dependencies.
    @inline(__always)
    private func deleteRow(_ mapping: ModelMapping) throws {
        do {
            try mapping.table.delete(self)
        } catch let error as ActiveRecordError where error.code == .notFound {
            // Deleted earlier in the cascade that destroys it now: done already.
            let cascading = try Database.current.withConnection { !$0.destroyingRecords.isEmpty }
            if cascading { return }
            throw error
        }
    }

    /// Reads the record's row again, discarding unsaved changes.
    /// - Throws: `.notFound` when the record is new, destroyed or deleted elsewhere.
    public func reload() throws { try mapping().table.reload(self) }

    /// Reads the record's row again and, with `lock`, locks it until the transaction ends, so
    /// that no other transaction changes it before this one saves it (pessimistic locking,
    /// Rails' `lock!`).
    ///
    /// ```swift
    /// try db.transaction {
    ///     try account.reload(lock: true)      // SELECT … FOR UPDATE on PostgreSQL
    ///     account.balance -= 10
    ///     try account.save()
    /// }
    /// ```
    /// On PostgreSQL the row is read with `FOR UPDATE` (another transaction locking or
    /// changing it waits); on SQLite the transaction holds the database's write lock already.
    /// - Throws: `.misuse` with `lock` outside a transaction (the lock would end at once);
    ///   `.notFound` when the record is new, destroyed or deleted elsewhere.
    public func reload(lock: Bool) throws { try mapping().table.reload(self, locking: lock) }
}
