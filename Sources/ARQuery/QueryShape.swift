@_spi(Engines) import ARCore

/// What decides a query's SQL: every clause, the base table, the dialect, and of each
/// argument only whether it is `NULL`, a value, or a list of so many (`= NULL` becomes
/// `IS NULL`, `IN %@` gets a `?` per element) or bound as one parameter. Queries of one shape compile to the same
/// ``CompiledShape``, kept per thread (see ``cache``), so that a query repeated in a loop
/// with other values parses, resolves and writes nothing after its first run.
///
/// Looking a query up costs one pass over its clauses: ``QueryClauses/fingerprint(_:)``
/// hashes them while converting the arguments, and ``matches(_:)`` compares a cached shape
/// with them field by field; no shape value is built unless the query is new.
final class QueryShape {
    /// A condition's text: its format string, or its tree when built in code.
    enum Text: Hashable {
        case format(String)
        case tree(PredicateNode)
        case field(FieldTree.Key)

        func isFormat(_ other: String) -> Bool {
            if case .format(let format) = self { return format == other }
            return false
        }

        func isTree(_ other: PredicateNode) -> Bool {
            if case .tree(let node) = self { return node == other }
            return false
        }

        func isField(_ other: FieldTree.Key) -> Bool {
            if case .field(let key) = self { return key == other }
            return false
        }
    }

    struct Join: Hashable {
        var model: ObjectIdentifier
        var kind: JoinKind
        var local: String?
        var foreign: String?

        init(_ join: QueryClauses.Join) {
            model = ObjectIdentifier(join.model)
            kind = join.kind
            local = join.on?.local
            foreign = join.on?.foreign
        }
    }

    /// What the shape is compiled for besides the clauses.
    struct Target: Hashable {
        /// The queried model class (whose mapping never changes once made).
        var base: ObjectIdentifier
        var dialect: ObjectIdentifier
        var defaultsToIdOrder: Bool
    }

    let target: Target
    /// The `where` conditions, then the `having` ones: text and the shape of each argument.
    let conditions: [ConditionShape]

    /// One condition's text and the shape of each of its arguments: an object, so that
    /// matching a query against it reads its fields in place (an array of tuples copied each
    /// condition's text and arguments out, retaining and releasing them, per match).
    final class ConditionShape {
        let text: Text
        let arguments: [ArgumentShape]

        init(_ text: Text, _ arguments: [ArgumentShape]) {
            self.text = text
            self.arguments = arguments
        }
    }
    let whereCount: Int
    let orderings: InlineList<QueryClauses.Ordering>
    let randomOrder: Bool
    let hasLimit: Bool
    let hasOffset: Bool
    let selection: QueryClauses.Selection
    let isDistinct: Bool
    let joins: [Join]
    let groupColumns: [String]
    /// Whether the shape has any `having` condition, selection, join or grouping (see
    /// ``QueryClauses/hasRareClauses``).
    let hasRareClauses: Bool

    /// The shape of `clauses`, which compiled (so every argument converted).
    init(_ clauses: QueryClauses, _ target: Target) {
        self.target = target
        conditions = (Array(clauses.conditions) + Array(clauses.havingConditions)).map { condition in
            switch condition {
            case .format(let format, let arguments): ConditionShape(.format(format), arguments.map { $0.shape(inCode: false) ?? .null })
            case .tree(let node, let arguments): ConditionShape(.tree(node), arguments.map { $0.shape(inCode: true) ?? .null })
            case .field(let key, let arguments): ConditionShape(.field(key), arguments.map { $0.shape(inCode: true) ?? .null })
            case .failed, .vacant: preconditionFailure("a failed condition has no shape")
            }
        }
        whereCount = clauses.conditions.count
        orderings = clauses.orderings
        randomOrder = clauses.randomOrder
        hasLimit = clauses.limitCount != nil
        hasOffset = clauses.offsetCount != nil
        selection = clauses.selection
        isDistinct = clauses.isDistinct
        joins = clauses.joins.map(Join.init)
        groupColumns = clauses.groupColumns
        hasRareClauses = conditions.count != whereCount || selection != .all || !joins.isEmpty || !groupColumns.isEmpty
    }

    /// Whether `clauses` has this shape (never when a condition failed to build or an
    /// argument to convert).
    func matches(_ clauses: QueryClauses, _ target: Target) -> Bool {
        guard self.target == target, whereCount == clauses.conditions.count,
              hasLimit == (clauses.limitCount != nil), hasOffset == (clauses.offsetCount != nil),
              randomOrder == clauses.randomOrder, isDistinct == clauses.isDistinct,
              orderings.isEmpty ? clauses.orderings.isEmpty : orderings == clauses.orderings
        else { return false }
        // The clauses most queries have none of, compared only when either side has some.
        if hasRareClauses || clauses.hasRareClauses {
            guard conditions.count == whereCount + clauses.havingConditions.count, selection == clauses.selection,
                  groupColumns.isEmpty ? clauses.groupColumns.isEmpty : groupColumns == clauses.groupColumns,
                  joins.count == clauses.joins.count,
                  clauses.havingConditions.allPair(with: conditions, from: whereCount, { Self.matches($0, $1) })
            else { return false }
            if !joins.isEmpty { for (join, other) in zip(joins, clauses.joins) where join != Join(other) { return false } }
        }
        // Each condition is passed in place (borrowed, not copied).
        return clauses.conditions.allPair(with: conditions, { Self.matches($0, $1) })
    }

    /// Whether `condition` has the text and argument shapes of `shape`. Each text is compared
    /// where it is stored (a `case` binding of the shape's would copy it).
    private static func matches(_ condition: QueryClauses.Condition, _ shape: ConditionShape) -> Bool {
        switch condition {
        case .format(let otherFormat, let sources):
            return shape.text.isFormat(otherFormat) && matches(sources, shape.arguments, inCode: false)
        case .tree(let otherNode, let sources):
            return shape.text.isTree(otherNode) && matches(sources, shape.arguments, inCode: true)
        case .field(let otherKey, let sources):
            return shape.text.isField(otherKey) && matches(sources, shape.arguments, inCode: true)
        case .failed, .vacant:
            return false
        }
    }

    private static func matches(_ arguments: QueryArgument.Sources, _ shapes: [ArgumentShape], inCode: Bool) -> Bool {
        guard arguments.count == shapes.count else { return false }
        return arguments.allPair(with: shapes) { $0.shape(inCode: inCode) == $1 }
    }

    /// Compiled shapes by fingerprint, per thread: looking one up takes no lock, so threads
    /// running queries never wait for each other here. Cleared when it holds ``cacheLimit``.
    static let cache = PerThread { Cache() }

    /// One thread's compiled shapes.
    struct Cache {
        var entries: [Int: Entry] = [:]
        /// The entry used last: a query repeated in a loop matches it without being hashed.
        var last: Entry?
    }

    /// A cached compilation and the shape it is for (a class: an optional tuple of the two
    /// would be copied and destroyed through generic value witnesses).
    final class Entry {
        let shape: QueryShape
        let compiled: CompiledShape

        init(_ shape: QueryShape, _ compiled: CompiledShape) {
            self.shape = shape
            self.compiled = compiled
        }

        /// The compiled shape when `clauses` for `target` have this entry's shape, else `nil`:
        /// the shape matched as the entry holds it (read from the entry outside, it was
        /// retained for the call).
        func compiled(matching clauses: QueryClauses, _ target: Target) -> CompiledShape? {
            shape.matches(clauses, target) ? compiled : nil
        }
    }
    static let cacheLimit = 500
}

extension QueryClauses {
    /// Argument `index` of the `number`-th condition (the `where` ones, then the `having`
    /// ones), which compiled (so it is converted), read in place (borrowed, not copied).
    @inline(__always)
    func argument(_ index: Int, of number: Int) -> QueryArgument {
        number < conditions.count
            ? conditions.withElement(at: number) { Self.argument(index, of: $0) }
            : havingConditions.withElement(at: number - conditions.count) { Self.argument(index, of: $0) }
    }

    private static func argument(_ index: Int, of condition: Condition) -> QueryArgument {
        // A case each: one binding of two cases' payloads copies it.
        switch condition {
        case .format(_, let sources): return argument(index, of: sources)
        case .tree(_, let sources): return argument(index, of: sources)
        case .field(_, let sources): return argument(index, of: sources)
        case .failed, .vacant:
            preconditionFailure("a condition that failed to build has no arguments")
        }
    }

    @inline(__always)
    private static func argument(_ index: Int, of sources: QueryArgument.Sources) -> QueryArgument {
        sources.withElement(at: index) { source in
            guard case .converted(let argument) = source else { preconditionFailure("an argument that did not convert") }
            return argument
        }
    }

    /// The hash of the query's shape for `target`.
    func fingerprint(_ target: QueryShape.Target) -> Int {
        var hasher = Hasher()
        hasher.combine(target)
        func add(_ condition: Condition) {
            let arguments: QueryArgument.Sources
            let inCode: Bool
            switch condition {
            case .format(let format, let sources):
                hasher.combine(format)
                (arguments, inCode) = (sources, false)
            case .tree(let node, let sources):
                hasher.combine(node)
                (arguments, inCode) = (sources, true)
            case .field(let key, let sources):
                hasher.combine(key)
                (arguments, inCode) = (sources, true)
            case .failed, .vacant:
                return
            }
            hasher.combine(arguments.count)
            for argument in arguments { hasher.combine(argument.shape(inCode: inCode)) }
        }
        for condition in conditions { add(condition) }
        for condition in havingConditions { add(condition) }
        hasher.combine(conditions.count)
        hasher.combine(orderings)
        hasher.combine(randomOrder)
        hasher.combine(limitCount != nil)
        hasher.combine(offsetCount != nil)
        hasher.combine(selection)
        hasher.combine(isDistinct)
        hasher.combine(joins.count)
        for join in joins { hasher.combine(QueryShape.Join(join)) }
        hasher.combine(groupColumns)
        return hasher.finalize()
    }
}
