@_spi(Engines) import ARCore

/// The schema steps of a versioned migration: tables, indexes, foreign keys and CHECK
/// constraints. Each runs inside the step's transaction (DDL is transactional on both
/// engines), so a failing step leaves nothing half-done. Each says whether it is reversible:
/// a migration made of reversible steps only is reverted by ``Migrator/revert(last:on:)``
/// without a `down` (its inverse is computed).
///
/// ```swift
/// migrator.register("books") { context in
///     try context.createTable("Book", columns: [
///         ColumnSchema(name: "title", type: .text),
///         ColumnSchema(name: "authorId", type: .integer, isNullable: true),
///     ])
///     try context.addIndex(on: "Book", columns: ["authorId", "title"], unique: true)
///     try context.addForeignKey("authorId", in: "Book", references: "Author", onDelete: .cascade)
///     try context.addCheck("Book_title_present", on: "Book", "length(title) > 0")
/// }
/// ```
extension MigrationContext {
    // MARK: Tables

    /// Creates a model's table as automatic migration would (its columns, its indexes, its
    /// belongs-to foreign keys; `id`, `createdAt`, `updatedAt`). Reversible: reverting drops it.
    ///
    /// ```swift
    /// try context.createTable(Author.self)
    /// ```
    /// - Throws: `.misuse` when the table exists; `.invalidModel` for a class that cannot be
    ///   turned into a table.
    public func createTable(_ model: Model.Type) throws {
        try createTable(model.schema())
    }

    /// Creates a table from its description: the declared columns (types, nullability,
    /// defaults, indexes, belongs-to references) and the implied `id`, `createdAt`,
    /// `updatedAt`, as `TableSchema.init(name:columns:lockingColumn:)` describes them.
    /// Reversible: reverting drops it.
    ///
    /// ```swift
    /// try context.createTable(TableSchema(name: "Tag", columns: [ColumnSchema(name: "label", type: .text, index: .unique)]))
    /// ```
    /// - Throws: `.misuse` when the table exists; `.invalidModel` for a name the engine cannot hold.
    public func createTable(_ schema: TableSchema) throws {
        if let recorder { return recorder.reversible { try $0.dropTable(schema.name) } }
        guard !(try hasTable(schema.name)) else {
            throw ActiveRecordError(.misuse, "cannot create the table \(schema.name): there is one already")
        }
        try database.withSchema { connection, dialect in
            try connection.execute(try schema.createTableSQL(dialect))
            for column in schema.columns {
                if let sql = schema.createIndexSQL(for: column) { try connection.execute(sql) }
            }
        }
    }

    /// `createTable(_:)` of a `TableSchema` with the name and columns given here.
    ///
    /// ```swift
    /// try context.createTable("Tag", columns: [ColumnSchema(name: "label", type: .text)])
    /// ```
    public func createTable(_ name: String, columns: [ColumnSchema]) throws {
        try createTable(TableSchema(name: name, columns: columns))
    }

    /// Drops a table and its rows (`DROP TABLE`; its indexes, triggers and constraints go with
    /// it). Irreversible: a migration that drops a table by name is reverted only by its `down`;
    /// `dropTable(_:)` of a `TableSchema` is reversible.
    ///
    /// ```swift
    /// try context.dropTable("Legacy")
    /// ```
    /// - Throws: `.unknownTable` when there is no such table.
    public func dropTable(_ table: String) throws {
        if let recorder { return recorder.irreversible("dropTable(\"\(table)\")") }
        try requireTable(table)
        try database.withSchema { connection, _ in try connection.execute("DROP TABLE \(table.quotedIdentifier)") }
    }

    /// Drops the table `schema` describes. Reversible: reverting creates it again, empty (its
    /// rows are not kept).
    ///
    /// ```swift
    /// try context.dropTable(Tag.schema())
    /// ```
    /// - Throws: `.unknownTable` when there is no such table.
    public func dropTable(_ schema: TableSchema) throws {
        if let recorder { return recorder.reversible { try $0.createTable(schema) } }
        try dropTable(schema.name)
    }

    // MARK: Indexes

    /// The name ``addIndex(on:columns:unique:name:)`` gives an index when it is given none:
    /// `<table>_<column>_…_index`, or `_unique` for a unique one (`Book_authorId_title_unique`).
    /// For one column it is the name automatic migration gives a model's index, so that it
    /// does not make a second one.
    public static func defaultIndexName(table: String, columns: [String], unique: Bool) -> String {
        ([table] + columns + [unique ? "unique" : "index"]).joined(separator: "_")
    }

    /// Creates an index (`CREATE [UNIQUE] INDEX "name" ON "table" (columns…)`). Reversible:
    /// reverting drops it.
    ///
    /// ```swift
    /// try context.addIndex(on: "Book", columns: ["authorId", "title"], unique: true)   // Book_authorId_title_unique
    /// ```
    /// - Parameters:
    ///   - table: the table.
    ///   - columns: its columns, in the index's order (one or more).
    ///   - unique: whether no two rows may hold the same values.
    ///   - name: the index's name; by default ``defaultIndexName(table:columns:unique:)``.
    /// - Throws: `.unknownTable`, `.unknownColumn`; `.misuse` when an index of that name exists
    ///   (index names are one namespace per database, on both engines); a unique violation
    ///   (`isUniqueViolation`) when existing rows repeat values.
    public func addIndex(on table: String, columns: [String], unique: Bool = false, name: String? = nil) throws {
        let name = name ?? Self.defaultIndexName(table: table, columns: columns, unique: unique)
        if let recorder { return recorder.reversible { try $0.dropIndex(name, on: table) } }
        guard !columns.isEmpty else { throw ActiveRecordError(.misuse, "an index on \(table) needs at least one column") }
        let found = try columns.map { try requireColumn($0, in: table) }
        try database.dialect.validateName(name, of: "index")
        for other in try tableNames() {
            if let index = try indexes(of: other).first(where: { sameName($0.name, name) }) {
                throw ActiveRecordError(
                    .misuse,
                    "cannot add the index \(name) on \(table): \(other) has an index of that name already (over "
                        + "\(index.columns.joined(separator: ", "))); give this one another name")
            }
        }
        let sql = "CREATE \(unique ? "UNIQUE " : "")INDEX \(name.quotedIdentifier) ON \(table.quotedIdentifier) ("
            + found.map(\.quotedIdentifier).joined(separator: ", ") + ")"
        do {
            try database.withSchema { connection, _ in try connection.execute(sql) }
        } catch let error as ActiveRecordError where error.isUniqueViolation {
            throw error.with(
                message: "cannot create the unique index \(name): rows of \(table) already repeat values of "
                    + "(\(found.joined(separator: ", "))); remove the duplicates first")
        }
    }

    /// Drops an index by name. Irreversible (its definition is gone): a migration that drops
    /// an index this way is reverted only by its `down`;
    /// ``dropIndex(on:columns:unique:name:)`` is reversible.
    ///
    /// ```swift
    /// try context.dropIndex("Book_title_index", on: "Book")
    /// ```
    /// - Throws: `.unknownTable`; `.unknownConstraint` when the table has no index of that name.
    public func dropIndex(_ name: String, on table: String) throws {
        if let recorder { return recorder.irreversible("dropIndex(\"\(name)\", on: \"\(table)\")") }
        let existing = try indexes(of: table)
        guard let index = existing.first(where: { sameName($0.name, name) }) else {
            throw ActiveRecordError(
                .unknownConstraint,
                "\(table) has no index '\(name)'; its indexes are: \(existing.map(\.name).joined(separator: ", "))")
        }
        try database.withSchema { connection, _ in try connection.execute("DROP INDEX \(index.name.quotedIdentifier)") }
    }

    /// Drops the index ``addIndex(on:columns:unique:name:)`` made with these arguments.
    /// Reversible: reverting makes it again.
    ///
    /// ```swift
    /// try context.dropIndex(on: "Book", columns: ["authorId", "title"], unique: true)
    /// ```
    public func dropIndex(on table: String, columns: [String], unique: Bool = false, name: String? = nil) throws {
        let name = name ?? Self.defaultIndexName(table: table, columns: columns, unique: unique)
        if let recorder {
            return recorder.reversible { try $0.addIndex(on: table, columns: columns, unique: unique, name: name) }
        }
        try dropIndex(name, on: table)
    }

    // MARK: Foreign keys

    /// Adds a foreign key: `column` of `table` holds the primary key of a row of `parent`
    /// (`FOREIGN KEY (column) REFERENCES parent(id) ON DELETE …`, `DEFERRABLE INITIALLY
    /// DEFERRED` as the library's belongs-to keys are, so that rows may be saved in any order
    /// within a transaction). PostgreSQL adds it in place (`ALTER TABLE … ADD`, named
    /// `<table>_<column>_fkey`); SQLite, which has no `ADD CONSTRAINT`, rebuilds the table
    /// (see "Versioned migrations" in the Migrations article). Reversible: reverting drops it.
    ///
    /// ```swift
    /// try context.addForeignKey("authorId", in: "Book", references: "Author", onDelete: .cascade)
    /// ```
    /// - Throws: `.unknownTable`, `.unknownColumn`; `.misuse` when the column has a foreign key
    ///   already, or `parent` has no one-column primary key; a foreign-key violation
    ///   (`.constraint`, `isForeignKeyViolation`) when existing rows hold values `parent` lacks.
    public func addForeignKey(_ column: String, in table: String, references parent: String, onDelete: ForeignKeyAction = .noAction) throws {
        if let recorder { return recorder.reversible { try $0.dropForeignKey(column, in: table) } }
        let found = try requireColumn(column, in: table)
        try requireTable(parent)
        let keys = try columns(of: parent).filter(\.isPrimaryKey)
        guard keys.count == 1, let key = keys.first?.name else {
            throw ActiveRecordError(.misuse, "cannot add a foreign key to \(parent): it has no one-column primary key")
        }
        let steps = try schemaSteps()
        try database.withSchema { connection, dialect in
            if let existing = try dialect.foreignKeys(of: table, connection).first(where: { sameName($0.column, found) }) {
                throw ActiveRecordError(
                    .misuse,
                    "\(table).\(found) has a foreign key already (to \(existing.table)); drop it first with dropForeignKey")
            }
            let orphans = try connection.rows(
                "SELECT count(*) FROM \(table.quotedIdentifier) WHERE \(found.quotedIdentifier) IS NOT NULL AND NOT EXISTS "
                    + "(SELECT 1 FROM \(parent.quotedIdentifier) WHERE \(parent.quotedIdentifier).\(key.quotedIdentifier) = "
                    + "\(table.quotedIdentifier).\(found.quotedIdentifier))")
            if case .integer(let count) = orphans.first?.first, count > 0 {
                var error = ActiveRecordError(
                    .constraint,
                    "cannot add the foreign key \(table).\(found) → \(parent)(\(key)): \(count) row(s) of \(table) hold a "
                        + "\(found) that no row of \(parent) has; fix or delete them first")
                error.constraint = .foreignKey
                throw error
            }
            try steps.addForeignKey(found, in: table, references: parent, column: key, onDelete: onDelete, connection)
        }
    }

    /// Drops the foreign key on `column`. Irreversible as it is (what it referenced is not
    /// known); with `references:` it is reversible: reverting adds it again.
    ///
    /// ```swift
    /// try context.dropForeignKey("authorId", in: "Book", references: "Author", onDelete: .cascade)
    /// ```
    /// - Throws: `.unknownTable`, `.unknownColumn`; `.unknownConstraint` when the column has no
    ///   foreign key.
    public func dropForeignKey(_ column: String, in table: String, references parent: String? = nil, onDelete: ForeignKeyAction = .noAction) throws {
        if let recorder {
            guard let parent else { return recorder.irreversible("dropForeignKey(\"\(column)\", in: \"\(table)\")") }
            return recorder.reversible { try $0.addForeignKey(column, in: table, references: parent, onDelete: onDelete) }
        }
        let found = try requireColumn(column, in: table)
        let steps = try schemaSteps()
        try database.withSchema { connection, dialect in
            guard try dialect.foreignKeys(of: table, connection).contains(where: { sameName($0.column, found) }) else {
                throw ActiveRecordError(.unknownConstraint, "\(table).\(found) has no foreign key to drop")
            }
            try steps.dropForeignKey(found, in: table, connection)
        }
    }

    // MARK: CHECK constraints

    /// Adds a named CHECK constraint (`CONSTRAINT "name" CHECK (expression)`): every row must
    /// make `expression` true (or NULL). The expression is SQL text written by the migration's
    /// author, and it is spliced into the DDL as written, since it is schema, not a value (a
    /// value in it is a literal: `price > 0`, `status IN ('draft', 'live')`): never build it from
    /// user input. It must be one expression (balanced parentheses; no `;` or comment). PostgreSQL
    /// adds it in place; SQLite rebuilds the table. Reversible: reverting drops it.
    ///
    /// ```swift
    /// try context.addCheck("Product_price_positive", on: "Product", "price > 0")
    /// ```
    /// - Throws: `.unknownTable`; `.invalidModel` for a name that is not letters, digits and
    ///   `_` (not starting with a digit), or an expression that is not one expression; `.misuse`
    ///   when the table has a check of that name; a check violation (`.constraint`,
    ///   `isCheckViolation`) when existing rows fail it, saying how many.
    public func addCheck(_ name: String, on table: String, _ expression: String) throws {
        if let recorder { return recorder.reversible { try $0.dropCheck(name, from: table) } }
        try requireTable(table)
        try Self.validateCheck(name: name, expression: expression, dialect: database.dialect)
        let steps = try schemaSteps()
        try database.withSchema { connection, _ in
            guard !(try steps.checks(of: table, connection).contains { $0.name.map { sameName($0, name) } ?? false }) else {
                throw ActiveRecordError(.misuse, "\(table) has a CHECK constraint named \(name) already; give this one another name")
            }
            let failing: [[DatabaseValue]]
            do {
                failing = try connection.rows("SELECT count(*) FROM \(table.quotedIdentifier) WHERE NOT (\(expression))")
            } catch let error as ActiveRecordError {
                throw error.with(message: "the CHECK expression of \(name) is not valid SQL over \(table): \(error.message)")
            }
            if case .integer(let count) = failing.first?.first, count > 0 {
                var error = ActiveRecordError(
                    .constraint, "cannot add the CHECK constraint \(name) (\(expression)) to \(table): \(count) row(s) fail it; fix them first")
                error.constraint = .check
                throw error
            }
            try steps.addCheck(name, expression, to: table, connection)
        }
    }

    /// Drops a CHECK constraint by name. Irreversible as it is; with `expression:` (the one it
    /// was added with) it is reversible: reverting adds it again.
    ///
    /// ```swift
    /// try context.dropCheck("Product_price_positive", from: "Product", expression: "price > 0")
    /// ```
    /// - Throws: `.unknownTable`; `.unknownConstraint` when the table has no check of that name.
    public func dropCheck(_ name: String, from table: String, expression: String? = nil) throws {
        if let recorder {
            guard let expression else { return recorder.irreversible("dropCheck(\"\(name)\", from: \"\(table)\")") }
            return recorder.reversible { try $0.addCheck(name, on: table, expression) }
        }
        try requireTable(table)
        let steps = try schemaSteps()
        try database.withSchema { connection, _ in
            let checks = try steps.checks(of: table, connection)
            guard let found = checks.compactMap(\.name).first(where: { sameName($0, name) }) else {
                throw ActiveRecordError(
                    .unknownConstraint,
                    "\(table) has no CHECK constraint named '\(name)'; its named checks are: "
                        + checks.compactMap(\.name).joined(separator: ", "))
            }
            try steps.dropCheck(found, from: table, connection)
        }
    }

    /// The names of the table's CHECK constraints (table-level ones; on SQLite those with a
    /// name), sorted.
    /// - Throws: `.unknownTable` when there is no such table.
    public func checkNames(of table: String) throws -> [String] {
        try requireTable(table)
        let steps = try schemaSteps()
        return try database.withSchema { connection, _ in try steps.checks(of: table, connection).compactMap(\.name).sorted() }
    }

    // MARK: Helpers

    /// The engine's schema steps.
    /// - Throws: `.misuse` for an engine without them.
    private func schemaSteps() throws -> any SchemaStepsDialect {
        guard let steps = database.dialect as? any SchemaStepsDialect else {
            throw ActiveRecordError(.misuse, "the \(database.dialect.name) engine has no foreign key or CHECK steps")
        }
        return steps
    }

    private func sameName(_ lhs: String, _ rhs: String) -> Bool { database.dialect.sameName(lhs, rhs) }

    /// A CHECK constraint's name: letters, digits and `_`, not starting with a digit, and one
    /// the engine can hold. Its expression: one expression, spliced as written, so it may not
    /// end the statement (`;`), open a comment (`--`, `/*`) or close a parenthesis it did not
    /// open, outside quotes.
    static func validateCheck(name: String, expression: String, dialect: any SQLDialect) throws {
        let isWordByte: (UInt8) -> Bool = { ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 }
        guard let first = name.utf8.first, !(first >= 48 && first <= 57), name.utf8.allSatisfy(isWordByte) else {
            throw ActiveRecordError(
                .invalidModel, "the CHECK constraint name '\(name)' must be ASCII letters, digits and _, not starting with a digit")
        }
        try dialect.validateName(name, of: "constraint")
        var depth = 0
        var quote: UInt8?
        var previous: UInt8 = 0
        var isBlank = true
        for byte in expression.utf8 {
            defer { previous = byte }
            if let open = quote {
                if byte == open { quote = nil }
                continue
            }
            if byte != 32, byte != 9, byte != 10, byte != 13 { isBlank = false }
            switch byte {
            case 39, 34: quote = byte  // ' "
            case 40: depth += 1  // (
            case 41: depth -= 1  // )
            default: break
            }
            let comment = (previous == 45 && byte == 45) || (previous == 47 && byte == 42)  // -- /*
            guard depth >= 0, byte != 59, !comment else {
                throw ActiveRecordError(
                    .invalidModel,
                    "the CHECK expression of \(name) must be one SQL expression (no ';', no comment, no ')' it did not open)")
            }
        }
        guard !isBlank, depth == 0, quote == nil else {
            throw ActiveRecordError(
                .invalidModel, "the CHECK expression of \(name) must be one SQL expression (not empty, parentheses and quotes closed)")
        }
    }
}
