#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// MARK: - RawRepresentable: stored as the raw value

extension RawRepresentable where RawValue: ColumnValue {
    fileprivate static func fromRawSQL(_ value: DatabaseValue) throws -> Self {
        let raw = try RawValue.fromSQL(value)
        guard let result = Self(rawValue: raw) else {
            throw typeMismatch(value, Self.self, "not one of its raw values")
        }
        return result
    }
}

extension ColumnValue where Self: RawRepresentable, RawValue: ColumnValue {
    public static var sqlType: SQLType { RawValue.sqlType }
    public static var columnKind: ColumnKind { RawValue.columnKind }
    public func toSQL() throws -> DatabaseValue { try rawValue.toSQL() }
    public static func fromSQL(_ value: DatabaseValue) throws -> Self { try fromRawSQL(value) }
}

// An enum is usually both RawRepresentable and Codable: the raw value wins.
extension ColumnValue where Self: RawRepresentable & Codable, RawValue: ColumnValue {
    public static var sqlType: SQLType { RawValue.sqlType }
    public static var columnKind: ColumnKind { RawValue.columnKind }
    public func toSQL() throws -> DatabaseValue { try rawValue.toSQL() }
    public static func fromSQL(_ value: DatabaseValue) throws -> Self { try fromRawSQL(value) }
}

// MARK: - Codable: stored as JSON (TEXT on SQLite, JSONB on PostgreSQL)

/// JSON with sorted keys, so that equal values always have equal text and
/// a mutation in place is detected by comparing the stored form.
package func encodeJSON<T: Encodable>(_ value: T) throws -> DatabaseValue {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    do {
        return .text(String(decoding: try encoder.encode(value), as: UTF8.self))
    } catch {
        throw ActiveRecordError(.invalidValue, "cannot encode \(T.self) as JSON\(describe(error))")
    }
}

package func decodeJSON<T: Decodable>(_ value: DatabaseValue, as type: T.Type) throws -> T {
    guard case .text(let text) = value else { throw typeMismatch(value, T.self, "JSON values are stored as TEXT") }
    do {
        return try JSONDecoder().decode(T.self, from: Data(text.utf8))
    } catch {
        throw typeMismatch(value, T.self, "not JSON for \(T.self)\(describe(error))")
    }
}

/// What went wrong with a JSON value, without the value: the coding path and the kind of
/// problem (the errors' own descriptions may quote the value or the data).
private func describe(_ error: any Error) -> String {
    func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "" : " at \(codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: "."))"
    }
    switch error {
    case DecodingError.typeMismatch(let type, let context): return ": expected \(type)" + path(context.codingPath)
    case DecodingError.valueNotFound(let type, let context): return ": missing \(type)" + path(context.codingPath)
    case DecodingError.keyNotFound(let key, let context): return ": no key \(key.stringValue)" + path(context.codingPath)
    case DecodingError.dataCorrupted(let context): return ": malformed" + path(context.codingPath)
    case EncodingError.invalidValue(_, let context): return ": a value that JSON cannot hold" + path(context.codingPath)
    default: return ""
    }
}

/// Array, Set and Dictionary: stored as JSON by the library's own `toSQL`, whatever the value.
package protocol LibraryJSONColumn {}

extension Array: LibraryJSONColumn {}
extension Set: LibraryJSONColumn {}
extension Dictionary: LibraryJSONColumn {}
extension Optional: LibraryJSONColumn where Wrapped: LibraryJSONColumn {}

extension ColumnValue {
    /// The kind of the column that holds `self`, a model's initial value: ``columnKind``,
    /// except for a `Codable` type that stores itself with its own `toSQL` (an `Email` kept as
    /// its address) — its stored form is not the library's JSON of the value, so the column is
    /// ``ColumnKind/plain`` (`TEXT`), as it was before JSON columns. The defaults' `.json`
    /// applies to every type that implements `toSQL` or not alike (Swift cannot tell them
    /// apart), hence this look at the stored form, once per model class. A `nil` initial value
    /// tells nothing: the type's own ``columnKind`` stands (declare it `.plain` in the type).
    package func storedColumnKind() -> ColumnKind {
        let kind = Self.columnKind
        guard kind == .json, !(self is any LibraryJSONColumn), let encodable = self as? any Encodable,
              let stored = try? toSQL(), stored != .null, let json = try? encodeJSON(encodable) else { return kind }
        return stored == json ? .json : .plain
    }
}

/// A `Codable` type is stored as JSON unless it implements `toSQL` itself: then the column
/// is plain `TEXT` (see ``ColumnValue/storedColumnKind()``), as its own form needs.
extension ColumnValue where Self: Codable {
    public static var sqlType: SQLType { .text }
    public static var columnKind: ColumnKind { .json }
    public func toSQL() throws -> DatabaseValue { try encodeJSON(self) }
    public static func fromSQL(_ value: DatabaseValue) throws -> Self { try decodeJSON(value, as: Self.self) }
}

extension Array: ColumnValue where Element: Codable {
    public static var sqlType: SQLType { .text }
    public static var columnKind: ColumnKind { .json }
    public func toSQL() throws -> DatabaseValue { try encodeJSON(self) }
    public static func fromSQL(_ value: DatabaseValue) throws -> Self { try decodeJSON(value, as: Self.self) }
}

extension Set: ColumnValue where Element: Codable {
    public static var sqlType: SQLType { .text }
    public static var columnKind: ColumnKind { .json }
    /// Sets are stored as a JSON array in a stable (sorted-by-JSON) order.
    public func toSQL() throws -> DatabaseValue {
        let items = try map { element -> String in
            guard case .text(let json) = try encodeJSON(element) else { return "" }
            return json
        }.sorted()
        return .text("[" + items.joined(separator: ",") + "]")
    }
    public static func fromSQL(_ value: DatabaseValue) throws -> Self { try decodeJSON(value, as: Self.self) }
}

extension Dictionary: ColumnValue where Key: Codable, Value: Codable {
    public static var sqlType: SQLType { .text }
    public static var columnKind: ColumnKind { .json }
    public func toSQL() throws -> DatabaseValue { try encodeJSON(self) }
    public static func fromSQL(_ value: DatabaseValue) throws -> Self { try decodeJSON(value, as: Self.self) }
}
