#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A column as the database describes it (`MigrationContext.ColumnInfo` in migrations).
public struct ColumnDescription: Sendable, Equatable {
    /// The column name.
    public var name: String
    /// The declared type, as the engine reports it (SQLite: as written, `INTEGER`,
    /// `VARCHAR(20)` or empty; PostgreSQL: `bigint`, `character varying(20)`).
    public var type: String
    /// Whether the column may hold `NULL`.
    public var isNullable: Bool
    /// The default value's SQL text, if any.
    public var defaultSQL: String?
    /// Whether the column is (part of) the primary key.
    public var isPrimaryKey: Bool

    /// Makes a column description (the engines read them; this is for comparisons).
    public init(name: String, type: String, isNullable: Bool, defaultSQL: String?, isPrimaryKey: Bool) {
        self.name = name
        self.type = type
        self.isNullable = isNullable
        self.defaultSQL = defaultSQL
        self.isPrimaryKey = isPrimaryKey
    }
}

/// An index as the database describes it (`MigrationContext.IndexInfo` in migrations).
public struct IndexDescription: Sendable, Equatable {
    /// The index name.
    public var name: String
    /// Whether it is a UNIQUE index.
    public var isUnique: Bool
    /// Its columns, in order (empty for an index on expressions).
    public var columns: [String]
    /// Whether the index has a `WHERE` clause.
    public var isPartial: Bool

    /// Makes an index description (the engines read them; this is for comparisons).
    public init(name: String, isUnique: Bool, columns: [String], isPartial: Bool = false) {
        self.name = name
        self.isUnique = isUnique
        self.columns = columns
        self.isPartial = isPartial
    }
}

/// A foreign key as the database describes it: one referencing column.
@_spi(Engines) public struct ForeignKeyDescription: Sendable, Equatable {
    public var column: String
    public var table: String
    public var referencedColumn: String

    public init(column: String, table: String, referencedColumn: String) {
        self.column = column
        self.table = table
        self.referencedColumn = referencedColumn
    }
}

/// ` ON CONFLICT (…) DO UPDATE SET c = excluded.c, … RETURNING …`: the upsert clause SQLite
/// and PostgreSQL share. With nothing to update, the row is "updated" to itself (a conflict
/// column set to its own value), so that it is still returned.
@_spi(Engines) public func onConflictUpdate(_ table: String, _ conflict: [String], _ update: [String], _ returning: [String]) -> String {
    let assignments = update.isEmpty
        ? ["\(conflict[0].quotedIdentifier) = \(table.quotedIdentifier).\(conflict[0].quotedIdentifier)"]
        : update.map { "\($0.quotedIdentifier) = excluded.\($0.quotedIdentifier)" }
    return " ON CONFLICT (\(conflict.map(\.quotedIdentifier).joined(separator: ", "))) DO UPDATE SET "
        + assignments.joined(separator: ", ") + " RETURNING "
        // A table keyed by a declared column returns a constant as its header's id.
        + returning.map { $0 == TableSchema.savedMarkSQL ? $0 : $0.quotedIdentifier }.joined(separator: ", ")
}
