@_spi(Engines) import ARCore

/// A condition written with key paths: `\.age > 30`, `\.name == "Alex" || \.note == nil`.
///
/// ```swift
/// let adults = try User.query().where(\.age >= 18 && !(\.name == "root")).fetch()
/// let some = try User.query().where(\.name, .in(["Alex", "John"])).fetch()
/// ```
///
/// A key path names a `@Column` property; it is mapped to its column once per
/// key path (then cached) by writing a probe value through it on a scratch
/// record. Types for which no probe value can be made (a `Codable` struct
/// without defaults, say) give a clear error at the terminal call: use the
/// column name there.
public struct KeyPathCondition<Root: Model> {
    indirect enum Node {
        case leaf(column: () throws -> String, FieldCondition)
        case and(Node, Node)
        case or(Node, Node)
        case not(Node)
    }

    let node: Node

    init(_ node: Node) { self.node = node }

    init<Value: ColumnValue>(_ keyPath: KeyPath<Root, Value>, _ condition: FieldCondition) {
        node = .leaf(column: { try KeyPathColumns.columnName(keyPath) }, condition)
    }

    /// Both conditions.
    public static func && (lhs: KeyPathCondition, rhs: KeyPathCondition) -> KeyPathCondition { .init(.and(lhs.node, rhs.node)) }
    /// Either condition.
    public static func || (lhs: KeyPathCondition, rhs: KeyPathCondition) -> KeyPathCondition { .init(.or(lhs.node, rhs.node)) }
    /// The opposite condition.
    public static prefix func ! (condition: KeyPathCondition) -> KeyPathCondition { .init(.not(condition.node)) }

    /// The predicate tree and its arguments, placeholders numbered from `start`.
    func predicate(from start: Int = 0) throws -> (PredicateNode, QueryArgument.Sources) {
        switch node {
        case .leaf(let column, let condition):
            let (key, arguments) = condition.predicate(on: try column())
            return (FieldTree.node(key).shiftingPlaceholders(by: start), arguments)
        case .and(let left, let right), .or(let left, let right):
            let (leftTree, leftArguments) = try KeyPathCondition(left).predicate(from: start)
            let (rightTree, rightArguments) = try KeyPathCondition(right).predicate(from: start + leftArguments.count)
            var arguments = leftArguments
            for argument in rightArguments { arguments.append(argument) }
            if case .and = node { return (.and([leftTree, rightTree]), arguments) }
            return (.or([leftTree, rightTree]), arguments)
        case .not(let inner):
            let (tree, arguments) = try KeyPathCondition(inner).predicate(from: start)
            return (.not(tree), arguments)
        }
    }
}

/// `\.age == 30` (`nil` matches `NULL`).
public func == <Root: Model, Value: ColumnValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> KeyPathCondition<Root> {
    KeyPathCondition(lhs, .equal(rhs))
}
/// `\.age != 30` (`nil` matches non-`NULL`).
public func != <Root: Model, Value: ColumnValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> KeyPathCondition<Root> {
    KeyPathCondition(lhs, .notEqual(rhs))
}
/// `\.age < 30`.
public func < <Root: Model, Value: ColumnValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> KeyPathCondition<Root> {
    KeyPathCondition(lhs, .lessThan(rhs))
}
/// `\.age <= 30`.
public func <= <Root: Model, Value: ColumnValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> KeyPathCondition<Root> {
    KeyPathCondition(lhs, .lessThanOrEqual(rhs))
}
/// `\.age > 30`.
public func > <Root: Model, Value: ColumnValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> KeyPathCondition<Root> {
    KeyPathCondition(lhs, .greaterThan(rhs))
}
/// `\.age >= 30`.
public func >= <Root: Model, Value: ColumnValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> KeyPathCondition<Root> {
    KeyPathCondition(lhs, .greaterThanOrEqual(rhs))
}

extension Query {
    /// Adds a condition written with key paths; ANDed with the others like every `where`.
    ///
    /// ```swift
    /// User.query().where(\.age > 30 && \.name != "root")
    /// ```
    public consuming func `where`(_ condition: KeyPathCondition<Record>) -> Query {
        with { copy in
            do {
                let (node, arguments) = try condition.predicate()
                copy.clauses.conditions.append(.tree(node, arguments: arguments))
            } catch let error as ActiveRecordError {
                copy.clauses.conditions.append(.failed(error))
            } catch {
                copy.clauses.conditions.append(.failed(ActiveRecordError(.invalidPredicate, "\(error)")))
            }
        }
    }

    /// Adds a condition on the column of a key path: `.where(\.name, .like("A%"))`.
    public consuming func `where`<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>, _ condition: FieldCondition) -> Query {
        self.where(KeyPathCondition(keyPath, condition))
    }

    /// Orders by the column of a key path.
    public consuming func order<Value: ColumnValue>(by keyPath: KeyPath<Record, Value>, ascending: Bool = true) -> Query {
        do {
            return order(by: try KeyPathColumns.columnName(keyPath), ascending: ascending)
        } catch {
            return with { $0.clauses.conditions.append(.failed(error as? ActiveRecordError ?? ActiveRecordError(.invalidPredicate, "\(error)"))) }
        }
    }
}

extension PredicateNode {
    /// The same tree with every placeholder index moved by `offset`.
    func shiftingPlaceholders(by offset: Int) -> PredicateNode {
        guard offset != 0 else { return self }
        func shift(_ operand: PredicateOperand) -> PredicateOperand {
            if case .placeholder(let index, let position) = operand { return .placeholder(index: index + offset, position: position) }
            return operand
        }
        switch self {
        case .and(let terms): return .and(terms.map { $0.shiftingPlaceholders(by: offset) })
        case .or(let terms): return .or(terms.map { $0.shiftingPlaceholders(by: offset) })
        case .not(let inner): return .not(inner.shiftingPlaceholders(by: offset))
        case .comparison(let left, let op, let right, let position): return .comparison(shift(left), op, shift(right), position: position)
        case .like(let value, let pattern, let escape, let negated):
            return .like(shift(value), shift(pattern), escape: escape.map(shift), negated: negated)
        case .between(let value, let low, let high, let negated): return .between(shift(value), shift(low), shift(high), negated: negated)
        case .isNull(let value, let negated): return .isNull(shift(value), negated: negated)
        case .inList(let value, .placeholder(let index, let position), let negated):
            return .inList(shift(value), .placeholder(index: index + offset, position: position), negated: negated)
        case .inList(let value, .operands(let operands), let negated):
            return .inList(shift(value), .operands(operands.map(shift)), negated: negated)
        }
    }
}
