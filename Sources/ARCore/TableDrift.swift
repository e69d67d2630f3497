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
    public var hasLeftovers: Bool { !extraColumns.isEmpty || !typeMismatches.isEmpty || !missingForeignKeys.isEmpty }

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
        return "\(table): " + (parts.isEmpty ? "up to date" : parts.joined(separator: "; "))
    }
}

extension TableSchema {
    /// Compares the schema with the table as it is in the database. Names are compared as
    /// SQLite compares them (ASCII letters without case); an index counts as present when one
    /// over exactly its column exists, whatever its name (a unique one serves a plain index).
    package func drift(in connection: Connection) throws -> TableDrift {
        var drift = TableDrift(table: name)
        let info = try connection.rows("SELECT name, type FROM pragma_table_info(?)", [.text(name)])
        guard !info.isEmpty else {
            drift.tableIsMissing = true
            drift.missingIndexes = columns.compactMap { $0.index == nil ? nil : indexName(for: $0) }
            return drift
        }
        var found: [String: String] = [:]
        var order: [String] = []
        for row in info {
            guard case .text(let column) = row[0] else { continue }
            let type: String = if case .text(let text) = row[1] { text } else { "" }
            found[sqliteFolded(column)] = type
            order.append(column)
        }
        let declared: [(String, String)] = [("id", "INTEGER"), ("createdAt", "REAL"), ("updatedAt", "REAL")]
            + columns.map { ($0.name, $0.type.rawValue) }
        for (column, type) in declared {
            guard let actual = found[sqliteFolded(column)] else {
                drift.missingColumns.append(column)
                continue
            }
            if !actual.isEmpty, affinity(of: actual) != affinity(of: type) {
                drift.typeMismatches.append(.init(column: column, declared: type, found: actual))
            }
        }
        let declaredNames = Set(declared.map { sqliteFolded($0.0) })
        drift.extraColumns = order.filter { !declaredNames.contains(sqliteFolded($0)) }
        let indexes = try existingIndexes(in: connection)
        drift.missingIndexes = columns.compactMap { column in
            guard let kind = column.index else { return nil }
            let covered = indexes.contains { index in
                index.columns.count == 1 && sqliteSameName(index.columns[0], column.name) && (index.isUnique || kind == .index)
            }
            return covered ? nil : indexName(for: column)
        }
        let keys = try connection.rows(#"SELECT "from", "table", "to" FROM pragma_foreign_key_list(?)"#, [.text(name)])
        drift.missingForeignKeys = columns.compactMap { column in
            guard let parent = column.references, found[sqliteFolded(column.name)] != nil else { return nil }
            let exists = keys.contains { key in
                guard case .text(let from) = key[0], case .text(let table) = key[1] else { return false }
                let target: String = if case .text(let to) = key[2] { to } else { "id" }
                return sqliteSameName(from, column.name) && sqliteSameName(table, parent) && sqliteSameName(target, "id")
            }
            return exists ? nil : "\(column.name) → \(parent)(id)"
        }
        return drift
    }

    /// The table's indexes: name, uniqueness and columns in order.
    package func existingIndexes(in connection: Connection) throws -> [(name: String, isUnique: Bool, columns: [String])] {
        try connection.rows(#"SELECT name, "unique" FROM pragma_index_list(?)"#, [.text(name)]).compactMap { row in
            guard case .text(let index) = row[0] else { return nil }
            let columns = try connection.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(index)])
                .compactMap { column -> String? in if case .text(let name) = column[0] { name } else { nil } }
            return (index, row[1] == .integer(1), columns)
        }
    }

    /// Creates the table, adds missing columns (the timestamps of a table another program
    /// made, too) and creates missing indexes. Nothing else.
    /// - Throws: `.invalidModel` when the table has no `id` column (it cannot be added).
    package func applyAdditions(_ drift: TableDrift, in connection: Connection) throws {
        if drift.tableIsMissing {
            try connection.execute(createTableSQL)
        } else {
            for name in drift.missingColumns {
                let definition: String
                switch name {
                case "id":
                    throw ActiveRecordError(
                        .invalidModel,
                        "the table \(self.name) has no id column, and a primary key cannot be added to an existing table; "
                            + "give it \"id\" INTEGER PRIMARY KEY with a versioned migration (a table rebuild)")
                case "createdAt", "updatedAt": definition = "\(name.quotedIdentifier) REAL"
                default:
                    guard let column = columns.first(where: { $0.name == name }) else { continue }
                    definition = column.definitionSQL
                }
                try connection.execute("ALTER TABLE \(self.name.quotedIdentifier) ADD COLUMN \(definition)")
            }
        }
        let missing = Set(drift.missingIndexes)
        for (column, sql) in zip(columns.filter { $0.index != nil }, createIndexSQL) where missing.contains(indexName(for: column)) {
            do {
                try connection.execute(sql)
            } catch let error as ActiveRecordError where error.code == .constraint {
                throw ActiveRecordError(
                    .constraint,
                    "cannot create the unique index \(indexName(for: column)): rows of \(self.name) already repeat values "
                        + "of \(column.name); remove the duplicates first",
                    resultCode: error.resultCode, sql: error.sql)
            }
        }
    }
}

/// SQLite's type affinity of a declared type name (the rules of section 3.1 of its datatype page).
func affinity(of type: String) -> String {
    let upper = type.uppercased()
    if upper.contains("INT") { return "INTEGER" }
    if upper.contains("CHAR") || upper.contains("CLOB") || upper.contains("TEXT") { return "TEXT" }
    if upper.contains("BLOB") || upper.isEmpty { return "BLOB" }
    if upper.contains("REAL") || upper.contains("FLOA") || upper.contains("DOUB") { return "REAL" }
    return "NUMERIC"
}
