import ARCore

/// A condition on one column, for ``Query/where(_:_:)``.
///
/// ```swift
/// User.query().where("age", .greaterThan(30))
/// User.query().where("id", .in([1, 15]))
/// User.query().where("createdAt", .between(monday, friday))
/// User.query().where("avatar", .isNull)
/// ```
public struct FieldCondition {
    enum Kind {
        case comparison(ComparisonOperator, (any ColumnValue)?)
        case like(String, negated: Bool)
        case list([any ColumnValue], negated: Bool)
        case between((any ColumnValue)?, (any ColumnValue)?)
        case null(negated: Bool)
    }

    let kind: Kind

    /// `column = value`; `nil` matches `NULL` (`IS NULL`).
    public static func equal(_ value: (any ColumnValue)?) -> FieldCondition { .init(kind: .comparison(.equal, value)) }
    /// `column <> value`; `nil` matches non-`NULL` (`IS NOT NULL`).
    public static func notEqual(_ value: (any ColumnValue)?) -> FieldCondition { .init(kind: .comparison(.notEqual, value)) }
    /// `column < value`.
    public static func lessThan(_ value: some ColumnValue) -> FieldCondition { .init(kind: .comparison(.less, value)) }
    /// `column <= value`.
    public static func lessThanOrEqual(_ value: some ColumnValue) -> FieldCondition { .init(kind: .comparison(.lessOrEqual, value)) }
    /// `column > value`.
    public static func greaterThan(_ value: some ColumnValue) -> FieldCondition { .init(kind: .comparison(.greater, value)) }
    /// `column >= value`.
    public static func greaterThanOrEqual(_ value: some ColumnValue) -> FieldCondition {
        .init(kind: .comparison(.greaterOrEqual, value))
    }
    /// `column IN (…)`: any array or set of values; an empty one matches nothing.
    public static func `in`<S: Sequence>(_ values: S) -> FieldCondition where S.Element: ColumnValue {
        .init(kind: .list(values.map { $0 }, negated: false))
    }
    /// `column NOT IN (…)`: an empty array or set matches everything.
    public static func notIn<S: Sequence>(_ values: S) -> FieldCondition where S.Element: ColumnValue {
        .init(kind: .list(values.map { $0 }, negated: true))
    }
    /// `column LIKE pattern` (`%` any run, `_` one character; ASCII case-insensitive, as in SQLite).
    public static func like(_ pattern: String) -> FieldCondition { .init(kind: .like(pattern, negated: false)) }
    /// `column NOT LIKE pattern`.
    public static func notLike(_ pattern: String) -> FieldCondition { .init(kind: .like(pattern, negated: true)) }
    /// `column BETWEEN low AND high`, bounds included.
    public static func between(_ low: some ColumnValue, _ high: some ColumnValue) -> FieldCondition {
        .init(kind: .between(low, high))
    }
    /// `column IS NULL`.
    public static var isNull: FieldCondition { .init(kind: .null(negated: false)) }
    /// `column IS NOT NULL`.
    public static var isNotNull: FieldCondition { .init(kind: .null(negated: true)) }

    /// The condition as a predicate tree on `column`, with its arguments.
    func predicate(on column: String) -> (PredicateNode, [QueryArgument.Source]) {
        let operand = PredicateOperand.column(qualifier: nil, name: column, position: 0)
        switch kind {
        case .comparison(let op, let value):
            return (.comparison(operand, op, .placeholder(index: 0, position: 0), position: 0), [.value(value)])
        case .like(let pattern, let negated):
            return (.like(operand, .placeholder(index: 0, position: 0), negated: negated), [.value(pattern)])
        case .list(let values, let negated):
            return (.inList(operand, .placeholder(index: 0, position: 0), negated: negated), [.list(values)])
        case .between(let low, let high):
            return (
                .between(operand, .placeholder(index: 0, position: 0), .placeholder(index: 1, position: 0), negated: false),
                [.value(low), .value(high)])
        case .null(let negated):
            return (.isNull(operand, negated: negated), [])
        }
    }
}

/// An argument for a predicate placeholder given as database values (the C API's way).
public enum QueryArgument: Sendable, Equatable {
    /// One value, for a comparison, `LIKE` or `BETWEEN` bound.
    case value(DatabaseValue)
    /// Several values, for `IN %@`.
    case list([DatabaseValue])

    /// Where an argument comes from before it is converted (at the terminal call).
    enum Source {
        case value((any ColumnValue)?)
        case list([any ColumnValue])
        case converted(QueryArgument)

        init(_ value: (any ColumnValue)?) {
            if let list = value as? any InListConvertible {
                self = .list(list.inListElements)
            } else {
                self = .value(value)
            }
        }
    }
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
