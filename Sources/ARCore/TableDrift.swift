/// How a table in the database differs from its schema.
///
/// Automatic migration adds what is missing (the table, columns, indexes) and
/// never drops or rewrites anything: extra columns and type mismatches are
/// reported and left alone.
public struct TableDrift: Sendable, Equatable, CustomStringConvertible {
    /// A column whose type in the database has another affinity than declared.
    public struct TypeMismatch: Sendable, Equatable {
        /// The column name.
        public var column: String
        /// The declared SQL type.
        public var declared: String
        /// The type in the database.
        public var found: String

        /// Makes a mismatch.
        public init(column: String, declared: String, found: String) {
            self.column = column
            self.declared = declared
            self.found = found
        }
    }

    /// The table name.
    public var table: String
    /// The table does not exist: it would be created.
    public var tableIsMissing: Bool
    /// Declared columns the table lacks: they would be added.
    public var missingColumns: [String]
    /// Declared indexes the table lacks: they would be created.
    public var missingIndexes: [String]
    /// Columns in the table that the model does not declare: left alone.
    public var extraColumns: [String]
    /// Columns whose types differ: left alone (a versioned migration can change them).
    public var typeMismatches: [TypeMismatch]
    /// Declared foreign keys the table lacks (`groupId → Group(id)`): left alone, since SQLite
    /// adds a foreign key to an existing column only by rebuilding the table.
    public var missingForeignKeys: [String]
    /// The primary key differs (another column, or another kind, than the model's
    /// ``PrimaryKey``): `"id in the database, declared code"`. Left alone: a key is changed by a
    /// versioned migration that rebuilds the table. `nil` when it matches.
    public var primaryKeyChange: String? = nil

    /// Makes a drift value (the library computes them; this is for comparisons).
    public init(
        table: String, tableIsMissing: Bool = false, missingColumns: [String] = [], missingIndexes: [String] = [],
        extraColumns: [String] = [], typeMismatches: [TypeMismatch] = [], missingForeignKeys: [String] = []
    ) {
        self.table = table
        self.tableIsMissing = tableIsMissing
        self.missingColumns = missingColumns
        self.missingIndexes = missingIndexes
        self.extraColumns = extraColumns
        self.typeMismatches = typeMismatches
        self.missingForeignKeys = missingForeignKeys
    }

    /// Whether the table matches its schema.
    public var isEmpty: Bool { !hasAdditions && !hasLeftovers }

    /// Whether automatic migration has something to add.
    public var hasAdditions: Bool { tableIsMissing || !missingColumns.isEmpty || !missingIndexes.isEmpty }

    /// Whether something differs that automatic migration leaves alone.
    public var hasLeftovers: Bool {
        !extraColumns.isEmpty || !typeMismatches.isEmpty || !missingForeignKeys.isEmpty || primaryKeyChange != nil
    }

    /// `User: add columns email, age; create index User_email_unique; …`.
    public var description: String {
        var parts: [String] = []
        if tableIsMissing { parts.append("create the table") }
        if !missingColumns.isEmpty { parts.append("add columns \(missingColumns.joined(separator: ", "))") }
        if !missingIndexes.isEmpty { parts.append("create indexes \(missingIndexes.joined(separator: ", "))") }
        if !extraColumns.isEmpty {
            parts.append("columns not in the model, left alone: \(extraColumns.joined(separator: ", "))")
        }
        for mismatch in typeMismatches {
            parts.append("\(mismatch.column) is \(mismatch.found) in the database but declared \(mismatch.declared) "
                + "(left alone; a versioned migration can change it)")
        }
        if !missingForeignKeys.isEmpty {
            parts.append("foreign keys not in the table, left alone (a versioned migration can add them): "
                + missingForeignKeys.joined(separator: ", "))
        }
        if let primaryKeyChange {
            parts.append("the primary key is \(primaryKeyChange) (left alone; a versioned migration can rebuild the table)")
        }
        return "\(table): " + (parts.isEmpty ? "up to date" : parts.joined(separator: "; "))
    }
}

extension TableSchema {
    /// Compares the schema with the table as it is in the database. Names are compared as
    /// the engine compares them (SQLite: ASCII letters without case); an index counts as
    /// present when one over exactly its column exists, whatever its name (a unique one
    /// serves a plain index).
    package func drift(in connection: Connection) throws -> TableDrift {
        let dialect = connection.dialect
        var drift = TableDrift(table: name)
        let found = try dialect.columns(of: name, connection)
        guard !found.isEmpty else {
            drift.tableIsMissing = true
            drift.missingIndexes = columns.compactMap { $0.index == nil ? nil : indexName(for: $0) }
            return drift
        }
        func column(_ name: String) -> ColumnDescription? { found.first { dialect.sameName($0.name, name) } }
        // An integer key is a column of its own; a UUID or String key is one of the columns.
        let integerKey: [(name: String, type: SQLType, kind: ColumnKind)] =
            primaryKey.isAutoincrement ? [(primaryKey.name, .integer, .plain)] : []
        let declared = integerKey + [("createdAt", .real, .plain), ("updatedAt", .real, .plain)]
            + columns.map { ($0.name, $0.type, $0.kind) }
        for (name, type, kind) in declared {
            guard let actual = column(name) else {
                drift.missingColumns.append(name)
                continue
            }
            if !dialect.typeMatches(actual.type, type, kind) {
                drift.typeMismatches.append(.init(column: name, declared: dialect.columnType(type, kind), found: actual.type))
            }
        }
        drift.extraColumns = found.map(\.name).filter { name in !declared.contains { dialect.sameName($0.name, name) } }
        let foundKey = found.filter(\.isPrimaryKey).map(\.name)
        if foundKey.count != 1 || !dialect.sameName(foundKey[0], primaryKey.name) {
            let inDatabase = foundKey.isEmpty ? "none" : foundKey.joined(separator: ", ")
            drift.primaryKeyChange = "\(inDatabase) in the database, declared \(primaryKey.name)"
        }
        let indexes = try dialect.indexes(of: name, connection)
        drift.missingIndexes = columns.compactMap { column in
            guard let kind = column.index else { return nil }
            let covered = indexes.contains { index in
                index.columns.count == 1 && !index.isPartial && dialect.sameName(index.columns[0], column.name)
                    && (index.isUnique || kind == .index)
            }
            return covered ? nil : indexName(for: column)
        }
        let keys = try dialect.foreignKeys(of: name, connection)
        drift.missingForeignKeys = columns.compactMap { declared in
            guard let parent = declared.references, column(declared.name) != nil else { return nil }
            let exists = keys.contains { key in
                dialect.sameName(key.column, declared.name) && dialect.sameName(key.table, parent)
                    && dialect.sameName(key.referencedColumn, declared.referencedColumn)
            }
            return exists ? nil : "\(declared.name) → \(parent)(\(declared.referencedColumn))"
        }
        return drift
    }

    /// Creates the table, adds missing columns (the timestamps of a table another program
    /// made, too) and creates missing indexes. Nothing else.
    /// - Throws: `.invalidModel` when the table has no `id` column (it cannot be added).
    package func applyAdditions(_ drift: TableDrift, in connection: Connection) throws {
        let dialect = connection.dialect
        if drift.tableIsMissing {
            try connection.execute(try createTableSQL(dialect))
        } else {
            for name in drift.missingColumns {
                let definition: String
                switch name {
                case "id", primaryKey.name:
                    throw ActiveRecordError(
                        .invalidModel,
                        "the table \(self.name) has no \(primaryKey.name) column, and a primary key cannot be added to an existing "
                            + "table; give it its primary key with a versioned migration")
                case "createdAt", "updatedAt": definition = "\(name.quotedIdentifier) \(dialect.columnType(.real, .plain))"
                default:
                    guard let column = columns.first(where: { $0.name == name }) else { continue }
                    definition = try column.definitionSQL(dialect)
                }
                try connection.execute("ALTER TABLE \(self.name.quotedIdentifier) ADD COLUMN \(definition)")
            }
        }
        let missing = Set(drift.missingIndexes)
        for column in columns where missing.contains(indexName(for: column)) {
            guard let sql = createIndexSQL(for: column) else { continue }
            do {
                try connection.execute(sql)
            } catch let error as ActiveRecordError where error.code == .constraint {
                throw error.with(
                    message: "cannot create the unique index \(indexName(for: column)): rows of \(self.name) already repeat "
                        + "values of \(column.name); remove the duplicates first")
            }
        }
    }
}
