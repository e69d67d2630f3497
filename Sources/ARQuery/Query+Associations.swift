@_spi(Engines) import ARCore

/// Owners filtered and ordered by their children, in the owners' one statement: each is a
/// correlated subquery on the children's key column (see the Relations article, "Owners by
/// their children").
extension Query {
    // MARK: Filtering by the children

    /// Keeps the owners that have at least one child in `relation` (within its scope):
    /// `WHERE EXISTS (SELECT 1 FROM … "User"."groupId" = "Group"."id")`, in the same statement.
    ///
    /// ```swift
    /// let groupsWithUsers = try Group.query().whereExists(\.users).fetch()
    /// ```
    /// - Parameter relation: a `@HasMany` or `@HasManyThrough` property of the owner.
    /// - Note: the terminal call throws `.misuse` when `relation` is not a relation of `Record`.
    public consuming func whereExists<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Query<Child>>) -> Query {
        adding(Self.subquery(relation) { $0.exists(negated: false) })
    }

    /// Keeps the owners with at least one child in `relation` that meets `condition`.
    ///
    /// ```swift
    /// let groupsWithAnAdult = try Group.query().whereExists(\.users, \.age >= 18).fetch()
    /// ```
    public consuming func whereExists<Child: Model>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ condition: KeyPathCondition<Child>
    ) -> Query {
        adding(Self.subquery(relation) { $0.exists(negated: false, children: $0.children.where(condition)) })
    }

    /// Keeps the owners with at least one child in `relation` that the child query `filter`
    /// makes (from the relation's children) returns: conditions in any form.
    ///
    /// ```swift
    /// let groups = try Group.query().whereExists(\.users) { $0.where("name LIKE %@", "J%") }.fetch()
    /// ```
    /// - Note: `filter` may add conditions only (and orderings, which do not matter here); a
    ///   limit, a join or a grouping makes the terminal call throw `.misuse`.
    public consuming func whereExists<Child: Model>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ filter: (Query<Child>) -> Query<Child>
    ) -> Query {
        adding(Self.subquery(relation) { $0.exists(negated: false, children: filter($0.children)) })
    }

    /// Keeps the owners that have no child in `relation` (within its scope): `NOT EXISTS (…)`.
    ///
    /// ```swift
    /// let emptyGroups = try Group.query().whereNotExists(\.users).fetch()
    /// ```
    public consuming func whereNotExists<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Query<Child>>) -> Query {
        adding(Self.subquery(relation) { $0.exists(negated: true) })
    }

    /// Keeps the owners with no child in `relation` that meets `condition`.
    ///
    /// ```swift
    /// let groupsWithoutAdults = try Group.query().whereNotExists(\.users, \.age >= 18).fetch()
    /// ```
    public consuming func whereNotExists<Child: Model>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ condition: KeyPathCondition<Child>
    ) -> Query {
        adding(Self.subquery(relation) { $0.exists(negated: true, children: $0.children.where(condition)) })
    }

    /// Keeps the owners with no child in `relation` that the child query `filter` makes returns.
    public consuming func whereNotExists<Child: Model>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ filter: (Query<Child>) -> Query<Child>
    ) -> Query {
        adding(Self.subquery(relation) { $0.exists(negated: true, children: filter($0.children)) })
    }

    /// Keeps the owners whose number of children in `relation` (within its scope) meets
    /// `count`: `WHERE (SELECT count(*) FROM … ) > ?`, the value bound. An owner without
    /// children counts 0 (`.lessThan(2)` keeps it).
    ///
    /// ```swift
    /// let bigGroups = try Group.query().havingCount(\.users, .greaterThan(2)).fetch()
    /// let pairs = try Group.query().havingCount(\.users, .equal(2)).fetch()
    /// ```
    /// - Parameters:
    ///   - relation: a `@HasMany` or `@HasManyThrough` property of the owner.
    ///   - count: the condition on the number: `.equal`, `.greaterThan`, `.between`, `.in`, ….
    public consuming func havingCount<Child: Model>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ count: FieldCondition
    ) -> Query {
        adding(Self.subquery(relation) { $0.count(count) })
    }

    // MARK: Ordering by the children

    /// Orders the owners by their number of children in `relation` (within its scope), after
    /// the orderings given before: `ORDER BY (SELECT count(*) FROM …) DESC`.
    ///
    /// ```swift
    /// let largestFirst = try Group.query().order(byCount: \.users, ascending: false).order(by: "title").fetch()
    /// ```
    public consuming func order<Child: Model>(
        byCount relation: ReferenceWritableKeyPath<Record, Query<Child>>, ascending: Bool = true
    ) -> Query {
        ordering(Self.subquery(relation) { $0.aggregate(.count, of: nil) }, ascending: ascending)
    }

    /// Orders the owners by the sum of a column over their children in `relation` (0 for none).
    ///
    /// ```swift
    /// let oldestTeamsFirst = try Group.query().order(bySum: \.users, \.age, ascending: false).fetch()
    /// ```
    public consuming func order<Child: Model, Value: NumericColumnValue>(
        bySum relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>, ascending: Bool = true
    ) -> Query {
        ordering(Self.subquery(relation) { $0.aggregate(.sum, of: try KeyPathColumns.columnName(column)) }, ascending: ascending)
    }

    /// Keeps the owners that have (or, `negated`, have not) a child in the relation that
    /// `association` describes: for a relation that ARRelations resolves itself (a has-one),
    /// whose error, if any, the terminal call throws.
    package consuming func whereExists<Child: Model>(
        _ association: () throws -> AssociationDescription<Child>, negated: Bool
    ) -> Query {
        do {
            return adding(try association().exists(negated: negated))
        } catch {
            return adding(.failed(error as? ActiveRecordError ?? ActiveRecordError(.misuse, "\(error)")))
        }
    }

    // MARK: Adding

    /// This query with a condition on its owners' children.
    private consuming func adding(_ condition: SubqueryClause) -> Query {
        with { $0.clauses.subqueryConditions.append(condition) }
    }

    /// This query with an ordering by its owners' children, after the orderings given before.
    private consuming func ordering(_ clause: SubqueryClause, ascending: Bool) -> Query {
        with { state in
            state.clauses.subqueryOrderings.append(
                SubqueryOrdering(position: state.clauses.orderings.count, clause: clause, ascending: ascending))
        }
    }
}
