@_spi(Engines) import ARCore

/// A value that a value inside a JSON column can be compared with: a string, a number, a
/// boolean, or an optional of one (`nil` is JSON `null`, and a missing key).
///
/// ```swift
/// User.query().where(\.settings, "theme", .equal("dark"))
/// ```
public protocol JSONComparable: ColumnValue {}

extension String: JSONComparable {}
extension Int: JSONComparable {}
extension Int64: JSONComparable {}
extension Int32: JSONComparable {}
extension Double: JSONComparable {}
extension Bool: JSONComparable {}
extension Optional: JSONComparable where Wrapped: JSONComparable {}

/// A condition on the value at a path inside a JSON column: `where(\.settings, "theme", .equal("dark"))`.
///
/// Values are compared by JSON type, the same on every engine: a string with a string (byte
/// by byte, as UTF-8: `"B" < "a"`), a number with a number (`2 < 10`; a boolean counts as
/// the number 0 or 1, as SQLite's `json_extract` gives it). A value of another type is not
/// equal (`notEqual` holds) and neither less nor greater. A missing key and JSON `null` match
/// only ``isNull`` (and `equal` of an optional holding `nil`); every other condition leaves them out, as SQL leaves
/// out `NULL`.
public struct JSONCondition {
    enum Form {
        case comparison(ComparisonOperator, DatabaseValue)
        case list([DatabaseValue], negated: Bool)
        case null(negated: Bool)
    }

    let form: Form
    /// A value that did not convert, reported by the terminal call.
    let failure: ActiveRecordError?

    private init(_ form: Form, failure: ActiveRecordError? = nil) {
        self.form = form
        self.failure = failure
    }

    private static func comparison(_ op: ComparisonOperator, _ value: some JSONComparable) -> JSONCondition {
        do {
            return JSONCondition(.comparison(op, try value.toSQL()))
        } catch {
            return JSONCondition(.null(negated: false), failure: error as? ActiveRecordError ?? ActiveRecordError(.invalidValue, "\(error)"))
        }
    }

    private static func list<S: Sequence>(_ values: S, negated: Bool) -> JSONCondition where S.Element: JSONComparable {
        do {
            return JSONCondition(.list(try values.map { try $0.toSQL() }, negated: negated))
        } catch {
            return JSONCondition(.null(negated: false), failure: error as? ActiveRecordError ?? ActiveRecordError(.invalidValue, "\(error)"))
        }
    }

    /// The value equals `value` (`nil`: the key is missing or holds `null`).
    public static func equal(_ value: some JSONComparable) -> JSONCondition { comparison(.equal, value) }
    /// The value is there and differs from `value` (`nil`: the key is there and not `null`).
    public static func notEqual(_ value: some JSONComparable) -> JSONCondition { comparison(.notEqual, value) }
    /// The value is less than `value`, of its JSON type.
    public static func lessThan(_ value: some JSONComparable) -> JSONCondition { comparison(.less, value) }
    /// The value is less than or equal to `value`, of its JSON type.
    public static func lessThanOrEqual(_ value: some JSONComparable) -> JSONCondition { comparison(.lessOrEqual, value) }
    /// The value is greater than `value`, of its JSON type.
    public static func greaterThan(_ value: some JSONComparable) -> JSONCondition { comparison(.greater, value) }
    /// The value is greater than or equal to `value`, of its JSON type.
    public static func greaterThanOrEqual(_ value: some JSONComparable) -> JSONCondition { comparison(.greaterOrEqual, value) }
    /// The value equals one of `values` (an empty list matches nothing).
    public static func `in`<S: Sequence>(_ values: S) -> JSONCondition where S.Element: JSONComparable { list(values, negated: false) }
    /// The value is there and equals none of `values` (an empty list matches every row with a value).
    public static func notIn<S: Sequence>(_ values: S) -> JSONCondition where S.Element: JSONComparable { list(values, negated: true) }
    /// The key is missing, or holds JSON `null`.
    public static var isNull: JSONCondition { JSONCondition(.null(negated: false)) }
    /// The key is there and does not hold `null`.
    public static var isNotNull: JSONCondition { JSONCondition(.null(negated: true)) }

    /// The predicate tree on `path` and its arguments.
    func predicate(on path: PredicateOperand) -> (PredicateNode, QueryArgument.Sources) {
        switch form {
        case .comparison(let op, .null) where op == .equal || op == .notEqual:
            return (.isNull(path, negated: op == .notEqual), QueryArgument.Sources())
        case .comparison(let op, let value):
            return (.comparison(path, op, .placeholder(index: 0, position: 0), position: 0),
                    QueryArgument.Sources(.converted(.value(value))))
        case .null(let negated):
            return (.isNull(path, negated: negated), QueryArgument.Sources())
        case .list(let values, let negated):
            guard let first = values.first else {
                // x IN () is false, x NOT IN () holds for every row with a value.
                return negated ? (.isNull(path, negated: true), QueryArgument.Sources())
                    : (.comparison(.integer(1), .equal, .integer(0), position: 0), QueryArgument.Sources())
            }
            let terms = values.indices.map { index in
                PredicateNode.comparison(path, .equal, .placeholder(index: index, position: 0), position: 0)
            }
            let sources = QueryArgument.Sources(.converted(.value(first)), values.dropFirst().map { .converted(.value($0)) })
            let any = PredicateNode.or(terms)
            // NOT of a missing key's NULL is NULL: left out, as `isNull` says.
            return (negated ? .and([.isNull(path, negated: true), .not(any)]) : any, sources)
        }
    }
}

/// The keys of a dotted path (`"notifications.email"`), each non-empty.
func jsonKeys(dotted path: String) throws -> [String] {
    let keys = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    guard !keys.contains(where: \.isEmpty) else {
        throw ActiveRecordError(
            .invalidPredicate,
            "the JSON path \"\(path)\" has an empty key: write keys separated by single dots (\"notifications.email\"), "
                + "or pass an array of keys ([\"a.b\", \"\"]) for keys that hold dots or are empty")
    }
    return keys
}

extension Query {
    /// Adds a condition on the value at a path inside a JSON (`Codable`) column.
    ///
    /// ```swift
    /// User.query().where(\.settings, "theme", .equal("dark"))
    /// User.query().where(\.settings, "notifications.email", .equal(true))
    /// User.query().where(\.settings, "rank", .greaterThan(3))
    /// ```
    /// The SQL reads the value with `json_extract` on SQLite and `->` on PostgreSQL, the keys
    /// and the value bound, and compares it by JSON type (see ``JSONCondition``): the same rows
    /// on every engine. A key names an object's member only: `"0"` is never an array index.
    /// - Parameters:
    ///   - keyPath: the JSON column.
    ///   - path: object keys separated by dots (`"notifications.email"`); for a key that holds a
    ///     dot, or is empty, use `where(_:_:_:)` with an array of keys with an array of keys.
    ///   - condition: the condition on the value found there.
    /// - Note: the terminal call throws `.invalidPredicate` for an empty key, a key holding
    ///   a double quote (which SQLite's paths cannot name), or a column that is not JSON
    ///   ("name is not a JSON column": a `Codable` type with its own `toSQL` is not).
    public consuming func `where`<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, _ path: String, _ condition: JSONCondition
    ) -> Query {
        let keys: [String]
        do {
            keys = try jsonKeys(dotted: path)
        } catch {
            return with { $0.clauses.add(.failed(error as? ActiveRecordError ?? ActiveRecordError(.invalidPredicate, "\(error)"))) }
        }
        return self.where(keyPath, keys, condition)
    }

    /// Adds a condition on the value at a path inside a JSON column, its keys given one by one
    /// (each exactly, dots included): `where(\.settings, ["notifications", "email"], .equal(true))`.
    public consuming func `where`<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, _ keys: [String], _ condition: JSONCondition
    ) -> Query {
        with { copy in
            do {
                if let failure = condition.failure { throw failure }
                guard !keys.isEmpty else {
                    throw ActiveRecordError(.invalidPredicate, "a JSON path needs at least one key")
                }
                let column = try KeyPathColumns.columnName(keyPath)
                let path = PredicateOperand.jsonPath(qualifier: nil, name: column, keys: keys, position: 0)
                let (node, arguments) = condition.predicate(on: path)
                copy.clauses.add(.tree(node, arguments: arguments))
            } catch {
                copy.clauses.add(.failed(error as? ActiveRecordError ?? ActiveRecordError(.invalidPredicate, "\(error)")))
            }
        }
    }

    /// Orders by the value at a path inside a JSON column: missing keys and `null` first (last
    /// when descending), then numbers (booleans as 0 and 1), then strings byte by byte, then
    /// objects and arrays. Objects and arrays come in each engine's own order, and equal values
    /// in no set order (on PostgreSQL, `1` and `1.0`, or `true` and `1`, by their spelling):
    /// add `.order(by: "id")` (or use ``orderedStably()``) for one order on every engine.
    ///
    /// ```swift
    /// User.query().order(by: \.settings, "rank", ascending: false)
    /// ```
    /// The same order in the predicate language: `order(by: "settings->'rank'")`.
    public consuming func order<Value: ColumnValue>(
        by keyPath: KeyPath<Record, Value>, _ path: String, ascending: Bool = true
    ) -> Query {
        do {
            return order(by: keyPath, try jsonKeys(dotted: path), ascending: ascending)
        } catch {
            return with { $0.clauses.add(.failed(error as? ActiveRecordError ?? ActiveRecordError(.invalidPredicate, "\(error)"))) }
        }
    }

    /// Orders by the value at a path inside a JSON column, its keys given one by one.
    public consuming func order<Value: ColumnValue>(
        by keyPath: KeyPath<Record, Value>, _ keys: [String], ascending: Bool = true
    ) -> Query {
        do {
            guard !keys.isEmpty else { throw ActiveRecordError(.invalidPredicate, "a JSON path needs at least one key") }
            let column = try KeyPathColumns.columnName(keyPath)
            // The predicate language's spelling, which the compiler parses back: the keys become
            // literals, bound like every literal.
            let expression = quoteSQL(column, with: "\"") + keys.map { "->" + quoteSQL($0, with: "'") }.joined()
            return order(by: expression, ascending: ascending)
        } catch {
            return with { $0.clauses.add(.failed(error as? ActiveRecordError ?? ActiveRecordError(.invalidPredicate, "\(error)"))) }
        }
    }
}
