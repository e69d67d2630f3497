#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A type that can be stored in a column: the seeds' ARRepresentationProtocol
/// (SQL type, to SQL, from SQL).
///
/// The library's built-in conformances cover `String`, every integer type,
/// `Double`, `Float`, `Bool`, `Decimal`, `Date`, `Data`, `UUID`, `URL`,
/// optionals of all of these, arrays and dictionaries of `Codable` values
/// (as JSON text). A `RawRepresentable` enum or a `Codable` struct only has
/// to declare the conformance:
///
/// ```swift
/// enum Role: String, ColumnValue { case admin, guest }      // stored as its raw value
/// struct Address: Codable, ColumnValue { var city = "" }   // stored as JSON text
/// ```
///
/// A custom type implements the three requirements:
///
/// ```swift
/// struct Point: ColumnValue {
///     var x = 0, y = 0
///     static var sqlType: SQLType { .text }
///     func toSQL() -> DatabaseValue { .text("\(x),\(y)") }
///     static func fromSQL(_ value: DatabaseValue) throws -> Point {
///         guard case .text(let text) = value else { throw ActiveRecordError(.typeMismatch, "expected TEXT") }
///         let parts = text.split(separator: ",").compactMap { Int($0) }
///         return Point(x: parts[0], y: parts[1])
///     }
/// }
/// ```
public protocol ColumnValue {
    /// The column's SQL type in `CREATE TABLE`.
    static var sqlType: SQLType { get }
    /// What the values are, where an engine has a narrower type for them than `sqlType`
    /// (PostgreSQL declares `BOOLEAN`, `NUMERIC`, `UUID`). Default: ``ColumnKind/plain``.
    static var columnKind: ColumnKind { get }
    /// The value as the database stores it.
    /// - Throws: ``ActiveRecordError`` with code `.invalidValue` when the value cannot be stored.
    func toSQL() throws -> DatabaseValue
    /// Makes a value from what the database stored.
    /// - Throws: ``ActiveRecordError`` with code `.typeMismatch` when the stored value does not fit.
    static func fromSQL(_ value: DatabaseValue) throws -> Self
    /// Whether the column may hold `NULL`. Only `Optional` says `true`.
    static var isNullable: Bool { get }
    /// Whether two values would be stored alike; decides which columns changed.
    /// The default compares `==` for `Equatable` types and the stored form otherwise. A column
    /// whose value is a bit-for-bit copy of its original counts as unchanged without a call:
    /// a value must be equivalent to itself.
    static func isEquivalent(_ lhs: Self, _ rhs: Self) -> Bool
}

extension ColumnValue {
    public static var isNullable: Bool { false }
    public static var columnKind: ColumnKind { .plain }

    public static func isEquivalent(_ lhs: Self, _ rhs: Self) -> Bool {
        (try? lhs.toSQL()) == (try? rhs.toSQL())
    }
}

extension ColumnValue where Self: Equatable {
    public static func isEquivalent(_ lhs: Self, _ rhs: Self) -> Bool { lhs == rhs }
}

/// The error thrown when a stored value does not fit the Swift type. It names the value's
/// storage class, never the value itself (values may be personal data): `detail` must not
/// hold it either.
package func typeMismatch<T>(_ value: DatabaseValue, _ type: T.Type, _ detail: String = "") -> ActiveRecordError {
    let suffix = detail.isEmpty ? "" : " (\(detail))"
    return ActiveRecordError(
        .typeMismatch, "cannot read \(value.storageClassArticle) \(value.storageClassName) value as \(T.self)\(suffix)")
}

extension DatabaseValue {
    /// "a" or "an", for messages.
    var storageClassArticle: String {
        if case .integer = self { return "an" }
        return "a"
    }
}

// MARK: - Optional

extension Optional: ColumnValue where Wrapped: ColumnValue {
    public static var sqlType: SQLType { Wrapped.sqlType }
    public static var columnKind: ColumnKind { Wrapped.columnKind }
    public static var isNullable: Bool { true }

    public func toSQL() throws -> DatabaseValue {
        switch self {
        case .none: .null
        case .some(let wrapped): try wrapped.toSQL()
        }
    }

    public static func fromSQL(_ value: DatabaseValue) throws -> Self {
        if case .null = value { return nil }
        return try Wrapped.fromSQL(value)
    }

    public static func isEquivalent(_ lhs: Self, _ rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none): true
        case (.some(let left), .some(let right)): Wrapped.isEquivalent(left, right)
        default: false
        }
    }
}

// MARK: - Text

extension String: ColumnValue {
    public static var sqlType: SQLType { .text }
    // Stated, not inherited: the type is `Codable`, whose default kind is `.json`.
    public static var columnKind: ColumnKind { .plain }
    public func toSQL() -> DatabaseValue { .text(self) }
    /// TEXT only: a number is not silently turned into its digits.
    public static func fromSQL(_ value: DatabaseValue) throws -> String {
        guard case .text(let text) = value else { throw typeMismatch(value, String.self) }
        return text
    }
}

// MARK: - Integers: INTEGER, 64-bit, never truncated

/// Column types that `sum` and `average` add up, typed by key path
/// (`query.sum(\.cents)` is an `Int?` for an `Int` column): the integer types (summed exactly,
/// as 64-bit integers) and `Double` and `Float`.
public protocol NumericColumnValue: ColumnValue {}

/// Integer types stored as 64-bit integers, with a range check both ways (the conformance
/// of `Int`, `Int8`…`Int64`, `UInt`…`UInt64`).
public protocol IntegerColumnValue: FixedWidthInteger, NumericColumnValue {}

extension IntegerColumnValue {
    public static var sqlType: SQLType { .integer }
    // Stated, not inherited: the type is `Codable`, whose default kind is `.json`.
    public static var columnKind: ColumnKind { .plain }

    public func toSQL() throws -> DatabaseValue {
        guard let int = Int64(exactly: self) else {
            throw ActiveRecordError(
                .invalidValue,
                "a \(Self.self) value above Int64.max (\(Int64.max)) cannot be stored: the largest integer is 64-bit signed")
        }
        return .integer(int)
    }

    /// INTEGER in the type's range; REAL only when it is a whole number in range (exact).
    public static func fromSQL(_ value: DatabaseValue) throws -> Self {
        let int: Int64
        switch value {
        case .integer(let stored): int = stored
        case .real(let double):
            guard let exact = Int64(exactly: double) else {
                throw typeMismatch(value, Self.self, "not a whole number within Int64's range")
            }
            int = exact
        default: throw typeMismatch(value, Self.self)
        }
        guard let result = Self(exactly: int) else {
            throw typeMismatch(value, Self.self, "out of \(Self.self)'s range \(Self.min)...\(Self.max)")
        }
        return result
    }
}

extension Int: IntegerColumnValue {}
extension Int8: IntegerColumnValue {}
extension Int16: IntegerColumnValue {}
extension Int32: IntegerColumnValue {}
extension Int64: IntegerColumnValue {}
extension UInt: IntegerColumnValue {}
extension UInt8: IntegerColumnValue {}
extension UInt16: IntegerColumnValue {}
extension UInt32: IntegerColumnValue {}
extension UInt64: IntegerColumnValue {}

extension Bool: ColumnValue {
    public static var sqlType: SQLType { .integer }
    public static var columnKind: ColumnKind { .boolean }
    public func toSQL() -> DatabaseValue { .integer(self ? 1 : 0) }
    /// INTEGER 0 or 1 only: any other number is not silently `true`.
    public static func fromSQL(_ value: DatabaseValue) throws -> Bool {
        switch value {
        case .integer(0): return false
        case .integer(1): return true
        case .integer: throw typeMismatch(value, Bool.self, "only 0 and 1 are booleans")
        default: throw typeMismatch(value, Bool.self)
        }
    }
}

// MARK: - Floating point: REAL

extension Double: ColumnValue {
    public static var sqlType: SQLType { .real }
    // Stated, not inherited: the type is `Codable`, whose default kind is `.json`.
    public static var columnKind: ColumnKind { .plain }
    /// REAL; NaN is refused (it can be neither stored nor compared on every engine). -0.0 is
    /// converted, since a query may compare with it, and refused where it would be stored.
    public func toSQL() throws -> DatabaseValue {
        guard !isNaN else { throw Self.nanRefused }
        return .real(self)
    }
    /// REAL; INTEGER only when a Double holds it exactly (up to 2^53).
    public static func fromSQL(_ value: DatabaseValue) throws -> Double {
        switch value {
        case .real(let double): return double
        case .integer(let int):
            guard let exact = Double(exactly: int) else {
                throw typeMismatch(value, Double.self, "a Double cannot hold it exactly")
            }
            return exact
        default: throw typeMismatch(value, Double.self)
        }
    }
}

extension Double: NumericColumnValue {}
extension Float: NumericColumnValue {}

extension Float: ColumnValue {
    public static var sqlType: SQLType { .real }
    // Stated, not inherited: the type is `Codable`, whose default kind is `.json`.
    public static var columnKind: ColumnKind { .plain }
    public func toSQL() throws -> DatabaseValue { try Double(self).toSQL() }
    /// As Double, rounded to the nearest Float; a finite value beyond Float's range (which
    /// would become infinity) is a mismatch.
    public static func fromSQL(_ value: DatabaseValue) throws -> Float {
        let double = try Double.fromSQL(value)
        let float = Float(double)
        guard float.isFinite || !double.isFinite else {
            throw typeMismatch(value, Float.self, "beyond Float's range")
        }
        return float
    }
}

// MARK: - Reals no engine stores as they are

extension Double {
    /// Why NaN is refused: SQLite stores it as NULL, so no engine takes it (one value reads
    /// back the same whichever engine stored it).
    package static var nanRefused: ActiveRecordError {
        ActiveRecordError(
            .invalidValue,
            "NaN cannot be stored: SQLite would store it as NULL, so no engine stores it; store nil (NULL) in an optional column instead")  // names an engine among others
    }

    /// Why -0.0 is refused where it would be stored: SQLite stores it as 0.0, losing the sign,
    /// so no engine takes it.
    package static var negativeZeroRefused: ActiveRecordError {
        ActiveRecordError(
            .invalidValue, "-0.0 cannot be stored: SQLite stores it as 0.0, losing the sign, so no engine stores it; store 0.0 instead")  // names an engine among others
    }
}

extension DatabaseValue {
    /// Refuses a value about to be stored in a column (inserted, updated, upserted) that no
    /// engine stores as it is: NaN and -0.0 (see ``Double/nanRefused``). Not for a query's
    /// arguments: -0.0 compares equal to 0.0 there.
    @inline(__always)
    package func checkStorable() throws {
        // One comparison for every other real: NaN and ±0.0 are the reals that `x == x && x != 0` misses.
        guard case .real(let real) = self, !(real == real && real != 0) else { return }
        if real.isNaN { throw Double.nanRefused }
        if real.sign == .minus { throw Double.negativeZeroRefused }
    }
}
