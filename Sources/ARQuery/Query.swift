import ARCore

/// A lazy, chainable query over a model's table: the seeds' `ARLazyFetcher`.
///
/// Building a query runs nothing; a terminal call (`fetch()`, `first()`,
/// `count()`, `exists()`, an aggregate, a cursor) runs exactly one `SELECT`,
/// with every value bound.
///
/// ```swift
/// let adults = try User.query()
///     .where("'user'.'name' = %@ or 'user'.'id' in %@", "john", [1, 15])
///     .where("age", .greaterThanOrEqual(18))
///     .order(by: "name")
///     .limit(10)
///     .fetch()
/// ```
///
/// A query is a value: each call returns a new query and leaves the old one as it was.
public struct Query<Record: Model> {
    /// The clauses, compiled by the compiler ``DynamicQuery`` shares.
    var clauses = QueryClauses()
    /// The relation this query belongs to (`group.users`), if any.
    package var relation: (any QueryRelation)? {
        get { relationBox?.relation }
        set { relationBox = newValue.map(RelationBox.init) }
    }
    /// ``relation``, boxed: copying a query (each chained call does) then retains one
    /// reference instead of copying an optional existential through its value witnesses.
    private var relationBox: RelationBox?
    /// Whether the query is a relation's own, unchanged: then it may answer from memory.
    package var isPristine = false
    /// Eager loading to run on fetched records (of `Record`, typed as their base class: an
    /// array of a generic element type would cost a metadata look-up per query).
    var preloaders: [([Model]) throws -> Void] = []

    /// A query of every record of `Record`; see `Model.query()`.
    public init() {}

    // MARK: Conditions

    /// Adds a condition in the predicate language; several `where` calls are ANDed, each in parentheses.
    ///
    /// ```swift
    /// .where("'user'.'name' = %@ or 'user'.'id' in %@", "john", [1, 15])
    /// .where("age BETWEEN ? AND ? AND name NOT LIKE 'A%'", 20, 30)
    /// ```
    /// Placeholders are `%@` or `?`; arguments are bound, never spliced. `nil`
    /// with `=` or `!=` matches `NULL`. An array or set goes with `IN %@`.
    /// Errors (syntax, unknown column, argument count) are thrown by the terminal call,
    /// with the position in `format`. See the README for the grammar.
    public func `where`(_ format: String, _ arguments: (any ColumnValue)?...) -> Query {
        with { $0.clauses.conditions.append(.format(format, arguments: arguments.map(QueryArgument.Source.init))) }
    }

    /// ``where(_:_:)-(String,(any ColumnValue)?...)`` with arguments given as database values.
    public func `where`(_ format: String, arguments: [QueryArgument]) -> Query {
        with { $0.clauses.conditions.append(.format(format, arguments: arguments.map { .converted($0) })) }
    }

    /// Adds a condition on one column (or property) name.
    ///
    /// ```swift
    /// .where("age", .greaterThan(30)).where("name", .in(["Alex", "John"]))
    /// ```
    public func `where`(_ column: String, _ condition: FieldCondition) -> Query {
        let (node, arguments) = condition.predicate(on: column)
        return with {
            $0.clauses.conditions.append(.tree(node, arguments: arguments))
        }
    }

    // MARK: Shape

    /// At most `count` records.
    public func limit(_ count: Int) -> Query { with { $0.clauses.limitCount = count } }

    /// Skips the first `count` records.
    public func offset(_ count: Int) -> Query { with { $0.clauses.offsetCount = count } }

    /// Orders by a column (or `Table.column` of a joined model); several calls sort by each key in turn.
    public func order(by column: String, ascending: Bool = true) -> Query {
        with { $0.clauses.orderings.append(.init(column: column, ascending: ascending)) }
    }

    /// Orders randomly (`ORDER BY random()`), after any keys given before.
    public func orderRandomly() -> Query { with { $0.clauses.randomOrder = true } }

    /// Loads only these columns (with `id`, `createdAt`, `updatedAt`); the others
    /// keep their declared defaults, and saving the record leaves them untouched.
    public func only(_ columns: String...) -> Query { with { $0.clauses.selection = .only(columns) } }

    /// Loads every column but these; see ``only(_:)``.
    public func except(_ columns: String...) -> Query { with { $0.clauses.selection = .except(columns) } }

    /// Removes duplicate rows (`SELECT DISTINCT`), useful with joins.
    public func distinct() -> Query { with { $0.clauses.isDistinct = true } }

    /// Groups rows by these columns, for ``values(_:)`` and aggregates.
    public func group(by columns: String...) -> Query { with { $0.clauses.groupColumns += columns } }

    /// Filters groups, in the predicate language with aggregates: `having("count(*) > %@", 1)`.
    public func having(_ format: String, _ arguments: (any ColumnValue)?...) -> Query {
        with { $0.clauses.havingConditions.append(.format(format, arguments: arguments.map(QueryArgument.Source.init))) }
    }

    // MARK: Joins

    /// Joins another model's table on `local = foreign`.
    ///
    /// ```swift
    /// User.query().join(Group.self, .left, on: "groupId", "id")   // "User"."groupId" = "Group"."id"
    /// ```
    /// - Parameters:
    ///   - local: a column of this model (or `Table.column` of an earlier join).
    ///   - foreign: a column of `other`.
    public func join<Other: Model>(_ other: Other.Type, _ kind: JoinKind = .inner, on local: String, _ foreign: String) -> Query {
        with { $0.clauses.joins.append(.init(model: other, kind: kind, on: (local, foreign))) }
    }

    /// Joins another model by the naming convention: `"User"."groupId" = "Group"."id"` when
    /// this model has `<lowerCamel(Other)>Id`, else `"User"."id" = "Other"."userId"`.
    public func join<Other: Model>(_ other: Other.Type, _ kind: JoinKind = .inner) -> Query {
        with { $0.clauses.joins.append(.init(model: other, kind: kind, on: nil)) }
    }

    func with(_ change: (inout Query) -> Void) -> Query {
        var copy = self
        copy.isPristine = false
        change(&copy)
        return copy
    }
}

extension ModelClassMethods where Self: Model {
    /// A lazy query over this model's records; nothing runs until a terminal call.
    public static func query() -> Query<Self> { Query() }
}

private final class RelationBox {
    let relation: any QueryRelation
    init(_ relation: any QueryRelation) { self.relation = relation }
}

@available(*, unavailable, message: "A query holds its arguments, which need not be Sendable")
extension Query: Sendable {}
