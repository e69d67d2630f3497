#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A table's primary key: the integer id the engine assigns (the default, column `id`), under
/// another name if asked, or a declared `UUID` or `String` column that holds the key.
///
/// ```swift
/// final class Device: Model {
///     override class var primaryKey: PrimaryKey { .uuid("id") }
///     @Column("id") var uuid: UUID? = nil          // generated on insert when left nil
///     @Column var name: String = ""
/// }
///
/// final class Country: Model {
///     override class var primaryKey: PrimaryKey { .string("code") }
///     @Column var code: String = ""                 // set by the caller before the first save
/// }
/// ```
/// An integer key (``autoincrement``) is held by every record's ``Model/id``, as before;
/// a `UUID` or `String` key lives in the declared column it names, so an ordinary model
/// carries nothing more. ``Model/primaryKeyValue`` reads any key.
public struct PrimaryKey: Sendable, Hashable, CustomStringConvertible {
    /// What the key holds.
    public enum Kind: String, Sendable, Hashable {
        /// A 64-bit integer the engine assigns on insert (SQLite's rowid, a PostgreSQL identity).
        case autoincrement
        /// A `UUID` held by a declared column: the library generates one (version 4) on insert
        /// when the column holds `nil` or the nil UUID; the caller may set it first.
        case uuid
        /// A `String` held by a declared column, which the caller sets before the first save.
        case string
    }

    /// The key column's name.
    public let name: String
    /// What the key holds.
    public let kind: Kind

    /// The default key: an integer `id` the engine assigns.
    public static var autoincrement: PrimaryKey { PrimaryKey(name: "id", kind: .autoincrement) }

    /// An integer key the engine assigns, in a column of this name (`.autoincrement("userID")`).
    public static func autoincrement(_ name: String) -> PrimaryKey { PrimaryKey(name: name, kind: .autoincrement) }

    /// A `UUID` key held by the declared column `name` (a `UUID` or `UUID?` column), generated
    /// on insert when unset.
    public static func uuid(_ name: String = "id") -> PrimaryKey { PrimaryKey(name: name, kind: .uuid) }

    /// A `String` key held by the declared column `name` (a `String` or `String?` column), which
    /// the caller sets before the first save.
    public static func string(_ name: String) -> PrimaryKey { PrimaryKey(name: name, kind: .string) }

    /// Makes a key description.
    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// Whether the engine assigns the key (an integer held by the record's header).
    public var isAutoincrement: Bool { kind == .autoincrement }

    /// `autoincrement(id)`, `uuid(id)`, `string(code)`.
    public var description: String { "\(kind.rawValue)(\(name))" }
}

extension Model {
    /// The record's primary key value whatever its kind: `.integer(id)` for an integer key,
    /// `.text(…)` for a `UUID` (its canonical text) or `String` key; `.null` when the record
    /// has none yet (a new record with an integer key or an unset `UUID`/`String` key).
    ///
    /// ```swift
    /// let device = Device(); try device.save()
    /// device.primaryKeyValue     // .text("8F1C…") (generated on insert)
    /// ```
    public var primaryKeyValue: DatabaseValue {
        guard let mapping = try? mapping(), let index = mapping.table.keyIndex else {
            return header.id.map { .integer($0) } ?? .null
        }
        let value = (try? currentValue(index)) ?? .null
        return PrimaryKey.isUnset(value, kind: mapping.table.schema.primaryKey.kind) ? .null : value
    }
}
