@_spi(Engines) import ARCore
// Renders a `PredicateNode` to SQL text in which every value — placeholder
// arguments and literals of the format string alike — is a `?` parameter.
// Pure Swift, compiled on its own by the fuzz target.

/// Where the value of one `?` parameter comes from.
package enum ParameterSource: Equatable {
    /// The argument of placeholder `index`.
    case argument(Int)
    /// Element `element` of the array or set argument of placeholder `index`.
    case argumentElement(Int, element: Int)
    /// The whole array or set argument of placeholder `index`, as one value (see
    /// ``ArgumentShape/oneParameterList``).
    case argumentList(Int)
    case integer(Int64)
    case real(Double)
    case text(String)
}

/// What a placeholder's argument is, which decides the SQL around it.
package enum ArgumentShape: Hashable {
    /// A single value.
    case value
    /// `nil`: `= %@` becomes `IS NULL`, `!= %@` becomes `IS NOT NULL`.
    case null
    /// An array or set with this many elements, for `IN %@`.
    case list(count: Int)
    /// An array or set for `IN %@` bound as one parameter, whatever its length (see
    /// `SQLDialect.inList(_:negated:)`): in a condition built in code (whose `IN` is on a
    /// column), a non-empty list of integers.
    case oneParameterList
}

/// Renders predicates, resolving columns and argument shapes through the caller.
package struct PredicateRenderer {
    /// SQL for a column (`"User"."name"`), or a thrown error (unknown column or table).
    package var resolveColumn: (_ qualifier: String?, _ name: String, _ position: Int) throws -> String
    /// The shape of placeholder `index`'s argument (it exists: counts are checked before).
    package var shape: (_ index: Int, _ position: Int) throws -> ArgumentShape
    /// `value LIKE pattern [ESCAPE escape]` (or `NOT LIKE`) in the engine's SQL, with SQLite's meaning.
    package var like: (_ value: String, _ pattern: String, _ escape: String?, _ negated: Bool) -> String
    /// An aggregate over an argument (`*` for `count(*)`) in the engine's SQL.
    package var aggregate: (_ function: String, _ argument: String) -> String
    /// `value IN (…)` (or `NOT IN`) over a list bound as one parameter, in the engine's SQL.
    package var inList: (_ value: String, _ negated: Bool) -> String
    /// The parameters of the SQL rendered so far, in order.
    package private(set) var parameters: [ParameterSource] = []

    /// A renderer; `like`, `aggregate` and `inList` default to SQLite's SQL.
    package init(
        resolveColumn: @escaping (String?, String, Int) throws -> String,
        shape: @escaping (Int, Int) throws -> ArgumentShape,
        like: @escaping (String, String, String?, Bool) -> String = {
            $0 + ($3 ? " NOT LIKE " : " LIKE ") + $1 + ($2.map { " ESCAPE " + $0 } ?? "")
        },
        aggregate: @escaping (String, String) -> String = { "\($0)(\($1))" },
        inList: @escaping (String, Bool) -> String = { $0 + ($1 ? " NOT IN" : " IN") + " (SELECT +value FROM json_each(?))" }
    ) {
        self.resolveColumn = resolveColumn
        self.shape = shape
        self.like = like
        self.aggregate = aggregate
        self.inList = inList
    }

    /// Renders `node`, appending its parameters.
    package mutating func render(_ node: PredicateNode) throws -> String {
        switch node {
        case .and(let terms):
            return try render(terms[...], joinedBy: " AND ")
        case .or(let terms):
            return try render(terms[...], joinedBy: " OR ")
        case .not(let inner):
            return try "NOT (" + render(inner) + ")"
        case .comparison(let left, let op, let right, _):
            try refuseStringSpellingAColumn(left)
            if op == .equal || op == .notEqual {
                let suffix = op == .equal ? " IS NULL" : " IS NOT NULL"
                if try isNull(right) { return try render(left) + suffix }
                if try isNull(left) { return try render(right) + suffix }
            }
            return try render(left) + " " + op.rawValue + " " + render(right)
        case .like(let value, let pattern, let escape, let negated):
            try refuseStringSpellingAColumn(value)
            let value = try render(value)
            let pattern = try render(pattern)
            return like(value, pattern, try escape.map { try render($0) }, negated)
        case .between(let value, let low, let high, let negated):
            try refuseStringSpellingAColumn(value)
            return try render(value) + (negated ? " NOT BETWEEN " : " BETWEEN ") + render(low) + " AND " + render(high)
        case .isNull(let value, let negated):
            try refuseStringSpellingAColumn(value)
            return try render(value) + (negated ? " IS NOT NULL" : " IS NULL")
        case .inList(let value, let list, let negated):
            try refuseStringSpellingAColumn(value)
            let left = try render(value) + (negated ? " NOT IN (" : " IN (")
            switch list {
            case .operands(let operands):
                return try left + operands.map { try render($0) }.joined(separator: ", ") + ")"
            case .placeholder(let index, let position):
                let shape = try shape(index, position)
                if shape == .oneParameterList {
                    let value = try render(value)
                    parameters.append(.argumentList(index))
                    return inList(value, negated)
                }
                guard case .list(let count) = shape else {
                    throw PredicateSyntaxError(
                        "IN %@ needs an array or a set for placeholder \(index + 1), but a single value was given",
                        at: position)
                }
                // `x IN ()` is false whatever x is (NULL too), `x NOT IN ()` true; PostgreSQL has no
                // empty list, so both engines get the constant.
                guard count > 0 else { return negated ? "(1 = 1)" : "(1 = 0)" }
                for element in 0..<count { parameters.append(.argumentElement(index, element: element)) }
                return left + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
            }
        }
    }

    /// `(a OR b OR …)`; a long chain is split into balanced groups, so that
    /// SQLite's expression depth (1000) grows with the log of its length.
    private mutating func render(_ terms: ArraySlice<PredicateNode>, joinedBy separator: String) throws -> String {
        guard terms.count > 16 else {
            return try "(" + terms.map { try render($0) }.joined(separator: separator) + ")"
        }
        let middle = terms.startIndex + terms.count / 2
        return try "(" + render(terms[..<middle], joinedBy: separator) + separator
            + render(terms[middle...], joinedBy: separator) + ")"
    }

    /// Whether the operand is `NULL` (the keyword or a `nil` argument).
    private func isNull(_ operand: PredicateOperand) throws -> Bool {
        switch operand {
        case .null: return true
        case .placeholder(let index, let position): return try shape(index, position) == .null
        default: return false
        }
    }

    /// The seeds' quoting mistake (VinylRecord's README writes `'name' = %@ or 'id' in %@`): a
    /// lone `'name'` is a string in SQL, so the condition compares two values and silently
    /// matches nothing. A string that spells a column of the query, on the left of a
    /// condition, is refused with the fix (`'user'.'name'`, the qualified form, is a column).
    private func refuseStringSpellingAColumn(_ operand: PredicateOperand) throws {
        guard case .text(let text, let position) = operand, (try? resolveColumn(nil, text, position)) != nil else { return }
        throw PredicateSyntaxError(
            "'\(text)' is a string here, not the column: write \(text) or \"\(text)\" for the column "
                + "(a single-quoted name is a column only as 'table'.'column')",
            at: position)
    }

    private func listOutsideIn(_ index: Int, _ position: Int) -> PredicateSyntaxError {
        PredicateSyntaxError(
            "an array or set was given for placeholder \(index + 1), which is not after IN; "
                + "write 'column IN %@' to match any of its elements",
            at: position)
    }

    /// Renders one operand, appending its parameter if it has one.
    package mutating func render(_ operand: PredicateOperand) throws -> String {
        switch operand {
        case .column(let qualifier, let name, let position):
            return try resolveColumn(qualifier, name, position)
        case .placeholder(let index, let position):
            switch try shape(index, position) {
            case .list, .oneParameterList: throw listOutsideIn(index, position)
            case .value, .null: break
            }
            parameters.append(.argument(index))
            return "?"
        case .integer(let value):
            parameters.append(.integer(value))
            return "?"
        case .real(let value):
            parameters.append(.real(value))
            return "?"
        case .text(let value, _):
            parameters.append(.text(value))
            return "?"
        case .null:
            return "NULL"
        case .aggregate(let function, let argument, _):
            guard let argument else { return aggregate(AggregateFunction.count.rawValue, "*") }
            return aggregate(function.rawValue, try render(argument))
        }
    }
}
