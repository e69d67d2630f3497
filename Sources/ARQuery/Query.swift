@_spi(Engines) import ARCore

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
    /// Everything the query holds, in one box: copying a query (each chained call does)
    /// retains one reference, and a chain of calls on a temporary changes the box in place
    /// (the calls are `consuming`, so the box is uniquely referenced) instead of copying
    /// each field through a generic struct's value witnesses.
    var state: QueryState

    /// The clauses, compiled by the compiler ``DynamicQuery`` shares.
    var clauses: QueryClauses {
        _read { yield state.clauses }
        _modify {
            makeUnique()
            yield &state.clauses
        }
    }
    /// The relation this query belongs to (`group.users`), if any.
    package var relation: (any QueryRelation)? {
        get { state.relation }
        set {
            makeUnique()
            state.relation = newValue
        }
    }
    /// Whether the query is a relation's own, unchanged: then it may answer from memory.
    package var isPristine: Bool {
        get { state.isPristine }
        set {
            makeUnique()
            state.isPristine = newValue
        }
    }
    /// Eager loading to run on fetched records (of `Record`, typed as their base class: an
    /// array of a generic element type would cost a metadata look-up per query).
    var preloaders: [([Model]) throws -> Void] {
        get { state.preloaders }
        set {
            makeUnique()
            state.preloaders = newValue
        }
    }

    /// Gives the query a box of its own before a change. Through a non-generic function: a
    /// method of `Query` would take its generic metadata, looked up per call.
    @inline(__always)
    private mutating func makeUnique() { QueryState.makeUnique(&state) }

    /// A query of every record of `Record`; see `Model.query()`.
    public init() { state = QueryState() }

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
    /// with the position in `format`. The grammar: the Queries article of the documentation.
    public consuming func `where`(_ format: String, _ arguments: (any ColumnValue)?...) -> Query {
        with { $0.clauses.add(.format(format, arguments: QueryArgument.Source.sources(arguments))) }
    }

    /// `where(_:_:)` (a format and variadic values) with one argument of a known type: the same
    /// condition, chosen over the variadic form when the argument's type is known (not a `nil`
    /// literal, not an existential). It makes no array of the arguments and no existential of
    /// each, so that a query built in a loop allocates, copies and frees less.
    public consuming func `where`<Argument: ColumnValue>(_ format: String, _ argument: Argument) -> Query {
        changing().clauses.add(.format(format, arguments: QueryArgument.Sources(QueryArgument.Source(argument))))
        return self
    }

    /// `where(_:_:)` (a format and variadic values) with two arguments of known types: the same
    /// condition, without an array of the arguments (see the one-argument form).
    public consuming func `where`<First: ColumnValue, Second: ColumnValue>(
        _ format: String, _ first: First, _ second: Second
    ) -> Query {
        changing().clauses.add(.format(format, arguments: .init(QueryArgument.Source(first), [QueryArgument.Source(second)])))
        return self
    }

    /// `where(_:_:)` (a format and variadic values) with arguments given as database values.
    public consuming func `where`(_ format: String, arguments: [QueryArgument]) -> Query {
        with { $0.clauses.add(.format(format, arguments: QueryArgument.Sources(arguments.lazy.map { .converted($0) }))) }
    }

    /// Adds a condition on one column (or property) name.
    ///
    /// ```swift
    /// .where("age", .greaterThan(30)).where("name", .in(["Alex", "John"]))
    /// ```
    public consuming func `where`(_ column: String, _ condition: consuming FieldCondition) -> Query {
        changing().clauses.add(condition.condition(on: column))
        return self
    }

    /// A condition on a column of one of the query's tables (or models), named apart from the
    /// column: `where(column: "userId", of: "UserProject", .in(ids))`.
    package consuming func `where`(column: String, of table: String, _ condition: FieldCondition) -> Query {
        changing().clauses.add(condition.condition(on: column, of: table))
        return self
    }

    // MARK: Shape

    /// At most `count` records.
    public consuming func limit(_ count: Int) -> Query {
        changing().clauses.limitCount = count
        return self
    }

    /// Skips the first `count` records.
    public consuming func offset(_ count: Int) -> Query { with { $0.clauses.offsetCount = count } }

    /// Orders by a column (or `Table.column` of a joined model); several calls sort by each key in turn.
    public consuming func order(by column: String, ascending: Bool = true) -> Query {
        changing().clauses.orderings.append(.init(column: column, ascending: ascending))
        return self
    }

    /// Orders randomly (`ORDER BY random()`), after any keys given before.
    public consuming func orderRandomly() -> Query { with { $0.clauses.randomOrder = true } }

    /// Loads only these columns (with `id`, `createdAt`, `updatedAt`); the others
    /// keep their declared defaults, and saving the record leaves them untouched.
    public consuming func only(_ columns: String...) -> Query { with { $0.clauses.selection = .only(columns) } }

    /// Loads every column but these; see ``only(_:)``.
    public consuming func except(_ columns: String...) -> Query { with { $0.clauses.selection = .except(columns) } }

    /// Removes duplicate rows (`SELECT DISTINCT`), useful with joins.
    public consuming func distinct() -> Query { with { $0.clauses.isDistinct = true } }

    /// Locks the records the query returns until the transaction ends, so that no other
    /// transaction changes them between your read and your save (pessimistic locking).
    ///
    /// ```swift
    /// try db.transaction {
    ///     let accounts = try Account.query().where("id IN %@", [from, to]).order(by: "id").lock().fetch()
    ///     accounts[0].balance -= 10; accounts[1].balance += 10
    ///     try accounts.forEach { try $0.save() }
    /// }
    /// ```
    /// On PostgreSQL it adds `FOR UPDATE OF "T"` (with `NOWAIT` or `SKIP LOCKED`) to the query
    /// of `fetch()`, `first()`, `last()`, `exists()` and `cursor()`; another transaction that
    /// locks or changes those rows waits for this one to end. On SQLite nothing is added: a
    /// transaction holds the database's write lock from its start, so no other connection
    /// changes anything until it ends. Locking several rows in one order (by id, say) in every
    /// transaction keeps two transactions from waiting for each other (a deadlock, which
    /// PostgreSQL ends with `.transactionConflict`).
    /// - Parameter behaviour: wait for rows another transaction locked (the default), fail
    ///   at once (`.noWait`: `.busy`), or skip them (`.skipLocked`).
    /// - Note: the terminal call throws `.misuse` outside a transaction (the lock would end
    ///   with the statement) and with `distinct()` or `group(by:)`.
    public consuming func lock(_ behaviour: RowLock = .wait) -> Query { with { $0.clauses.rowLock = behaviour } }

    /// Groups rows by these columns, for ``values(_:)`` and aggregates.
    public consuming func group(by columns: String...) -> Query { with { $0.clauses.groupColumns += columns } }

    /// Filters groups, in the predicate language with aggregates: `having("count(*) > %@", 1)`.
    public consuming func having(_ format: String, _ arguments: (any ColumnValue)?...) -> Query {
        with { $0.clauses.havingConditions.append(.format(format, arguments: QueryArgument.Source.sources(arguments))) }
    }

    // MARK: Joins

    /// Joins another model's table on `local = foreign`.
    ///
    /// ```swift
    /// User.query().join(Group.self, .left, on: "groupId", "id")   // "User"."groupId" = "Group"."id"
    /// ```
    /// - Parameters:
    ///   - other: the model to join.
    ///   - kind: inner (the default), left, right or full outer.
    ///   - local: a column of this model (or `Table.column` of an earlier join).
    ///   - foreign: a column of `other`.
    public consuming func join<Other: Model>(_ other: Other.Type, _ kind: JoinKind = .inner, on local: String, _ foreign: String) -> Query {
        with { $0.clauses.joins.append(.init(model: other, kind: kind, on: (local, foreign))) }
    }

    /// Joins another model by the naming convention: `"User"."groupId" = "Group"."id"` when
    /// this model has `<lowerCamel(Other)>Id`, else `"User"."id" = "Other"."userId"`.
    public consuming func join<Other: Model>(_ other: Other.Type, _ kind: JoinKind = .inner) -> Query {
        with { $0.clauses.joins.append(.init(model: other, kind: kind, on: nil)) }
    }

    /// This query changed by `change` (no longer pristine). Consuming: a chain of calls on a
    /// temporary query changes its one box in place. `change` gets the box, not the generic
    /// query: an `inout Query<Record>` closure costs a metadata look-up per call.
    consuming func with(_ change: (QueryState) -> Void) -> Query {
        change(changing())
        return self
    }

    /// The box, made this query's own and no longer pristine, to change in place: what
    /// ``with(_:)`` gives its closure. The most used calls (`where`, `order`, `limit`) change it
    /// straight, with no closure: one capturing the condition (a tuple of a key and arguments)
    /// copied it through the tuple's metadata on every call.
    @inline(__always)
    private mutating func changing() -> QueryState {
        makeUnique()
        state.isPristine = false
        return state
    }
}

/// What a ``Query`` holds (see `Query.state`); not generic, so that reaching it costs no
/// metadata look-up.
final class QueryState {
    // Unchecked exclusivity: a box is changed only while its query holds the one reference
    // (`makeUnique`), so no other access can overlap; the dynamic checks would run on every
    // chained call (see Benchmarks/README.md, Hot-path notes).
    @exclusivity(unchecked) var clauses = QueryClauses()
    @exclusivity(unchecked) var isPristine = false
    /// The relation and the eager loading, which most queries have none of: in a box of their
    /// own, so that a plain query's box holds no existential (destroyed through its type's
    /// value witness, on every query; see Benchmarks/README.md, Hot-path notes). Never
    /// changed in place, so copies share it.
    @exclusivity(unchecked) private var extras: Extras?

    private final class Extras {
        let relation: (any QueryRelation)?
        let preloaders: [([Model]) throws -> Void]

        init(relation: (any QueryRelation)?, preloaders: [([Model]) throws -> Void]) {
            self.relation = relation
            self.preloaders = preloaders
        }
    }

    /// Whether the query has a relation or eager loading (most have neither).
    var hasExtras: Bool { extras != nil }

    var relation: (any QueryRelation)? {
        get { extras?.relation }
        set { extras = Extras(relation: newValue, preloaders: preloaders) }
    }

    var preloaders: [([Model]) throws -> Void] {
        get { extras?.preloaders ?? [] }
        set { extras = Extras(relation: relation, preloaders: newValue) }
    }

    init() {}

    /// Replaces `state` with a copy unless it is the only reference.
    static func makeUnique(_ state: inout QueryState) {
        if !isKnownUniquelyReferenced(&state) { state = QueryState(copying: state) }
    }

    init(copying other: QueryState) {
        clauses = other.clauses
        isPristine = other.isPristine
        extras = other.extras
    }
}

extension ModelClassMethods where Self: Model {
    /// A lazy query over this model's records; nothing runs until a terminal call.
    public static func query() -> Query<Self> { Query() }
}

@available(*, unavailable, message: "A query holds its arguments, which need not be Sendable")
extension Query: Sendable {}
