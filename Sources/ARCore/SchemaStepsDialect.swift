/// What a foreign key does to the referencing rows when the referenced row is deleted
/// (`ON DELETE …`), for `MigrationContext.addForeignKey`.
///
/// ```swift
/// try context.addForeignKey("authorId", in: "Book", references: "Author", onDelete: .cascade)
/// ```
public enum ForeignKeyAction: String, Sendable, CaseIterable {
    /// `ON DELETE CASCADE`: the referencing rows are deleted with it.
    case cascade = "CASCADE"
    /// `ON DELETE SET NULL`: the referencing column becomes `NULL`.
    case setNull = "SET NULL"
    /// `ON DELETE RESTRICT`: deleting a referenced row fails at once.
    case restrict = "RESTRICT"
    /// `ON DELETE NO ACTION` (the SQL default): deleting a referenced row fails unless the
    /// reference is gone by the time the constraint is checked (the transaction's end, for the
    /// deferred keys the library makes).
    case noAction = "NO ACTION"

    /// The action's SQL words.
    public var sql: String { rawValue }
}

/// A foreign key as the schema dump and the schema steps read it: one referencing column.
@_spi(Engines) public struct ForeignKeyDetail: Sendable, Equatable {
    /// The referencing column, in the table whose keys these are (`authorId`).
    public var column: String
    /// The referenced (parent) table (`Author`).
    public var table: String
    /// The referenced column of ``table`` (`id`).
    public var referencedColumn: String
    /// The `ON DELETE` action as SQL: `CASCADE`, `SET NULL`, `SET DEFAULT`, `RESTRICT` or `NO ACTION`.
    public var onDelete: String
    /// The `ON UPDATE` action as SQL, as ``onDelete`` (`NO ACTION` for the library's keys).
    public var onUpdate: String
    /// Whether the key is checked at commit (`DEFERRABLE INITIALLY DEFERRED`, as the library's
    /// belongs-to keys are) rather than at each statement.
    public var isDeferred: Bool

    /// A foreign key as an engine's ``SchemaStepsDialect/foreignKeyDetails(of:_:)`` reports it:
    ///
    /// ```swift
    /// ForeignKeyDetail(column: "authorId", table: "Author", referencedColumn: "id",
    ///                  onDelete: "CASCADE", onUpdate: "NO ACTION", isDeferred: true)
    /// ```
    public init(column: String, table: String, referencedColumn: String, onDelete: String, onUpdate: String, isDeferred: Bool) {
        self.column = column
        self.table = table
        self.referencedColumn = referencedColumn
        self.onDelete = onDelete
        self.onUpdate = onUpdate
        self.isDeferred = isDeferred
    }
}

/// A table's CHECK constraint as the engine reports it: its name (SQLite: `nil` for one made
/// without a name) and its expression's SQL text.
@_spi(Engines) public struct CheckDescription: Sendable, Equatable {
    /// The constraint's name (`Book_pages_positive`); `nil` on SQLite for a CHECK written
    /// without `CONSTRAINT name`.
    public var name: String?
    /// The expression's SQL text, as the engine keeps it (`pages >= 1` on SQLite, as written;
    /// PostgreSQL's own spelling, `(pages >= 1)`).
    public var expression: String

    /// A CHECK constraint as an engine's ``SchemaStepsDialect/checks(of:_:)`` reports it:
    ///
    /// ```swift
    /// CheckDescription(name: "Book_pages_positive", expression: "pages >= 1")
    /// ```
    public init(name: String?, expression: String) {
        self.name = name
        self.expression = expression
    }
}

/// The schema steps of versioned migrations that need the engine's own SQL or procedure
/// (ARMigrations' `addForeignKey`, `addCheck` and their inverses), and what the schema dump
/// (`Database.schemaSQL()`) reads beyond ``SQLDialect``'s descriptions. Kept apart from
/// ``SQLDialect`` so that an engine without them still is one: the steps then fail with
/// `.misuse` naming the engine. Each runs on the given connection, inside a migration step's
/// transaction; names and actions are checked by the caller.
@_spi(Engines) public protocol SchemaStepsDialect: SQLDialect {
    /// Adds a foreign key `column → table(referencedColumn)` with `ON DELETE action`,
    /// `DEFERRABLE INITIALLY DEFERRED` as the library's belongs-to keys are (SQLite rebuilds
    /// the table).
    func addForeignKey(
        _ column: String, in table: String, references parent: String, column referencedColumn: String,
        onDelete action: ForeignKeyAction, _ connection: Connection) throws
    /// Drops the foreign key on `column` (SQLite rebuilds the table).
    func dropForeignKey(_ column: String, in table: String, _ connection: Connection) throws
    /// Adds `CONSTRAINT name CHECK (expression)` (SQLite rebuilds the table).
    func addCheck(_ name: String, _ expression: String, to table: String, _ connection: Connection) throws
    /// Drops the CHECK constraint `name` (SQLite rebuilds the table).
    func dropCheck(_ name: String, from table: String, _ connection: Connection) throws
    /// The table's table-level CHECK constraints.
    func checks(of table: String, _ connection: Connection) throws -> [CheckDescription]
    /// The table's foreign keys with their actions, one per referencing column.
    func foreignKeyDetails(of table: String, _ connection: Connection) throws -> [ForeignKeyDetail]
    /// The table's columns for the schema dump: as ``SQLDialect/columns(of:_:)``, with what
    /// the engine adds to a column's type (PostgreSQL: `GENERATED BY DEFAULT AS IDENTITY`).
    func dumpedColumns(of table: String, _ connection: Connection) throws -> [ColumnDescription]
}
