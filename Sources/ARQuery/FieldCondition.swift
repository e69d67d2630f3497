@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A condition on one column, for `Query.where(_:_:)`.
///
/// ```swift
/// User.query().where("age", .greaterThan(30))
/// User.query().where("id", .in([1, 15]))
/// User.query().where("createdAt", .between(monday, friday))
/// User.query().where("avatar", .isNull)
/// ```
public struct FieldCondition {
    /// What decides the condition's tree (its operator and flags, not its values).
    let form: FieldTree.Form
    /// Its arguments, converted when the condition is made: a query built in a loop then
    /// copies no existential value into the condition and out again (see ``predicate(on:of:)``).
    let arguments: QueryArgument.Sources

    private init(_ form: FieldTree.Form, _ arguments: QueryArgument.Sources) {
        self.form = form
        self.arguments = arguments
    }

    private static func comparison(_ op: ComparisonOperator, _ value: (any ColumnValue)?) -> FieldCondition {
        .init(.comparison(op), .init(.init(value)))
    }

    private static func comparison(_ op: ComparisonOperator, _ value: some ColumnValue) -> FieldCondition {
        .init(.comparison(op), .init(.init(value)))
    }

    private static func like(_ pattern: String, negated: Bool, escaped: Bool) -> FieldCondition {
        .init(.like(negated: negated, escaped: escaped), escaped ? .init(.init(pattern), [.init(likeEscape)]) : .init(.init(pattern)))
    }

    private static func list(_ values: [any ColumnValue], negated: Bool) -> FieldCondition {
        .init(.list(negated: negated), .init(.init(list: values)))
    }

    /// `column = value`; `nil` matches `NULL` (`IS NULL`).
    public static func equal(_ value: (any ColumnValue)?) -> FieldCondition { comparison(.equal, value) }
    /// `column <> value`; `nil` matches non-`NULL` (`IS NOT NULL`).
    public static func notEqual(_ value: (any ColumnValue)?) -> FieldCondition { comparison(.notEqual, value) }
    /// `column = value`, for a value of a known type: the same condition as `equal(_:)` of an optional
    /// existential (an optional's `nil` matches `NULL`), chosen over it when the value is not a `nil` literal
    /// or an existential, so that a condition built in a loop makes no existential of its value.
    ///
    /// ```swift
    /// User.query().where("age", .equal(age))
    /// ```
    public static func equal(_ value: some ColumnValue) -> FieldCondition { comparison(.equal, value) }
    /// `column <> value`, for a value of a known type: the same condition as
    /// `notEqual(_:)` of an optional existential, without an existential of the value.
    public static func notEqual(_ value: some ColumnValue) -> FieldCondition { comparison(.notEqual, value) }
    /// `column < value`.
    public static func lessThan(_ value: some ColumnValue) -> FieldCondition { comparison(.less, value) }
    /// `column <= value`.
    public static func lessThanOrEqual(_ value: some ColumnValue) -> FieldCondition { comparison(.lessOrEqual, value) }
    /// `column > value`.
    public static func greaterThan(_ value: some ColumnValue) -> FieldCondition { comparison(.greater, value) }
    /// `column >= value`.
    public static func greaterThanOrEqual(_ value: some ColumnValue) -> FieldCondition {
        comparison(.greaterOrEqual, value)
    }
    /// `column IN (…)`: any array or set of values; an empty one matches nothing.
    public static func `in`<S: Sequence>(_ values: S) -> FieldCondition where S.Element: ColumnValue {
        list(values.map { $0 }, negated: false)
    }
    /// `column NOT IN (…)`: an empty array or set matches everything.
    public static func notIn<S: Sequence>(_ values: S) -> FieldCondition where S.Element: ColumnValue {
        list(values.map { $0 }, negated: true)
    }
    /// `column LIKE pattern` (`%` any run, `_` one character; ASCII case-insensitive, as in SQLite).
    /// `%` and `_` in `pattern` are wildcards: for user input use ``contains(_:)``,
    /// ``hasPrefix(_:)`` or ``hasSuffix(_:)``, which match the text as it is.
    public static func like(_ pattern: String) -> FieldCondition { like(pattern, negated: false, escaped: false) }
    /// `column NOT LIKE pattern`.
    public static func notLike(_ pattern: String) -> FieldCondition { like(pattern, negated: true, escaped: false) }
    /// The column's text contains `text`, matched as it is (`%`, `_` and `\` in it are
    /// escaped) and with ASCII letters in any case, as LIKE matches: safe for user input.
    ///
    /// ```swift
    /// Bookmark.query().where("title", .contains(searchField))   // "100%" finds "100%", not "1000"
    /// ```
    public static func contains(_ text: String) -> FieldCondition {
        like("%" + escapingLikeWildcards(text) + "%", negated: false, escaped: true)
    }
    /// The column's text starts with `text` (matched as ``contains(_:)`` matches).
    public static func hasPrefix(_ text: String) -> FieldCondition {
        like(escapingLikeWildcards(text) + "%", negated: false, escaped: true)
    }
    /// The column's text ends with `text` (matched as ``contains(_:)`` matches).
    public static func hasSuffix(_ text: String) -> FieldCondition {
        like("%" + escapingLikeWildcards(text), negated: false, escaped: true)
    }
    /// `column BETWEEN low AND high`, bounds included.
    public static func between(_ low: some ColumnValue, _ high: some ColumnValue) -> FieldCondition {
        .init(.between, .init(.init(low), [.init(high)]))
    }
    /// `column IS NULL`.
    public static var isNull: FieldCondition { .init(.null(negated: false), .init()) }
    /// `column IS NOT NULL`.
    public static var isNotNull: FieldCondition { .init(.null(negated: true), .init()) }

    /// The condition on `column` (of the table or model `qualifier` names, else of the first
    /// of the query's tables that has it), with its arguments: its tree's key (``FieldTree/Key``),
    /// whose tree is made once per thread and shared (see ``FieldTree``), and only when a query
    /// of its shape is compiled, so that a query built in a loop looks no tree up and
    /// allocates (and frees) no tree nodes, only its arguments.
    func predicate(on column: String, of qualifier: String? = nil) -> (FieldTree.Key, QueryArgument.Sources) {
        (FieldTree.Key(form: form, column: column, qualifier: qualifier), arguments)
    }

    /// The query condition ``predicate(on:of:)`` describes, made in one piece (no tuple of its
    /// key and arguments to copy into it).
    @inline(__always)
    consuming func condition(on column: String, of qualifier: String? = nil) -> QueryClauses.Condition {
        .field(FieldTree.Key(form: form, column: column, qualifier: qualifier), arguments: arguments)
    }
}

/// The predicate trees of ``FieldCondition``s, made once per form and column on each thread
/// and shared by the queries that use them (a tree is an immutable value: sharing it shares
/// its nodes, which a new tree would allocate and a query's end would free).
enum FieldTree {
    /// A condition's form: everything of it that its tree holds, but the column.
    enum Form: Hashable {
        case comparison(ComparisonOperator)
        case like(negated: Bool, escaped: Bool)
        case list(negated: Bool)
        case between
        case null(negated: Bool)
    }

    struct Key: Hashable {
        let form: Form
        let column: String
        let qualifier: String?
    }

    /// One thread's trees, and the one it used last (a query repeated in a loop finds it
    /// without hashing the column's name).
    struct Cache {
        var trees: [Key: PredicateNode] = [:]
        var last: (key: Key, node: PredicateNode)?
    }

    static let cache = PerThread { Cache() }
    /// Trees kept per thread before the cache is emptied (columns are few; this bounds a
    /// program that makes column names at run time).
    static let cacheLimit = 256

    /// The tree of `key`, from the calling thread's cache.
    static func node(_ key: Key) -> PredicateNode {
        cache.withValue { cache in
            if let last = cache.last, last.key == key { return last.node }
            let node: PredicateNode
            if let known = cache.trees[key] {
                node = known
            } else {
                node = make(key.form, on: key.column, of: key.qualifier)
                if cache.trees.count >= cacheLimit { cache.trees.removeAll() }
                cache.trees[key] = node
            }
            cache.last = (key, node)
            return node
        }
    }

    /// A new tree of `form` on `column` of `qualifier`: its placeholders number its arguments
    /// from 0, as ``FieldCondition/predicate(on:of:)`` lists them.
    static func make(_ form: Form, on column: String, of qualifier: String?) -> PredicateNode {
        let operand = PredicateOperand.column(qualifier: qualifier, name: column, position: 0)
        switch form {
        case .comparison(let op):
            return .comparison(operand, op, .placeholder(index: 0, position: 0), position: 0)
        case .like(let negated, escaped: false):
            return .like(operand, .placeholder(index: 0, position: 0), escape: nil, negated: negated)
        case .like(let negated, escaped: true):
            return .like(operand, .placeholder(index: 0, position: 0), escape: .placeholder(index: 1, position: 0), negated: negated)
        case .list(let negated):
            return .inList(operand, .placeholder(index: 0, position: 0), negated: negated)
        case .between:
            return .between(operand, .placeholder(index: 0, position: 0), .placeholder(index: 1, position: 0), negated: false)
        case .null(let negated):
            return .isNull(operand, negated: negated)
        }
    }
}

/// An argument for a predicate placeholder given as database values (the C API's way).
public enum QueryArgument: Sendable, Equatable {
    /// One value, for a comparison, `LIKE` or `BETWEEN` bound.
    case value(DatabaseValue)
    /// Several values, for `IN %@`.
    case list([DatabaseValue])

    /// An argument as a query holds it: converted to database values when the condition is
    /// made (a query repeated in a loop then converts each value once), or the conversion's
    /// error, which the terminal call throws with the placeholder and format it belongs to.
    /// A condition's arguments, most often one: held in place (see ``InlineList``).
    typealias Sources = InlineList<Source>

    enum Source: InlineListElement {
        case converted(QueryArgument)
        case failed(any Error)

        /// What an empty ``InlineList`` of arguments holds: never an argument of a query.
        static var vacant: Source { .converted(.value(.null)) }

        /// `where` arguments, each read in the array by one optional chain, which opens the
        /// existential once (binding it to a local first, as `map` with an initializer does,
        /// copies it several times).
        static func sources(_ values: [(any ColumnValue)?]) -> Sources {
            guard !values.isEmpty else { return Sources() }
            var rest: [Source] = []
            rest.reserveCapacity(values.count - 1)
            for index in values.indices.dropFirst() { rest.append(values[index]?.whereArgument ?? .converted(.value(.null))) }
            return Sources(values[0]?.whereArgument ?? .converted(.value(.null)), rest)
        }

        /// A `where` argument: `nil` is `NULL`, an array or set is a list (for `IN %@`).
        init(_ value: (any ColumnValue)?) {
            self = value?.whereArgument ?? .converted(.value(.null))
        }

        /// A non-`nil` `where` argument of type `Value`.
        init<Value: ColumnValue>(_ value: Value) {
            // The common scalar types are told apart by their type alone: casting to a
            // protocol costs a conformance look-up per argument (see Benchmarks/README.md,
            // Hot-path notes).
            if !Self.isScalar(Value.self), let list = value as? any InListConvertible {
                self.init(list: list.inListElements)
                return
            }
            do {
                self = .converted(.value(try value.toSQL()))
            } catch {
                self = .failed(error)
            }
        }

        /// A list argument (for `IN %@`).
        init(list values: [any ColumnValue]) {
            self = Self.converting { .list(try values.map { try $0.toSQL() }) }
        }

        private static func converting(_ convert: () throws -> QueryArgument) -> Source {
            do {
                return .converted(try convert())
            } catch {
                return .failed(error)
            }
        }

        private static func isScalar(_ type: any ColumnValue.Type) -> Bool {
            let type = ObjectIdentifier(type)
            return type == ObjectIdentifier(Int.self) || type == ObjectIdentifier(String.self)
                || type == ObjectIdentifier(Double.self) || type == ObjectIdentifier(Int64.self)
                || type == ObjectIdentifier(Bool.self) || type == ObjectIdentifier(Date.self)
                // An optional of these, which a typed `where` argument may be.
                || type == ObjectIdentifier(Int?.self) || type == ObjectIdentifier(String?.self)
                || type == ObjectIdentifier(Double?.self) || type == ObjectIdentifier(Int64?.self)
                || type == ObjectIdentifier(Bool?.self) || type == ObjectIdentifier(Date?.self)
        }
    }
}

extension ColumnValue {
    /// The value as a `where` argument, converted in its own type's context.
    fileprivate var whereArgument: QueryArgument.Source { QueryArgument.Source(self) }
}

/// Arrays and sets: the values `IN %@` matches.
protocol InListConvertible {
    var inListElements: [any ColumnValue] { get }
}

extension Array: InListConvertible where Element: ColumnValue {
    var inListElements: [any ColumnValue] { map { $0 } }
}

extension Set: InListConvertible where Element: ColumnValue {
    var inListElements: [any ColumnValue] { map { $0 } }
}

extension ContiguousArray: InListConvertible where Element: ColumnValue {
    var inListElements: [any ColumnValue] { map { $0 } }
}

/// The escape character of the patterns ``FieldCondition/contains(_:)`` and its kin make.
let likeEscape = "\\"

/// `text` with LIKE's wildcards (`%`, `_`) and the escape character itself escaped, so that a
/// pattern made of it matches the text as it is (`ESCAPE '\\'`).
///
/// ```swift
/// escapingLikeWildcards("50%_off")   // 50\%\_off
/// ```
public func escapingLikeWildcards(_ text: String) -> String {
    // By scalar, not by Character: a `%` followed by a combining mark is one Character to
    // Swift but still a wildcard to the database.
    var escaped = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
        if scalar == "%" || scalar == "_" || scalar == "\\" { escaped.append("\\") }
        escaped.append(scalar)
    }
    return String(escaped)
}

extension QueryArgument {
    /// What the argument is, which decides the SQL around its placeholder: in a format string
    /// (`inCode: false`), a list's length; in a condition built in code (`where("id", .in(ids))`,
    /// key paths, relations' preloads: every `IN` on a column), a list the engine can bind as one
    /// parameter is ``ArgumentShape/oneParameterList`` whatever its length, so that one
    /// statement serves lists of every length.
    func shape(inCode: Bool) -> ArgumentShape {
        switch self {
        case .value(.null): .null
        case .value: .value
        case .list(let list): inCode && list.isBindableAsOneParameter ? .oneParameterList : .list(count: list.count)
        }
    }
}

extension QueryArgument.Source {
    /// The converted argument's shape (see ``QueryArgument/shape(inCode:)``); `nil` when it did
    /// not convert.
    func shape(inCode: Bool) -> ArgumentShape? {
        if case .converted(let argument) = self { return argument.shape(inCode: inCode) }
        return nil
    }

    /// The argument as database values.
    /// - Throws: the value's conversion error.
    func converted() throws -> QueryArgument {
        switch self {
        case .converted(let argument): argument
        case .failed(let error): throw error
        }
    }
}
