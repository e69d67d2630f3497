@_spi(Engines) import ARCore

/// What a query asks for, clause by clause: the part that ``Query`` (a model class's
/// records) and ``DynamicQuery`` (a run-time model's, what the C API runs) share, and
/// that one compiler turns into SQL (see `QueryClauses+Compile.swift`).
struct QueryClauses {
    enum Condition: InlineListElement {
        /// A format string in the predicate language with its arguments. Parsed when the
        /// query is compiled (once per format, see ``PredicateCache``), and not at all when
        /// a query of the same shape was compiled before (see `QueryShape`); a syntax error
        /// is thrown by the terminal call.
        case format(String, arguments: QueryArgument.Sources)
        /// A tree built in code (a key-path condition) with its arguments.
        case tree(PredicateNode, arguments: QueryArgument.Sources)
        /// A condition on one column (`where(column, FieldCondition)`, a relation's key) with
        /// its arguments: the key of its tree (``FieldTree``), which is looked up only when the
        /// query is compiled, not when it is built or matched to a compiled shape.
        case field(FieldTree.Key, arguments: QueryArgument.Sources)
        /// A condition that could not be built (a key path that is not a column); reported by the terminal call.
        case failed(ActiveRecordError)
        /// What an empty ``InlineList`` of conditions holds: never a condition of a query.
        case vacant
    }

    struct Ordering: Hashable, InlineListElement {
        var column: String
        var ascending: Bool

        /// What an empty ``InlineList`` of orderings holds: never an ordering of a query.
        static var vacant: Ordering { Ordering(column: "", ascending: true) }
    }

    enum Selection: Hashable {
        case all
        case only([String])
        case except([String])
    }

    struct Join {
        var model: Model.Type
        var kind: JoinKind
        var on: (local: String, foreign: String)?
    }

    /// The `where` conditions and the orderings, each most often one: held in place (see
    /// ``InlineList``), so that a query of one condition and one ordering makes no array.
    var conditions = InlineList<Condition>()
    var orderings = InlineList<Ordering>()
    var randomOrder = false
    var limitCount: Int?
    var offsetCount: Int?
    var isDistinct = false
    /// The clauses most queries have none of (selection, joins, grouping, `having`, lock), in
    /// a box of their own made by the first of them: a query without them then has one field
    /// to destroy for all of them, not each (see Benchmarks/README.md, Hot-path notes).
    private var rare: RareClauses?

    /// Whether the query has any of the clauses most queries have none of (``selection``,
    /// ``joins``, ``groupColumns``, ``havingConditions``, ``rowLock``); when `false`, each has
    /// its default.
    var hasRareClauses: Bool { rare != nil }

    var selection: Selection {
        get { rare?.selection ?? .all }
        _modify { yield &changingRare().selection }
    }
    var joins: [Join] {
        get { rare?.joins ?? [] }
        _modify { yield &changingRare().joins }
    }
    var groupColumns: [String] {
        get { rare?.groupColumns ?? [] }
        _modify { yield &changingRare().groupColumns }
    }
    var havingConditions: InlineList<Condition> {
        get { rare?.havingConditions ?? InlineList() }
        _modify { yield &changingRare().havingConditions }
    }
    /// Whether the records the query returns are locked until the transaction ends (`lock()`).
    var rowLock: RowLock? {
        get { rare?.rowLock }
        _modify { yield &changingRare().rowLock }
    }
    /// Conditions on the owners' children (`whereExists`, `havingCount`), after the `where` ones.
    var subqueryConditions: [SubqueryClause] {
        get { rare?.subqueryConditions ?? [] }
        _modify { yield &changingRare().subqueryConditions }
    }
    /// Orderings by the owners' children (`order(byCount:)`), each before the ordering at its position.
    var subqueryOrderings: [SubqueryOrdering] {
        get { rare?.subqueryOrderings ?? [] }
        _modify { yield &changingRare().subqueryOrderings }
    }
    /// Whether the query is compiled each time, its shape not cached: a locking query, and one
    /// with SQL of its relations (``subqueryConditions``, ``subqueryOrderings``), whose values
    /// the compiled shape holds.
    var compilesEachTime: Bool { rare?.compilesEachTime ?? false }

    /// The box of the rare clauses, made or copied so that this query alone holds it (queries
    /// are values: a copy of a query shares the box until one of them changes it).
    private mutating func changingRare() -> RareClauses {
        if !isKnownUniquelyReferenced(&rare) { rare = rare.map(RareClauses.init(copying:)) ?? RareClauses() }
        return rare!
    }

    private final class RareClauses {
        var selection = Selection.all
        var joins: [Join] = []
        var groupColumns: [String] = []
        var havingConditions = InlineList<Condition>()
        var rowLock: RowLock?
        var subqueryConditions: [SubqueryClause] = []
        var subqueryOrderings: [SubqueryOrdering] = []

        var compilesEachTime: Bool { rowLock != nil || !subqueryConditions.isEmpty || !subqueryOrderings.isEmpty }

        init() {}

        init(copying other: RareClauses) {
            selection = other.selection
            joins = other.joins
            groupColumns = other.groupColumns
            havingConditions = other.havingConditions
            rowLock = other.rowLock
            subqueryConditions = other.subqueryConditions
            subqueryOrderings = other.subqueryOrderings
        }
    }

    /// Adds a `where` condition.
    @inline(__always)
    mutating func add(_ condition: Condition) { conditions.append(condition) }

    /// The same clauses in the opposite order (for `last()`): each key reversed, or the
    /// highest id first when there is no key.
    var reversed: QueryClauses {
        var copy = self
        if !subqueryOrderings.isEmpty {
            copy.subqueryOrderings = subqueryOrderings.map { $0.reversed }
            copy.orderings = InlineList(orderings.lazy.map { Ordering(column: $0.column, ascending: !$0.ascending) })
        } else if orderings.isEmpty && !randomOrder {
            copy.orderings = InlineList(Ordering(column: "id", ascending: false))
        } else {
            copy.orderings = InlineList(orderings.lazy.map { Ordering(column: $0.column, ascending: !$0.ascending) })
        }
        return copy
    }
}

/// How a join keeps rows without a match.
public enum JoinKind: String, Sendable {
    /// Only rows with a match on both sides.
    case inner = "JOIN"
    /// Every row of the left side; the right side may be absent.
    case left = "LEFT JOIN"
    /// Every row of the right side; the left side may be absent.
    case right = "RIGHT JOIN"
    /// Every row of both sides.
    case fullOuter = "FULL OUTER JOIN"
}
