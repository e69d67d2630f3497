/// What a query does with a value inside a JSON column (see `SQLDialect.jsonPath(_:keys:_:)`).
@_spi(Engines) public enum JSONPathUse: Hashable, Sendable {
    /// Compares the value at the path with one value (`=`, `<>`, `<`, `<=`, `>`, `>=`: the
    /// operator's SQL spelling), by JSON type: a string with a string (byte by byte, as UTF-8),
    /// a number with a number (a boolean counts as the number 0 or 1); a value of another
    /// type is not equal (`<>` holds), and neither less nor greater. `NULL` (no match) when
    /// the path is missing or holds `null`.
    case comparison(String)
    /// The path is missing or holds JSON `null` (`negated`: neither).
    case isNull(negated: Bool)
    /// One expression to order by: missing and `null` first (as SQL `NULL`), then numbers
    /// (booleans as 0 and 1) by value, then strings byte by byte, then objects and arrays.
    case sortKey
}

/// The SQL of a JSON path expression, with a `?` per parameter: each either a constant the
/// dialect chose (the path, or one of its keys, as text: always bound, never in the SQL) or
/// the compared value (``Parameter/value``), bound as its JSON text (see ``jsonText(_:)``).
@_spi(Engines) public struct JSONPathSQL: Sendable {
    /// Where a parameter's value comes from.
    public enum Parameter: Hashable, Sendable {
        case constant(DatabaseValue)
        case value
    }

    public private(set) var sql = ""
    public private(set) var parameters: [Parameter] = []

    public init() {}

    /// Appends SQL text (no values in it).
    public mutating func append(_ text: String) { sql += text }

    /// Appends a `?` bound to `value`.
    public mutating func append(constant value: DatabaseValue) {
        sql += "?"
        parameters.append(.constant(value))
    }

    /// Appends a `?` bound to the compared value's JSON text.
    public mutating func appendValue() {
        sql += "?"
        parameters.append(.value)
    }
}

/// A value as JSON text, for a comparison with a value inside a JSON column: text as a JSON
/// string, integers and reals as numbers; `NULL`, a non-finite real and bytes as `null`
/// (which nothing compares equal to).
///
/// ```swift
/// jsonText(.text("dark"))   // "\"dark\""
/// jsonText(.integer(3))     // "3"
/// ```
@_spi(Engines) public func jsonText(_ value: DatabaseValue) -> String {
    switch value {
    case .text(let text): return jsonString(text)
    case .integer(let int): return String(int)
    case .real(let double) where double.isFinite: return "\(double)"
    case .real, .null, .blob: return "null"
    }
}
