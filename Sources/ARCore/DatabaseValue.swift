#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The storage class of a column (SQLite's five, which every engine maps to its own types),
/// used in `CREATE TABLE`.
public enum SQLType: String, Sendable, Hashable, CaseIterable {
    /// 64-bit signed integers (also `Bool` as 0/1).
    case integer = "INTEGER"
    /// 64-bit IEEE floating point (also dates, as seconds since 1970).
    case real = "REAL"
    /// UTF-8 text (also decimals, UUIDs, URLs and JSON).
    case text = "TEXT"
    /// Raw bytes.
    case blob = "BLOB"
}

/// A value as the database stores it, in one of the five storage classes: the currency
/// between Swift types and SQL, on every engine.
///
/// Every value written by the library is bound to a statement parameter;
/// it is never spliced into SQL text.
public enum DatabaseValue: Sendable, Hashable, CustomStringConvertible {
    /// SQL `NULL`.
    case null
    /// An `INTEGER`.
    case integer(Int64)
    /// A `REAL`.
    case real(Double)
    /// `TEXT`.
    case text(String)
    /// A `BLOB`.
    case blob(Data)

    /// Whether this is SQL `NULL`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The name of the storage class, for messages: `NULL`, `INTEGER`, `REAL`, `TEXT`, `BLOB`.
    public var storageClassName: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }

    /// A readable form, for logs and tests.
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'\(value)'"
        case .blob(let value): "<\(value.count) bytes>"
        }
    }
}

extension DatabaseValue {
    /// The value of an `INTEGER` (or of a `REAL` holding a whole number, as an aggregate
    /// may give); `nil` for anything else.
    ///
    /// ```swift
    /// let rows = try User.query().group(by: "age").values("age, count(*)")
    /// let counts = rows.map { ($0[0].integerValue ?? 0, $0[1].integerValue ?? 0) }
    /// ```
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .real(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// The value of a `REAL` (or of an `INTEGER`, converted); `nil` for anything else.
    public var realValue: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// The text of a `TEXT`; `nil` for anything else (numbers are not written out).
    public var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The bytes of a `BLOB`; `nil` for anything else.
    public var blobValue: Data? {
        if case .blob(let value) = self { return value }
        return nil
    }

    /// The value as a Swift type, read the way a column of that type reads it (strict: a
    /// value that does not fit is an error, never converted).
    ///
    /// ```swift
    /// let born = try row[2].decode(as: Date.self)
    /// let note: String? = try row[3].decode()
    /// ```
    /// - Throws: `.typeMismatch` when the value does not fit `Value`.
    public func decode<Value: ColumnValue>(as type: Value.Type = Value.self) throws -> Value {
        try Value.fromSQL(self)
    }
}

extension DatabaseValue {
    /// The value as text, for reading the schema: text as it is, numbers written out.
    package var schemaText: String? {
        switch self {
        case .text(let text): text
        case .integer(let value): String(value)
        case .real(let value): String(value)
        default: nil
        }
    }
}
