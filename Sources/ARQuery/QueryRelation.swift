@_spi(Engines) import ARCore

/// What a relation query (`group.users`) knows beyond its SQL: its owner and
/// how to add and remove records. `ARRelations` implements it.
package protocol QueryRelation {
    /// Records to answer with instead of running SQL: those queued on an
    /// unsaved owner, or those eager-loaded. `nil`: run the query.
    func recordsInMemory<Record: Model>(as type: Record.Type) -> [Record]?
    /// Relates `record` to the owner (saved at once, or queued until the owner is saved).
    func add(_ record: Model) throws
    /// Ends the relation between `record` and the owner.
    func remove(_ record: Model) throws
    /// Loads this relation for every owner in `owners` with one query.
    func preload(_ owners: [Model]) throws
}

extension Query {
    /// Relates `record` to the owner of this relation query: `group.users.add(user)`.
    ///
    /// With a saved owner the change is saved at once (the child's key is set
    /// and the child saved; for has-many-through, a join row is created unless
    /// the pair exists). With an unsaved owner it is queued and saved by the
    /// owner's `save()`.
    /// - Throws: `.misuse` on a query that is not a relation; what saving throws.
    public func add(_ record: Record) throws {
        guard let relation else {
            throw ActiveRecordError(.misuse, "add(_:) works on a relation, such as group.users; this query has none")
        }
        try relation.add(record)
    }

    /// Ends the relation between `record` and the owner: clears the child's key
    /// and saves it (has-many), or deletes the join row (has-many-through).
    /// - Throws: `.misuse` on a query that is not a relation; what saving throws.
    public func remove(_ record: Record) throws {
        guard let relation else {
            throw ActiveRecordError(.misuse, "remove(_:) works on a relation, such as group.users; this query has none")
        }
        try relation.remove(record)
    }

    /// This query as the relation of an owner, answering from memory when it can.
    package func related(by relation: any QueryRelation) -> Query {
        var copy = self
        copy.relation = relation
        copy.isPristine = true
        return copy
    }

    /// The query of `relation`'s records, those whose key column holds `id` (`"key" = id`):
    /// the query `where(key, .equal(id)).related(by: relation)` makes, built from a condition
    /// made once for the relation (``RelationKeyCondition``), with no field-tree look-up and
    /// no conversion of the id through `ColumnValue`. A relation's getter makes one per owner.
    package init(relation: any QueryRelation, where condition: RelationKeyCondition, equals id: Int64) {
        self.init()
        state.clauses.add(.field(condition.key, arguments: QueryArgument.Sources(.converted(.value(.integer(id))))))
        state.relation = relation
        state.isPristine = true
    }

    /// `where(key, .in(ids))` on a relation's key column (a preload's query for a chunk of its
    /// owners' ids): the ids bound as one list, made without a `ColumnValue` existential and
    /// conversion per id.
    package consuming func `where`(_ condition: RelationKeyCondition, in ids: [Int64]) -> Query {
        let key = FieldTree.Key(form: .list(negated: false), column: condition.column, qualifier: nil)
        let arguments = QueryArgument.Sources(.converted(.list(ids.map { .integer($0) })))
        return with { $0.clauses.add(.field(key, arguments: arguments)) }
    }

    /// Adds work to run on the fetched records (eager loading).
    package func preloading(_ preload: @escaping ([Record]) throws -> Void) -> Query {
        with { $0.preloaders.append { records in try preload(records.asRecords(of: Record.self)) } }
    }

    /// The records in memory, when this is an unchanged relation query that has them.
    var recordsInMemory: [Record]? {
        guard isPristine else { return nil }
        return relation?.recordsInMemory(as: Record.self)
    }
}

/// A relation's condition on its key column, `"key" = ?`, made once for the relation (its
/// owner class and property) and shared by the queries of all its owners: see
/// ``Query/init(relation:where:equals:)``. Immutable, so threads may share it.
package struct RelationKeyCondition: Sendable {
    /// The key column.
    package var column: String { key.column }
    /// The condition `where(column, .equal(…))` adds.
    let key: FieldTree.Key

    package init(column: String) {
        key = FieldTree.Key(form: .comparison(.equal), column: column, qualifier: nil)
    }
}
