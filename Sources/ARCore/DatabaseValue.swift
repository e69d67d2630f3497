import Foundation

/// The SQLite storage class of a column, used in `CREATE TABLE`.
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

/// A value as SQLite stores it: the currency between Swift types and SQL.
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
