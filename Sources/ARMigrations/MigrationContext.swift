@_spi(Engines) import ARCore

/// What a migration step can do, and read. Every change runs inside the step's transaction.
///
/// Names are compared as the engine compares them: on SQLite ASCII letters without case and
/// every other character exactly (so `é` and `É` are two columns, as they are to SQLite); on
/// PostgreSQL exactly (the library quotes every name).
public struct MigrationContext: Sendable {
    let database: Database
    /// When set, the steps are not run but recorded with their inverses (how ``Migrator``
    /// reverts a migration registered without a `down`); reads still read the database.
    var recorder: StepRecorder?

    private func sameName(_ lhs: String, _ rhs: String) -> Bool { database.dialect.sameName(lhs, rhs) }

    // MARK: Reading the schema

    /// A column as the table declares it.
    public typealias ColumnInfo = ColumnDescription
    /// An index of a table.
    public typealias IndexInfo = IndexDescription

    /// The names of the tables in the database (not the engine's own, nor the migrations'), sorted.
    public func tableNames() throws -> [String] {
        try database.tableNames().filter { !sameName($0, Migrator.tableName) }
    }

    /// Whether the database has the table.
    public func hasTable(_ table: String) throws -> Bool {
        try tableNames().contains { sameName($0, table) }
    }

    /// The table's columns, in order.
    /// - Throws: `.unknownTable` when there is no such table.
    public func columns(of table: String) throws -> [ColumnInfo] {
        try requireTable(table)
        return try database.withSchema { connection, dialect in
            try dialect.columns(of: table, connection)
        }
    }

    /// Whether the table has the column (`false` when there is no such table).
    public func hasColumn(_ column: String, in table: String) throws -> Bool {
        guard try hasTable(table) else { return false }
        return try columns(of: table).contains { sameName($0.name, column) }
    }

    /// The table's indexes (those the engine makes for UNIQUE constraints too; not the
    /// primary key's).
    /// - Throws: `.unknownTable` when there is no such table.
    public func indexes(of table: String) throws -> [IndexInfo] {
        try requireTable(table)
        return try indexDescriptions(of: table)
    }

    private func indexDescriptions(of table: String) throws -> [IndexDescription] {
        try database.withSchema { connection, dialect in try dialect.indexes(of: table, connection) }
    }

    // MARK: Changing it

    /// Runs one SQL statement with bound arguments (anything the named operations do not cover).
    /// Irreversible: a migration that runs one is reverted only by its `down`.
    ///
    /// A string literal goes to ``execute(_:)-(SQL)`` (alone) or ``execute(_:_:)-(SQL,_)`` (with
    /// arguments) instead, whose `\(value)` are bound (this form is disfavoured, as
    /// `Database`'s is): this one takes a `String` variable.
    @_disfavoredOverload
    public func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        if let recorder { return recorder.irreversible("execute(\"\(sql)\")") }
        try database.execute(sql, arguments)
    }

    /// Runs one SQL statement written with interpolation, its values bound and names quoted by
    /// `\(ident:)` (see `SQL`), as `Database`'s `execute` does.
    ///
    /// ```swift
    /// try migration.execute("UPDATE \(ident: "User") SET \"age\" = \(0) WHERE \"age\" < \(0)")
    /// ```
    /// Irreversible: a migration that runs one is reverted only by its `down`.
    public func execute(_ sql: SQL) throws {
        let (text, arguments) = try sql.resolved()
        try execute(text, arguments)
    }

    /// ``execute(_:)-(SQL)`` given an arguments array too: a string literal with arguments is an
    /// `SQL`, so that a `\(value)` in it is bound even then. The arguments bind the literal's
    /// `?` placeholders when it interpolates no value.
    ///
    /// ```swift
    /// try migration.execute("UPDATE \(ident: "User") SET \"age\" = ? WHERE \"age\" < ?", [.integer(0), .integer(0)])
    /// ```
    /// - Throws: `.misuse` when the literal interpolates values AND arguments are given. (The
    ///   arguments are a generic collection so that a literal with an array literal comes here:
    ///   see `Database`'s `rows(_:_:)`.)
    public func execute(_ sql: SQL, _ arguments: some Collection<DatabaseValue>) throws {
        let (text, arguments) = try sql.resolved(with: arguments, in: "MigrationContext.execute")
        try execute(text, arguments)
    }

    /// Renames a table (`ALTER TABLE … RENAME TO`, which also updates its indexes, triggers
    /// and the foreign keys and views that name it). Indexes named after the table by the
    /// library's convention (`Client_phone_index`) are renamed with it (`Customer_phone_index`).
    /// Reversible: reverting renames it back.
    public func renameTable(_ table: String, to newName: String) throws {
        if let recorder { return recorder.reversible { try $0.renameTable(newName, to: table) } }
        try requireTable(table)
        let conventional = try conventionalIndexes(of: table)
        try execute(SQL(sql: "ALTER TABLE \(table.quotedIdentifier) RENAME TO \(newName.quotedIdentifier)"))
        for index in conventional {
            try renameIndex(index.info, to: "\(newName)_\(index.column)_\(index.kind)", on: newName, columns: index.info.columns)
        }
    }

    /// Renames a column (`ALTER TABLE … RENAME COLUMN`, which also updates the indexes and
    /// views that use it). Indexes named after the column by the library's convention
    /// (`Bookmark_link_index`) are renamed with it (`Bookmark_url_index`), so that automatic
    /// migration finds them under the names it would give them. Reversible: reverting renames
    /// it back.
    public func renameColumn(_ column: String, to newName: String, in table: String) throws {
        if let recorder { return recorder.reversible { try $0.renameColumn(newName, to: column, in: table) } }
        let existing = try requireColumn(column, in: table)
        let conventional = try conventionalIndexes(of: table).filter { sameName($0.column, existing) }
        try execute(SQL(sql: "ALTER TABLE \(table.quotedIdentifier) RENAME COLUMN \(existing.quotedIdentifier) TO \(newName.quotedIdentifier)"))
        for index in conventional {
            try renameIndex(index.info, to: "\(table)_\(newName)_\(index.kind)", on: table, columns: [newName])
        }
    }

    /// Drops a column: on SQLite by rebuilding the table (indexes on other columns are
    /// recreated), on PostgreSQL with `ALTER TABLE … DROP COLUMN` (its indexes go with it).
    /// On both engines the CHECK constraints that name it go too.
    /// Irreversible (its data is gone): a migration that drops one is reverted only by its `down`.
    public func dropColumn(_ column: String, from table: String) throws {
        if let recorder { return recorder.irreversible("dropColumn(\"\(column)\", from: \"\(table)\")") }
        let existing = try requireColumn(column, in: table)
        try database.withSchema { connection, dialect in try dialect.dropColumn(existing, from: table, connection) }
    }

    /// Changes a column's declared type: on SQLite by rebuilding the table (values are copied
    /// as they are, and SQLite applies the new type's affinity: text `'42'` into INTEGER becomes
    /// 42); on PostgreSQL with `ALTER COLUMN … TYPE`, converting each value (a value that does
    /// not convert fails the step). `kind` picks PostgreSQL's narrower type (`BOOLEAN`, `NUMERIC`,
    /// `UUID`); SQLite stores every kind in `type`'s storage class. Irreversible (the old type
    /// is not known): a migration that changes one is reverted only by its `down`.
    public func changeColumnType(_ column: String, in table: String, to type: SQLType, kind: ColumnKind = .plain) throws {
        if let recorder { return recorder.irreversible("changeColumnType(\"\(column)\", in: \"\(table)\")") }
        let existing = try requireColumn(column, in: table)
        try database.withSchema { connection, dialect in
            try dialect.changeColumnType(existing, in: table, to: type, kind, connection)
        }
    }

    // MARK: Indexes named by the library's convention

    /// The table's indexes named `<table>_<column>_index` or `_unique` over that one column.
    private func conventionalIndexes(of table: String) throws -> [(info: IndexDescription, column: String, kind: String)] {
        try requireTable(table)
        return try indexDescriptions(of: table).compactMap { index in
            guard index.columns.count == 1, !index.isPartial else { return nil }
            let kind = index.isUnique ? "unique" : "index"
            guard sameName(index.name, "\(table)_\(index.columns[0])_\(kind)") else { return nil }
            return (index, index.columns[0], kind)
        }
    }

    /// Renames an index, which then covers `columns` (the names they have now).
    private func renameIndex(_ index: IndexDescription, to newName: String, on table: String, columns: [String]) throws {
        guard !sameName(index.name, newName) else { return }
        try database.withSchema { connection, dialect in
            try dialect.renameIndex(index, to: newName, on: table, columns: columns, connection)
        }
    }

    func requireTable(_ table: String) throws {
        guard try hasTable(table) else {
            throw ActiveRecordError(.unknownTable, "there is no table \(table)")
        }
    }

    /// The column's name as the table writes it.
    /// - Throws: `.unknownColumn` listing the table's columns.
    @discardableResult
    func requireColumn(_ column: String, in table: String) throws -> String {
        let columns = try self.columns(of: table).map(\.name)
        guard let found = columns.first(where: { sameName($0, column) }) else {
            throw ActiveRecordError(
                .unknownColumn, "\(table) has no column '\(column)'; its columns are: \(columns.joined(separator: ", "))")
        }
        return found
    }
}
