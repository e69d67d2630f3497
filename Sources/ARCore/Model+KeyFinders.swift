#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Finders by a primary key of any kind (``PrimaryKey``): `Device.find(uuid)`,
/// `Country.find("FR")`, `Model.find(key:)`.
extension ModelClassMethods where Self: Model {
    /// The record with this primary key value, or `nil`: `SELECT … WHERE "<key>" = ?`.
    ///
    /// ```swift
    /// let france = try Country.find(key: "FR")
    /// ```
    /// - Parameter key: a value of the key's type: an `Int64` (an integer key), a `UUID`, a
    ///   `String`.
    /// - Throws: `.typeMismatch` for a value of another type than the model's key.
    public static func find(key: some ColumnValue) throws -> Self? {
        let mapping = try mapping()
        let value = try checkedKey(key, mapping.table.schema)
        let found = try Database.current.withReader(mapping.table) { connection in
            try mapping.table.findRecord(key: value, in: connection, of: self, mapping: mapping)
        }
        guard let found else { return nil }
        return unsafeDowncast(found, to: Self.self)
    }

    /// The record with this `UUID` key, or `nil` (``find(key:)``).
    ///
    /// ```swift
    /// let device = try Device.find(uuid)
    /// ```
    public static func find(_ key: UUID) throws -> Self? { try find(key: key) }

    /// The record with this `String` key, or `nil` (``find(key:)``).
    ///
    /// ```swift
    /// let france = try Country.find("FR")
    /// ```
    public static func find(_ key: String) throws -> Self? { try find(key: key) }

    /// Whether a record with this primary key value exists (`.null`: none).
    public static func exists(key: DatabaseValue) throws -> Bool {
        guard !key.isNull else { return false }
        let mapping = try mapping()
        let sql = try Database.current.dialect.existsSQL(in: mapping.table.schema.name, where: [.equals(mapping.table.schema.primaryKey.name)])
        return try scalar(sql, [key]) != 0
    }

    /// Deletes the row with this primary key value without loading it (SQL only, as
    /// ``delete(id:)``), and returns whether there was one.
    ///
    /// ```swift
    /// try Country.delete(key: "FR")
    /// ```
    /// - Throws: `.typeMismatch` for a value of another type than the model's key; the
    ///   engine's errors.
    @discardableResult
    public static func delete(key: some ColumnValue) throws -> Bool {
        let mapping = try mapping()
        let value = try checkedKey(key, mapping.table.schema)
        return try Database.current.withWriter(mapping.table) { connection in
            try mapping.table.delete(key: value, in: connection)
        }
    }

    /// `key` as the model's key column holds it.
    private static func checkedKey(_ key: some ColumnValue, _ schema: TableSchema) throws -> DatabaseValue {
        let value = try key.toSQL()
        let fits: Bool
        switch (schema.primaryKey.kind, value) {
        case (.autoincrement, .integer): fits = true
        case (.uuid, .text(let text)): fits = UUID(uuidString: text) != nil
        case (.string, .text): fits = true
        default: fits = false
        }
        guard fits else {
            let expected = switch schema.primaryKey.kind {
            case .autoincrement: "an Int64"
            case .uuid: "a UUID"
            case .string: "a String"
            }
            throw ActiveRecordError(
                .typeMismatch, "\(schema.name)'s primary key \(schema.primaryKey.name) is \(expected); find or delete it by one")
        }
        return value
    }
}
