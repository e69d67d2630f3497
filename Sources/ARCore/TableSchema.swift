#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A table as a run-time value: its name and its columns.
///
/// Every table also has `id INTEGER PRIMARY KEY`, `createdAt REAL` and
/// `updatedAt REAL` (on PostgreSQL: `BIGINT` identity and `DOUBLE PRECISION`); those are
/// implied and not listed in ``columns``. The key may have another name, or be one of
/// ``columns`` (a `UUID` or `String` key): see ``primaryKey``.
/// All SQL the library generates comes from this value alone, so a schema
/// reflected from a Swift class and one built by hand (or from C) share
/// one engine.
///
/// ```swift
/// let notes = try TableSchema(name: "Note", columns: [
///     ColumnSchema(name: "title", type: .text),
///     ColumnSchema(name: "stars", type: .integer, isNullable: true, index: .index),
/// ])
/// let note = DynamicModel(notes).makeRecord()
/// try note.set("title", .text("Buy milk"))
/// try note.save()
/// ```
public struct TableSchema: Sendable, Hashable {
    /// The names every table has; no declared column may use them, in any ASCII case
    /// (SQLite takes `ID` for `id`).
    public static let reservedColumnNames: Set<String> = ["id", "createdAt", "updatedAt"]

    /// Whether `name` is one of ``reservedColumnNames`` as SQLite compares names.
    public static func isReserved(_ name: String) -> Bool {
        let folded = foldedName(name)
        return folded == "id" || folded == "createdat" || folded == "updatedat"
    }

    /// The table name, as written in SQL (quoted).
    public let name: String
    /// The declared columns, in order.
    public let columns: [ColumnSchema]

    /// The column name that turns optimistic locking on when a table has an integer column
    /// of that name (Rails' `lock_version`).
    public static let defaultLockingColumn = "lockVersion"

    /// Makes a schema.
    /// - Parameters:
    ///   - name: the table name.
    ///   - columns: the declared columns, in order (not `id`, `createdAt`, `updatedAt`).
    ///   - lockingColumn: the integer column that optimistic locking checks and increments on
    ///     every update (see `Model.lockingColumn`); locking is off when the table has no
    ///     column of this name and it is ``defaultLockingColumn``, or when it is `nil`.
    ///   - primaryKey: the primary key (``PrimaryKey/autoincrement`` by default: an integer `id`
    ///     the engine assigns); a `UUID` or `String` key names one of `columns`.
    /// - Throws: `.invalidModel` for an empty or duplicate name, or a reserved column name
    ///   (names compared as SQLite compares them: ASCII letters without case); for a locking
    ///   column that is not an integer column, or (named other than the default) not a column;
    ///   for a `UUID` or `String` key that names no column of that type.
    public init(
        name: String, columns: [ColumnSchema], lockingColumn: String? = TableSchema.defaultLockingColumn,
        primaryKey: PrimaryKey = .autoincrement
    ) throws {
        guard !name.isEmpty else { throw ActiveRecordError(.invalidModel, "a table name cannot be empty") }
        var seen = Set<String>()
        for column in columns {
            guard !column.name.isEmpty else {
                throw ActiveRecordError(.invalidModel, "table \(name): a column name cannot be empty")
            }
            // A UUID or String key may be named `id`; an integer key's own name is taken.
            let isKey = !primaryKey.isAutoincrement && column.name == primaryKey.name
            guard isKey || !(Self.isReserved(column.name) || (primaryKey.isAutoincrement && isSameName(column.name, primaryKey.name))) else {
                throw ActiveRecordError(
                    .invalidModel,
                    "table \(name): column '\(column.name)' is reserved (every table has id, createdAt, updatedAt)")
            }
            guard seen.insert(foldedName(column.name)).inserted else {
                throw ActiveRecordError(.invalidModel, "table \(name): column '\(column.name)' is declared twice")
            }
        }
        self.name = name
        self.columns = columns
        self.primaryKey = primaryKey
        keyIndex = try Self.keyIndex(primaryKey, in: columns, table: name)
        allColumnNames = [primaryKey.name, "createdAt", "updatedAt"] + columns.map(\.name)
        lockingIndex = try Self.lockingIndex(lockingColumn, in: columns, table: name)
    }

    /// The table's primary key.
    public let primaryKey: PrimaryKey

    /// The declared column that holds a `UUID` or `String` key; `nil` for an integer key (held
    /// by the record's header).
    package let keyIndex: Int?

    private static func keyIndex(_ key: PrimaryKey, in columns: [ColumnSchema], table: String) throws -> Int? {
        if key.isAutoincrement {
            guard !key.name.isEmpty else { throw ActiveRecordError(.invalidModel, "table \(table): a primary key name cannot be empty") }
            return nil
        }
        let declaration = key.kind == .uuid ? "@Column(\"\(key.name)\") var \(key.name): UUID? = nil" : "@Column var \(key.name): String = \"\""
        guard let index = columns.firstIndex(where: { $0.name == key.name }) else {
            throw ActiveRecordError(
                .invalidModel, "table \(table): the primary key \(key) names no column; declare it (\(declaration))")
        }
        let column = columns[index]
        let fits = key.kind == .uuid ? column.type == .text && column.kind == .uuid : column.type == .text && column.kind == .plain
        guard fits else {
            throw ActiveRecordError(
                .invalidModel,
                "table \(table): the primary key \(key) must be a \(key.kind == .uuid ? "UUID" : "String") column; declare it so "
                    + "(\(declaration))")
        }
        return index
    }

    private static func lockingIndex(_ name: String?, in columns: [ColumnSchema], table: String) throws -> Int? {
        guard let name else { return nil }
        guard let index = columns.firstIndex(where: { $0.name == name }) else {
            if name == defaultLockingColumn { return nil }
            throw ActiveRecordError(
                .invalidModel,
                "table \(table): the locking column '\(name)' is not one of its columns; declare it (an integer, "
                    + "@Column var \(name): Int = 0) or name another")
        }
        guard columns[index].type == .integer, columns[index].kind == .plain, !columns[index].isNullable else {
            throw ActiveRecordError(
                .invalidModel,
                "table \(table): the locking column '\(name)' must be a non-optional integer column (Int); "
                    + "declare it so, or turn locking off (lockingColumn nil)")
        }
        return index
    }

    /// The declared column that optimistic locking checks and increments, if any.
    package let lockingIndex: Int?

    /// The column optimistic locking checks and increments on every update and destroy, or
    /// `nil` when the table is not locked optimistically.
    public var lockingColumn: String? { lockingIndex.map { columns[$0].name } }

    /// The index of a declared column by name, or `nil`.
    public func columnIndex(named name: String) -> Int? {
        columns.firstIndex { $0.name == name }
    }

    /// Every column name, `id`, `createdAt` and `updatedAt` first.
    public let allColumnNames: [String]

    /// The error for a column this table does not have, listing those it has.
    package func unknownColumn(_ name: String) -> ActiveRecordError {
        ActiveRecordError(
            .unknownColumn,
            "\(self.name) has no column '\(name)'; its columns are: \(allColumnNames.joined(separator: ", "))")
    }
}

/// Whether a column has an index.
public enum IndexKind: String, Sendable, Hashable {
    /// A plain index, for faster look-ups.
    case index
    /// A unique index: no two rows may hold the same value.
    case unique
}

/// What a column's values are, where an engine has a type for them narrower than the
/// storage class (``SQLType``). SQLite stores every kind in its storage class (the on-disk
/// format stays the seeds'); PostgreSQL declares a native type.
public enum ColumnKind: String, Sendable, Hashable, CaseIterable {
    /// Nothing narrower than the storage class.
    case plain
    /// `Bool`: INTEGER 0/1 on SQLite, `BOOLEAN` on PostgreSQL.
    case boolean
    /// `Decimal`: TEXT on SQLite, `NUMERIC` on PostgreSQL.
    case decimal
    /// `UUID`: TEXT on SQLite, `UUID` on PostgreSQL.
    case uuid
    /// A `Codable` value stored as JSON: TEXT on SQLite, `JSONB` on PostgreSQL (a table made
    /// before, whose column is `TEXT`, still matches: see the JSON columns section of the
    /// Models and Columns article).
    case json
}

/// One declared column of a ``TableSchema``.
public struct ColumnSchema: Sendable, Hashable {
    /// The column name, as written in SQL (quoted).
    public var name: String
    /// The storage class.
    public var type: SQLType
    /// What its values are, where an engine has a narrower type for them.
    public var kind: ColumnKind
    /// Whether the column may hold `NULL`; a non-nullable column is `NOT NULL`.
    public var isNullable: Bool
    /// An index on this column, if any.
    public var index: IndexKind?
    /// The value a new row gets, and existing rows get when the column is added.
    public var defaultValue: DatabaseValue
    /// The table whose `id` this column holds (a belongs-to key): the column is declared
    /// `REFERENCES "table"("id") DEFERRABLE INITIALLY DEFERRED`, so a row cannot point at a
    /// row that does not exist when its transaction commits.
    public var references: String?
    /// The column of ``references`` this column holds: its primary key (`id` unless the
    /// parent declares another, ``PrimaryKey``).
    public var referencedColumn: String = "id"

    /// Makes a column. A non-nullable column without a default gets the
    /// type's zero value (`0`, `0.0`, `''`, `X''`; for a decimal `'0'`, for a UUID the nil UUID).
    public init(
        name: String, type: SQLType, kind: ColumnKind = .plain, isNullable: Bool = false, index: IndexKind? = nil,
        defaultValue: DatabaseValue? = nil, references: String? = nil
    ) {
        self.name = name
        self.type = type
        self.kind = kind
        self.isNullable = isNullable
        self.index = index
        self.defaultValue = defaultValue ?? (isNullable ? .null : Self.zero(for: type, kind))
        self.references = references
    }

    private static func zero(for type: SQLType, _ kind: ColumnKind) -> DatabaseValue {
        switch (type, kind) {
        case (.integer, _): .integer(0)
        case (.real, _): .real(0)
        case (.text, .decimal): .text("0")
        case (.text, .uuid): .text("00000000-0000-0000-0000-000000000000")
        case (.text, .json): .text("null")
        case (.text, _): .text("")
        case (.blob, _): .blob(Data())
        }
    }
}
