@_spi(Engines) import ARCore

/// A to-many relation as the queries of its owners see it: ARRelations' relations describe
/// themselves with it, so that `whereExists(\.users)`, `withCount(\.users)` and the like can
/// write SQL about each owner's children without knowing the relation's kind.
package protocol AssociationDescribing {
    /// The relation, if its children are `Child`s.
    func association<Child: Model>(of type: Child.Type) -> AssociationDescription<Child>?
}

/// What a query of owners needs to know about a to-many relation (see ``AssociationDescribing``).
package struct AssociationDescription<Child: Model> {
    /// Every owner's children: the relation's scope applied, without any owner's condition.
    package var children: Query<Child>
    /// The column that holds the owner's id.
    package var key: String
    /// The join model of a has-many-through, which holds ``key`` and the child's id in
    /// `childKey`; `nil`: the children hold ``key``.
    package var through: (model: Model.Type, childKey: String)?

    package init(children: Query<Child>, key: String, through: (model: Model.Type, childKey: String)? = nil) {
        self.children = children
        self.key = key
        self.through = through
    }
}

/// SQL about each owner's children that a query of owners holds (``QueryClauses/subqueryConditions``,
/// ``QueryClauses/subqueryOrderings``, an annotation's value): written when the query is
/// compiled, for the owners' table and the engine's dialect, with its values bound.
struct SubqueryClause {
    /// Writes the clause for the owners' table in `dialect`, appending its values in the order
    /// of their parameters.
    let write: (_ owners: QueryTable, _ dialect: any SQLDialect, _ values: inout [DatabaseValue]) throws -> String

    /// The clause as a `where` condition: its values become constants of the compiled shape
    /// (which is not cached: see ``QueryClauses/compilesEachTime``).
    func render(_ owners: QueryTable, _ dialect: any SQLDialect, slots: inout [ArgumentSlot]) throws -> String {
        var values: [DatabaseValue] = []
        let sql = try write(owners, dialect, &values)
        slots += values.map { .constant($0) }
        return sql
    }

    /// A clause that fails with `error` when written (a relation that could not be resolved
    /// when the query was built; the terminal call reports it).
    static func failed(_ error: ActiveRecordError) -> SubqueryClause {
        SubqueryClause { _, _, _ in throw error }
    }
}

/// An ordering by each owner's children (`order(byCount:)`): placed before the ordering at
/// ``position`` among the query's others (after them all when it is their count).
struct SubqueryOrdering {
    var position: Int
    var clause: SubqueryClause
    var ascending: Bool

    var reversed: SubqueryOrdering { SubqueryOrdering(position: position, clause: clause, ascending: !ascending) }
}

extension QueryClauses {
    /// The `ORDER BY` terms when the query has orderings by its owners' children: each in its
    /// place among the others, the values appended in order.
    func renderOrders(_ tables: [QueryTable], _ dialect: any SQLDialect, into arguments: inout [DatabaseValue]) throws -> [String] {
        var orders: [String] = []
        let subqueries = subqueryOrderings
        func addSubqueries(at position: Int) throws {
            for ordering in subqueries where ordering.position == position {
                orders.append(dialect.orderTerm(try ordering.clause.write(tables[0], dialect, &arguments), ascending: ordering.ascending))
            }
        }
        for (position, ordering) in orderings.enumerated() {
            try addSubqueries(at: position)
            orders.append(dialect.orderTerm(try renderExpression(ordering.column, tables, dialect, into: &arguments), ascending: ordering.ascending))
        }
        try addSubqueries(at: orderings.count)
        return orders
    }

    /// Why these clauses cannot be a relation's scope (or a filter on its children), or `nil`:
    /// a scope adds conditions and orderings only, which each owner's share of the children
    /// keeps (a limit would apply to all the owners' children at once).
    var scopeProblem: String? {
        if limitCount != nil || offsetCount != nil { return "limit(_:) or offset(_:)" }
        if isDistinct { return "distinct()" }
        if randomOrder { return "orderRandomly()" }
        guard hasRareClauses else { return nil }
        if selection != .all { return "only(_:) or except(_:)" }
        if !joins.isEmpty { return "join(_:)" }
        if !groupColumns.isEmpty || !havingConditions.isEmpty { return "group(by:) or having(_:)" }
        if rowLock != nil { return "lock()" }
        return nil
    }
}

extension AssociationDescription {
    /// The name of the scratch table the children's rows are read from, in a correlated subquery.
    private static var alias: String { "activerecord_children".quotedIdentifier }

    /// `SELECT <select> FROM (SELECT <key> AS "key"[, <column> AS "value"] FROM <children> WHERE
    /// <scope>) AS "activerecord_children" WHERE "activerecord_children"."key" = <owner>."id"`:
    /// the children of the owner of the outer query's row. Through the inner query, a child
    /// table that is the owners' own (a self-referencing relation) is told apart from it; the
    /// engines flatten it (SQLite and PostgreSQL both search the key's index per owner).
    ///
    /// - Parameters:
    ///   - select: the selected expression, given the value column's SQL (`count(*)`, `sum(…)`).
    ///   - column: a column of the children, for an aggregate of its values.
    ///   - filter: a condition on the children, beyond the relation's scope.
    func correlated(
        _ select: @escaping (_ dialect: any SQLDialect, _ value: String) -> String, column: String? = nil,
        children: Query<Child>? = nil
    ) -> SubqueryClause {
        let scoped = (children ?? self.children).clauses
        let key = key, through = through
        return SubqueryClause { owners, dialect, values in
            var clauses = scoped
            if let problem = clauses.scopeProblem {
                throw ActiveRecordError(
                    .misuse,
                    "a relation's scope or a filter on its children adds conditions and orderings only, not \(problem): "
                        + "it applies to each owner's children")
            }
            if let through { clauses.joins.append(QueryClauses.Join(model: through.model, kind: .inner, on: ("id", through.childKey))) }
            let childTable = try QueryTable(Child.self)
            let compiled = try clauses.compileShape(childTable, dialect: dialect, defaultsToIdOrder: false).query(clauses)
            let keyTable = try through.map { try QueryTable($0.model) } ?? childTable
            guard let keyColumn = keyTable.qualifiedColumn(key) else {
                throw ActiveRecordError(
                    .unknownColumn,
                    "\(keyTable.modelName) has no column '\(key)' for \(owners.modelName)'s relation; declare it "
                        + "(for example @BelongsTo) or name the key in the relation")
            }
            guard let ownerID = owners.qualifiedColumn("id") else {
                throw ActiveRecordError(.unknownColumn, "\(owners.modelName) has no id column for its relation to \(Child.self)")
            }
            var list = "\(keyColumn) AS \("key".quotedIdentifier)"
            let alias = Self.alias
            if let column {
                guard let valueColumn = childTable.qualifiedColumn(column) else { throw childTable.table.schema.unknownColumn(column) }
                list += ", \(valueColumn) AS \("value".quotedIdentifier)"
            }
            values += compiled.bodyArguments
            return "SELECT \(select(dialect, "\(alias).\("value".quotedIdentifier)")) FROM (SELECT \(list) \(compiled.body)) "
                + "AS \(alias) WHERE \(alias).\("key".quotedIdentifier) = \(ownerID)"
        }
    }

    /// `[NOT] EXISTS (…)`: whether the owner has children (matching `children`, when given).
    func exists(negated: Bool, children: Query<Child>? = nil) -> SubqueryClause {
        let inner = correlated({ _, _ in "1" }, children: children)
        return SubqueryClause { owners, dialect, values in
            "\(negated ? "NOT " : "")EXISTS (\(try inner.write(owners, dialect, &values)))"
        }
    }

    /// `(SELECT <aggregate>(…) …)`: one value per owner, of its children. `sum` is 0, not
    /// `NULL`, for an owner without children, as `count` is.
    func aggregate(_ function: AggregateFunction, of column: String?) -> SubqueryClause {
        let inner = correlated({ dialect, value in
            switch function {
            case .count: "count(*)"
            case .sum: "coalesce(\(dialect.aggregate("sum", value)), 0)"
            default: dialect.aggregate(function.rawValue, value)
            }
        }, column: column)
        return SubqueryClause { owners, dialect, values in "(\(try inner.write(owners, dialect, &values)))" }
    }

    /// `(SELECT count(*) …) <condition>`: the number of the owner's children, compared with
    /// ``FieldCondition``'s values (bound).
    func count(_ condition: FieldCondition) -> SubqueryClause {
        let count = aggregate(.count, of: nil)
        let node = FieldTree.make(condition.form, on: "count", of: nil)
        let sources = condition.arguments
        return SubqueryClause { owners, dialect, values in
            let expression = try count.write(owners, dialect, &values)
            let arguments = try sources.map { try $0.converted() }
            var renderer = PredicateRenderer(
                resolveColumn: { _, _, _ in expression },
                shape: { index, _ in arguments[index].shape(inCode: true) },
                like: { dialect.like($0, $1, escape: $2, negated: $3) },
                aggregate: dialect.aggregate,
                inList: { dialect.inList($0, negated: $1) })
            let sql = try renderer.render(node)
            for parameter in renderer.parameters {
                switch parameter {
                case .argument(let index):
                    if case .value(let value) = arguments[index] { values.append(value) }
                case .argumentElement(let index, let element):
                    if case .list(let list) = arguments[index] { values.append(list[element]) }
                case .argumentList(let index):
                    if case .list(let list) = arguments[index] { values.append(dialect.listParameter(list)) }
                case .integer(let value): values.append(.integer(value))
                case .real(let value): values.append(.real(value))
                case .text(let value): values.append(.text(value))
                case .argumentJSON(let index, let element):
                    switch arguments[index] {
                    case .value(let value): values.append(.text(jsonText(value)))
                    case .list(let list): values.append(.text(jsonText(list[element ?? 0])))
                    }
                }
            }
            return "(\(sql))"
        }
    }
}

extension Query {
    /// The relation a key path names, as the owners' query sees it (resolved on a scratch
    /// owner: its relation property's query knows its relation).
    /// - Throws: `.misuse` when the key path is not a to-many relation of `Record`.
    static func association<Child: Model>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>
    ) throws -> AssociationDescription<Child> {
        let scratch = Record()
        guard let describing = scratch[keyPath: relation].relation as? any AssociationDescribing,
              let association = describing.association(of: Child.self) else {
            throw ActiveRecordError(
                .misuse, "\(relation) is not a relation of \(Record.self): name a @HasMany or @HasManyThrough property")
        }
        return association
    }

    /// A clause about the children of the relation `relation`, or one that fails with the
    /// error of resolving it.
    static func subquery<Child: Model>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ make: (AssociationDescription<Child>) throws -> SubqueryClause
    ) -> SubqueryClause {
        do {
            return try make(association(relation))
        } catch {
            return .failed(error as? ActiveRecordError ?? ActiveRecordError(.misuse, "\(error)"))
        }
    }

    /// This query with a relation's scope applied (`scope(self)`), for a relation's own
    /// queries: a scope that does more than add conditions and orderings makes the query fail
    /// at its terminal call, with `.misuse`.
    package consuming func scoped(by scope: (Query) -> Query) -> Query {
        var scoped = scope(self)
        if let problem = scoped.clauses.scopeProblem {
            scoped.clauses.add(.failed(ActiveRecordError(
                .misuse, "a relation's scope adds conditions and orderings only, not \(problem): it applies to each owner's children")))
        }
        return scoped
    }
}
