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
    /// The argument of placeholder `index` (or its element `element`), bound as its JSON text:
    /// a value compared with one inside a JSON column.
    case argumentJSON(Int, element: Int?)
}

/// What a predicate does with a JSON path (`settings->'theme'`); see `JSONPathUse`.
package enum PredicateJSONUse: Hashable {
    case comparison(ComparisonOperator)
    case isNull(negated: Bool)
    case sortKey
}

/// Where a parameter of a JSON path's SQL takes its value from.
package enum PredicateJSONParameter: Hashable {
    /// Text the dialect chose (a key, the path).
    case text(String)
    /// The compared value, as JSON.
    case value
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

/// The column of a JSON path as the predicate wrote it, for the check that it holds JSON.
package struct JSONPathColumn {
    package var qualifier: String?
    package var name: String
    package var position: Int
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
    /// The SQL of a JSON path inside the JSON column `column` (SQL; `named` as the predicate
    /// wrote it), with a `?` per parameter; throws when the column is known not to hold JSON.
    package var jsonPath: (_ column: String, _ keys: [String], _ use: PredicateJSONUse, _ named: JSONPathColumn) throws
        -> (String, [PredicateJSONParameter])
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
        inList: @escaping (String, Bool) -> String = { $0 + ($1 ? " NOT IN" : " IN") + " (SELECT +value FROM json_each(?))" },
        jsonPath: @escaping (String, [String], PredicateJSONUse, JSONPathColumn) throws -> (String, [PredicateJSONParameter]) = {
            _, _, _, _ in ("NULL", [])
        }
    ) {
        self.jsonPath = jsonPath
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
            try refuseJSONPath(right, "a JSON path goes on the left of a comparison, with a value or placeholder on the right")
            if case .jsonPath(let qualifier, let name, let keys, let position) = left {
                if op == .equal || op == .notEqual, try isNull(right) {
                    return try renderJSON(qualifier, name, keys, position, .isNull(negated: op == .notEqual), value: nil)
                }
                return try renderJSON(qualifier, name, keys, position, .comparison(op), value: jsonValue(right))
            }
            try refuseStringSpellingAColumn(left)
            if op == .equal || op == .notEqual {
                let suffix = op == .equal ? " IS NULL" : " IS NOT NULL"
                if try isNull(right) { return try render(left) + suffix }
                if try isNull(left) { return try render(right) + suffix }
            }
            return try render(left) + " " + op.rawValue + " " + render(right)
        case .like(let value, let pattern, let escape, let negated):
            for operand in [value, pattern] + (escape.map { [$0] } ?? []) {
                try refuseJSONPath(operand, "LIKE does not take a JSON path: compare it with =, !=, <, <=, >, >=, IN or IS NULL")
            }
            try refuseStringSpellingAColumn(value)
            let value = try render(value)
            let pattern = try render(pattern)
            return like(value, pattern, try escape.map { try render($0) }, negated)
        case .between(let value, let low, let high, let negated):
            for operand in [value, low, high] {
                try refuseJSONPath(operand, "BETWEEN does not take a JSON path: compare it with >= and <= instead")
            }
            try refuseStringSpellingAColumn(value)
            return try render(value) + (negated ? " NOT BETWEEN " : " BETWEEN ") + render(low) + " AND " + render(high)
        case .isNull(let value, let negated):
            if case .jsonPath(let qualifier, let name, let keys, let position) = value {
                return try renderJSON(qualifier, name, keys, position, .isNull(negated: negated), value: nil)
            }
            try refuseStringSpellingAColumn(value)
            return try render(value) + (negated ? " IS NOT NULL" : " IS NULL")
        case .inList(let value, let list, let negated):
            if case .operands(let operands) = list {
                for operand in operands { try refuseJSONPath(operand, "a JSON path cannot be in an IN list") }
            }
            if case .jsonPath(let qualifier, let name, let keys, let position) = value {
                return try renderJSONInList(qualifier, name, keys, position, list, negated: negated)
            }
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

    private func refuseJSONPath(_ operand: PredicateOperand, _ message: String) throws {
        if case .jsonPath(_, _, _, let position) = operand { throw PredicateSyntaxError(message, at: position) }
    }

    /// The SQL of a JSON path used as `use`, with `value` (the right side of a comparison) bound as JSON.
    private mutating func renderJSON(
        _ qualifier: String?, _ name: String, _ keys: [String], _ position: Int, _ use: PredicateJSONUse,
        value source: ParameterSource?
    ) throws -> String {
        for key in keys where key.unicodeScalars.contains(where: { $0 == "\"" || $0 == "\u{0}" }) {
            throw PredicateSyntaxError("a JSON path key cannot hold a double quote or a NUL character (SQLite's paths cannot)", at: position)
        }
        let column = try resolveColumn(qualifier, name, position)
        let (sql, pieces) = try jsonPath(column, keys, use, JSONPathColumn(qualifier: qualifier, name: name, position: position))
        for piece in pieces {
            switch piece {
            case .text(let text): parameters.append(.text(text))
            case .value:
                guard let source else { preconditionFailure("a JSON path's SQL binds a value it was not given") }
                parameters.append(source)
            }
        }
        return sql
    }

    /// A compared value, bound as JSON: a placeholder's argument, or a literal.
    private func jsonValue(_ operand: PredicateOperand) throws -> ParameterSource {
        switch operand {
        case .placeholder(let index, let position):
            switch try shape(index, position) {
            case .list, .oneParameterList: throw listOutsideIn(index, position)
            case .value, .null: return .argumentJSON(index, element: nil)
            }
        case .integer(let value): return .text(String(value))
        case .real(let value): return .text(value.isFinite ? "\(value)" : "null")
        case .text(let value, _): return .text(jsonString(value))
        case .null: return .text("null")
        case .column(_, _, let position), .aggregate(_, _, let position), .jsonPath(_, _, _, let position):
            throw PredicateSyntaxError("a JSON path is compared with a value or a placeholder, not a column", at: position)
        }
    }

    /// `path IN (a, b)` as `(path = a OR path = b)`, each compared by JSON type.
    private mutating func renderJSONInList(
        _ qualifier: String?, _ name: String, _ keys: [String], _ position: Int, _ list: PredicateList, negated: Bool
    ) throws -> String {
        var terms: [String] = []
        switch list {
        case .operands(let operands):
            for operand in operands {
                terms.append(try renderJSON(qualifier, name, keys, position, .comparison(.equal), value: jsonValue(operand)))
            }
        case .placeholder(let index, let placeholderPosition):
            guard case .list(let count) = try shape(index, placeholderPosition) else {
                throw PredicateSyntaxError(
                    "IN %@ needs an array or a set for placeholder \(index + 1), but a single value was given", at: placeholderPosition)
            }
            for element in 0..<count {
                terms.append(try renderJSON(
                    qualifier, name, keys, position, .comparison(.equal), value: .argumentJSON(index, element: element)))
            }
        }
        guard !terms.isEmpty else {
            // x IN () is false; x NOT IN () holds where there is a value (a missing key or
            // `null` matches only null tests), as `JSONCondition.notIn([])` says.
            guard negated else { return "(1 = 0)" }
            return "(" + (try renderJSON(qualifier, name, keys, position, .isNull(negated: true), value: nil)) + ")"
        }
        let any = "(" + terms.joined(separator: " OR ") + ")"
        return negated ? "NOT " + any : any
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
        case .jsonPath(let qualifier, let name, let keys, let position):
            // An order or group key: sorts as SQLite sorts what json_extract gives.
            return try renderJSON(qualifier, name, keys, position, .sortKey, value: nil)
        }
    }
}
