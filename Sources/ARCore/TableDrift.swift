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

    /// Makes a drift value (the library computes them; this is for comparisons).
    public init(
        table: String, tableIsMissing: Bool = false, missingColumns: [String] = [], missingIndexes: [String] = [],
        extraColumns: [String] = [], typeMismatches: [TypeMismatch] = []
    ) {
        self.table = table
        self.tableIsMissing = tableIsMissing
        self.missingColumns = missingColumns
        self.missingIndexes = missingIndexes
        self.extraColumns = extraColumns
        self.typeMismatches = typeMismatches
    }

    /// Whether the table matches its schema.
    public var isEmpty: Bool {
        !tableIsMissing && missingColumns.isEmpty && missingIndexes.isEmpty && extraColumns.isEmpty
            && typeMismatches.isEmpty
    }

    /// Whether automatic migration has something to add.
    public var hasAdditions: Bool { tableIsMissing || !missingColumns.isEmpty || !missingIndexes.isEmpty }

    /// Whether something differs that automatic migration leaves alone.
    public var hasLeftovers: Bool { !extraColumns.isEmpty || !typeMismatches.isEmpty }

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
        return "\(table): " + (parts.isEmpty ? "up to date" : parts.joined(separator: "; "))
    }
}

extension TableSchema {
    /// Compares the schema with the table as it is in the database.
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
            found[column.lowercased()] = type
            order.append(column)
        }
        let declared: [(String, String)] = [("id", "INTEGER"), ("createdAt", "REAL"), ("updatedAt", "REAL")]
            + columns.map { ($0.name, $0.type.rawValue) }
        for (column, type) in declared {
            guard let actual = found[column.lowercased()] else {
                drift.missingColumns.append(column)
                continue
            }
            if !actual.isEmpty, affinity(of: actual) != affinity(of: type) {
                drift.typeMismatches.append(.init(column: column, declared: type, found: actual))
            }
        }
        let declaredNames = Set(declared.map { $0.0.lowercased() })
        drift.extraColumns = order.filter { !declaredNames.contains($0.lowercased()) }
        let indexes = Set(try connection.rows("SELECT name FROM pragma_index_list(?)", [.text(name)]).compactMap { row in
            if case .text(let index) = row[0] { index.lowercased() } else { nil }
        })
        drift.missingIndexes = columns.compactMap { column in
            guard column.index != nil else { return nil }
            let index = indexName(for: column)
            return indexes.contains(index.lowercased()) ? nil : index
        }
        return drift
    }

    /// Creates the table, adds missing columns and creates missing indexes. Nothing else.
    package func applyAdditions(_ drift: TableDrift, in connection: Connection) throws {
        if drift.tableIsMissing {
            try connection.execute(createTableSQL)
        } else {
            for name in drift.missingColumns {
                guard let column = columns.first(where: { $0.name == name }) else { continue }
                try connection.execute("ALTER TABLE \(self.name.quotedIdentifier) ADD COLUMN \(column.definitionSQL)")
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
