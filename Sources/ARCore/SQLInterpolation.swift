#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SQL written as a string literal whose interpolated values are bound, never spliced.
///
/// Every `\(value)` becomes a `?` placeholder with the value bound to it (PostgreSQL's engine
/// numbers them `$1`, `$2`, … as it does for all of the library's SQL); a `String` is a value
/// like any other, and so is an array (one value, JSON, as an array column stores it: write
/// `\(list:)` for `IN`). Only three markers put text into the SQL, each by its name:
///
/// - `\(ident: name)`: an identifier (a table or column name), double-quoted (a `"` inside it
///   doubled); an empty name, or one holding a NUL, is an error when the SQL runs.
/// - `\(list: values)`: `(?, ?, …)` with each value bound, for `IN`; an empty list is an error
///   when the SQL runs (SQL has no `IN ()`).
/// - `\(fragment)`, another ``SQL``: its text and its bound values, in place. Raw text, written
///   by the program and never from input, is a fragment made by ``init(sql:arguments:)``.
///
/// ```swift
/// let minimum = 30
/// let name = "Alex'; DROP TABLE \"User\"; --"
/// let rows = try db.rows("SELECT \(ident: "name") FROM \(ident: "User") WHERE age > \(minimum) OR name = \(name)")
/// // SELECT "name" FROM "User" WHERE age > ? OR name = ?      bound: 30, 'Alex''; DROP …'
///
/// let adults: SQL = "age >= \(18)"
/// let ids: [Int64] = [1, 2, 3]
/// let chosen = try User.fetch(sql: "SELECT * FROM \(ident: "User") WHERE \(adults) AND id IN \(list: ids)")
/// ```
///
/// `db.rows(_:)`, `db.execute(_:)`, `Model.fetch(sql:)` and a migration's `execute(_:)` take
/// it: a string literal passed to them is an `SQL`, with or without an arguments array (which
/// binds the literal's `?` placeholders when it interpolates no value; values interpolated AND
/// arguments are `.misuse`). The `String` forms take a `String` variable and its arguments.
public struct SQL: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The SQL text, with a `?` placeholder for each bound value.
    public private(set) var sql: String
    /// The values bound to the placeholders, in order.
    public private(set) var arguments: [DatabaseValue]
    /// The first marker that could not be written (an empty identifier, a value that cannot be
    /// stored), thrown when the SQL runs: an interpolation cannot throw.
    private var failure: ActiveRecordError?

    /// A fragment of raw SQL text, with its `?` placeholders bound to `arguments`: the explicit
    /// way to put text made by the program (never input) into an ``SQL``.
    ///
    /// ```swift
    /// let order = SQL(sql: #"ORDER BY "name" DESC"#)
    /// let rows = try db.rows("SELECT \"name\" FROM \"User\" WHERE age > \(30) \(order)")
    /// ```
    public init(sql: String, arguments: [DatabaseValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    /// SQL text without interpolation, as written.
    public init(stringLiteral value: String) {
        self.init(sql: value)
    }

    /// SQL built by ``StringInterpolation``.
    public init(stringInterpolation: StringInterpolation) {
        self = stringInterpolation.built
    }

    /// The SQL text, with its placeholders (never the values).
    public var description: String { sql }

    /// The text and the arguments to run.
    /// - Throws: the first marker's error (`.invalidValue`: an empty identifier, an empty list,
    ///   a value that cannot be stored).
    package func resolved() throws -> (sql: String, arguments: [DatabaseValue]) {
        if let failure { throw failure }
        return (sql, arguments)
    }

    /// The text and the arguments to run, given an arguments array as well (`db.rows("… ?", [x])`):
    /// the array binds the `?` written in a literal that interpolates no value; a literal that
    /// interpolates values as well as an array is a misuse (whose `?` would be which is not
    /// clear: the values are numbered in the order written).
    /// - Throws: what ``resolved()`` throws; `.misuse` for values both interpolated and given.
    package func resolved(with given: some Collection<DatabaseValue>, in call: String) throws -> (sql: String, arguments: [DatabaseValue]) {
        let (text, bound) = try resolved()
        if given.isEmpty { return (text, bound) }
        if bound.isEmpty { return (text, Array(given)) }
        throw ActiveRecordError(
            .misuse,
            "\(call): the SQL interpolates \(bound.count) value(s) with \\(…) and is given \(given.count) argument(s) as well; "
                + "the two cannot be numbered together: interpolate every value (\\(value), bound) and pass no arguments, "
                + "or write ? placeholders and pass the arguments",
            sql: text)
    }

    /// Appends `other`'s text and values (and its error, when this has none yet).
    mutating func append(_ other: SQL) {
        sql += other.sql
        arguments += other.arguments
        if failure == nil { failure = other.failure }
    }

    mutating func fail(_ error: ActiveRecordError) {
        if failure == nil { failure = error }
    }

    /// How a literal's interpolations are written: values bound, identifiers and lists by
    /// their markers (see ``SQL``).
    public struct StringInterpolation: StringInterpolationProtocol {
        var built = SQL(sql: "")

        /// Room for the literal's text.
        public init(literalCapacity: Int, interpolationCount: Int) {
            built.sql.reserveCapacity(literalCapacity + 2 * interpolationCount)
            built.arguments.reserveCapacity(interpolationCount)
        }

        /// The literal's text, as written.
        public mutating func appendLiteral(_ literal: String) {
            built.sql += literal
        }

        /// A value, bound: `\(age)` writes `?` and binds `age` (`NULL` for `nil`).
        ///
        /// ```swift
        /// let rows = try db.rows("SELECT * FROM \"User\" WHERE \"name\" = \(name)")
        /// ```
        public mutating func appendInterpolation<Value: ColumnValue>(_ value: Value) {
            do {
                built.arguments.append(try value.toSQL())
            } catch let error as ActiveRecordError {
                built.fail(error)
                built.arguments.append(.null)
            } catch {
                built.fail(ActiveRecordError(.invalidValue, "a value interpolated in SQL cannot be stored: \(error)"))
                built.arguments.append(.null)
            }
            built.sql += "?"
        }

        /// A value as the database stores it, bound.
        public mutating func appendInterpolation(_ value: DatabaseValue) {
            built.arguments.append(value)
            built.sql += "?"
        }

        /// An identifier, double-quoted: `\(ident: "User")` writes `"User"`, `\(ident: #"a"b"#)`
        /// writes `"a""b"`. An empty name, or one with a NUL, makes the SQL fail when it runs
        /// (`.invalidValue`).
        ///
        /// ```swift
        /// let rows = try db.rows("SELECT \(ident: column) FROM \(ident: table)")
        /// ```
        public mutating func appendInterpolation(ident name: String) {
            if name.isEmpty || name.utf8.contains(0) {
                built.fail(ActiveRecordError(
                    .invalidValue,
                    "an identifier interpolated with \\(ident:) is \(name.isEmpty ? "empty" : "holding a NUL character"): "
                        + "SQL has no such name; check where the name comes from (and prefer names the program "
                        + "chooses over input)"))
            }
            built.sql += quoteIdentifier(name)
        }

        /// A list for `IN`: `\(list: [1, 2, 3])` writes `(?, ?, ?)` and binds each value. An
        /// empty list makes the SQL fail when it runs (`.invalidValue`): SQL has no `IN ()`.
        ///
        /// ```swift
        /// let rows = try db.rows("SELECT * FROM \"User\" WHERE \"id\" IN \(list: ids)")
        /// ```
        public mutating func appendInterpolation<Values: Sequence>(list values: Values) where Values.Element: ColumnValue {
            var count = 0
            built.sql += "("
            for value in values {
                if count > 0 { built.sql += ", " }
                appendInterpolation(value)
                count += 1
            }
            built.sql += ")"
            if count == 0 {
                built.fail(ActiveRecordError(
                    .invalidValue,
                    "an empty list interpolated with \\(list:) would write IN (), which SQL does not allow: "
                        + "check for an empty list before running the query (IN an empty list matches nothing)"))
            }
        }

        /// Another ``SQL``: its text and bound values, in place.
        ///
        /// ```swift
        /// let adults: SQL = "\"age\" >= \(18)"
        /// let rows = try db.rows("SELECT * FROM \"User\" WHERE \(adults)")
        /// ```
        public mutating func appendInterpolation(_ fragment: SQL) {
            built.append(fragment)
        }
    }

    /// Two SQL texts one after the other, with their bound values.
    ///
    /// ```swift
    /// var query: SQL = "SELECT * FROM \"User\""
    /// if let minimum { query += " WHERE \"age\" > \(minimum)" }
    /// ```
    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        var joined = lhs
        joined.append(rhs)
        return joined
    }

    /// Appends `rhs`'s text and bound values.
    public static func += (lhs: inout SQL, rhs: SQL) {
        lhs.append(rhs)
    }

    /// The fragments with `separator` between them, for a list of conditions or columns.
    ///
    /// ```swift
    /// let conditions: [SQL] = ["\"age\" > \(30)", "\"name\" <> \(name)"]
    /// let rows = try db.rows("SELECT * FROM \"User\" WHERE \(SQL.joined(conditions, separator: " AND "))")
    /// ```
    public static func joined(_ fragments: [SQL], separator: String) -> SQL {
        var joined = SQL(sql: "")
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { joined.sql += separator }
            joined.append(fragment)
        }
        return joined
    }
}

extension Database {
    /// Runs one SQL query written with interpolation, its values bound (see ``SQL``), and
    /// returns every row.
    ///
    /// ```swift
    /// let rows = try db.rows("SELECT \(ident: "name") FROM \(ident: "User") WHERE \"age\" > \(minimum)")
    /// // SELECT "name" FROM "User" WHERE "age" > ?      (minimum bound)
    /// ```
    /// A string literal given alone is an ``SQL``: `\(value)` in it is bound, never spliced.
    /// - Throws: `.invalidValue` for a marker that could not be written (an empty identifier or
    ///   list), and the engine's errors, with the SQL text.
    public func rows(_ sql: SQL) throws -> [[DatabaseValue]] {
        let (text, arguments) = try sql.resolved()
        return try rows(text, arguments)
    }

    /// Runs one SQL statement written with interpolation, its values bound (see ``SQL``).
    ///
    /// ```swift
    /// try db.execute("UPDATE \(ident: "User") SET \"age\" = \(31) WHERE \"name\" = \(name)")
    /// ```
    /// Observers count it as changing every table, as ``execute(_:_:)-(String,_)``.
    /// - Throws: `.invalidValue` for a marker that could not be written (an empty identifier or
    ///   list), and the engine's errors, with the SQL text.
    public func execute(_ sql: SQL) throws {
        let (text, arguments) = try sql.resolved()
        try execute(text, arguments)
    }

    /// ``rows(_:)-(SQL)`` given an arguments array too: a string literal with arguments is an
    /// ``SQL`` (a `String` variable goes to ``rows(_:_:)-(String,_)``), so that a `\(value)` in it is
    /// bound even then. The arguments bind the literal's `?` placeholders when it interpolates
    /// no value.
    ///
    /// ```swift
    /// let rows = try db.rows("SELECT * FROM \(ident: "User") WHERE \"age\" > ?", [.integer(30)])
    /// ```
    /// - Throws: `.misuse` when the literal interpolates values AND arguments are given (write
    ///   every value one way); what ``rows(_:)-(SQL)`` throws.
    ///
    /// (The arguments are a generic collection, not `[DatabaseValue]`, on purpose: with an array
    /// literal argument, Swift 6.3 picks the disfavoured `String` form over an `SQL` form whose
    /// parameter is `[DatabaseValue]`, and the literal's values would be spliced; over this one it
    /// does not. A `String` variable still goes to the `String` form. SQLArgumentsAndJoinsTests
    /// holds both.)
    public func rows(_ sql: SQL, _ arguments: some Collection<DatabaseValue>) throws -> [[DatabaseValue]] {
        let (text, arguments) = try sql.resolved(with: arguments, in: "Database.rows")
        return try rows(text, arguments)
    }

    /// ``execute(_:)-(SQL)`` given an arguments array too: a string literal with arguments is an
    /// ``SQL``, so that a `\(value)` in it is bound even then. The arguments bind the literal's
    /// `?` placeholders when it interpolates no value.
    ///
    /// ```swift
    /// try db.execute("UPDATE \(ident: "User") SET \"age\" = ? WHERE \"name\" = ?", [.integer(31), .text("Alex")])
    /// ```
    /// - Throws: `.misuse` when the literal interpolates values AND arguments are given;
    ///   what ``execute(_:)-(SQL)`` throws (the arguments' type: see ``rows(_:_:)-(SQL,_)``).
    public func execute(_ sql: SQL, _ arguments: some Collection<DatabaseValue>) throws {
        let (text, arguments) = try sql.resolved(with: arguments, in: "Database.execute")
        try execute(text, arguments)
    }
}
