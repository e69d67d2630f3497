#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Data: ColumnValue {
    public static var sqlType: SQLType { .blob }
    // Stated, not inherited: the type is `Codable`, whose default kind is `.json`.
    public static var columnKind: ColumnKind { .plain }
    public func toSQL() -> DatabaseValue { .blob(self) }
    /// BLOB only.
    public static func fromSQL(_ value: DatabaseValue) throws -> Data {
        guard case .blob(let data) = value else { throw typeMismatch(value, Data.self) }
        return data
    }
}

/// Dates are `REAL` seconds since 1970-01-01 00:00:00 UTC, the seeds' format.
extension Date: ColumnValue {
    public static var sqlType: SQLType { .real }
    // Stated, not inherited: the type is `Codable`, whose default kind is `.json`.
    public static var columnKind: ColumnKind { .plain }
    /// REAL seconds; the epoch as 0.0 (a date made from -0.0 seconds is the same moment).
    public func toSQL() throws -> DatabaseValue { try (timeIntervalSince1970 + 0).toSQL() }
    public static func fromSQL(_ value: DatabaseValue) throws -> Date {
        switch value {
        case .real, .integer: return Date(timeIntervalSince1970: try Double.fromSQL(value))
        default: throw typeMismatch(value, Date.self, "dates are stored as REAL seconds since 1970")
        }
    }
}

/// Decimals are `TEXT` in POSIX form (`"1123.563"`), exact whatever the locale.
extension Decimal: ColumnValue {
    public static var sqlType: SQLType { .text }
    public static var columnKind: ColumnKind { .decimal }

    public func toSQL() throws -> DatabaseValue {
        guard !isNaN else { throw ActiveRecordError(.invalidValue, "a NaN Decimal cannot be stored") }
        return .text(description)
    }

    public static func fromSQL(_ value: DatabaseValue) throws -> Decimal {
        switch value {
        case .text(let text):
            guard isPOSIXNumber(text), let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
            else { throw typeMismatch(value, Decimal.self, "not a decimal number in POSIX form") }
            // Decimal keeps 38 significant digits and would round the rest away silently.
            guard significantDigits(text) == significantDigits(decimal.description) else {
                throw ActiveRecordError(
                    .invalidValue, "a decimal with more significant digits than Decimal keeps exactly (38) cannot be read")
            }
            return decimal
        case .integer(let int): return Decimal(int)
        default: throw typeMismatch(value, Decimal.self, "a REAL is not exact: decimals are stored as TEXT")
        }
    }

    /// The digits of a number's mantissa without leading or trailing zeros: `"001.2300e5"` → `"123"`.
    private static func significantDigits(_ text: String) -> String {
        let digits = text.prefix { $0 != "e" && $0 != "E" }.filter(\.isNumber)
        let withoutLeading = digits.drop { $0 == "0" }
        return String(withoutLeading.reversed().drop { $0 == "0" }.reversed())
    }

    /// `-12.5e3`: sign, digits, optional fraction, optional exponent, nothing else.
    /// (`Decimal(string:)` alone reads `"12abc"` as 12.)
    private static func isPOSIXNumber(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        func digits() -> Int {
            let count = bytes.prefix(while: { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }).count
            bytes = bytes.dropFirst(count)
            return count
        }
        if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        var mantissa = digits()
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }
}

/// UUIDs are `TEXT` in their canonical upper-case form.
extension UUID: ColumnValue {
    public static var sqlType: SQLType { .text }
    public static var columnKind: ColumnKind { .uuid }
    public func toSQL() -> DatabaseValue { .text(uuidString) }
    public static func fromSQL(_ value: DatabaseValue) throws -> UUID {
        switch value {
        case .text(let text):
            guard let uuid = UUID(uuidString: text) else {
                throw typeMismatch(value, UUID.self, "not a UUID string")
            }
            return uuid
        case .blob(let data) where data.count == 16:
            return UUID(uuid: data.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
        default: throw typeMismatch(value, UUID.self)
        }
    }
}

/// URLs are `TEXT`: their absolute string.
extension URL: ColumnValue {
    public static var sqlType: SQLType { .text }
    // Stated, not inherited: the type is `Codable`, whose default kind is `.json`.
    public static var columnKind: ColumnKind { .plain }
    public func toSQL() -> DatabaseValue { .text(absoluteString) }
    public static func fromSQL(_ value: DatabaseValue) throws -> URL {
        guard case .text(let text) = value else { throw typeMismatch(value, URL.self) }
        guard let url = URL(string: text) else { throw typeMismatch(value, URL.self, "not a URL") }
        return url
    }
}
