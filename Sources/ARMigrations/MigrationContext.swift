import ARCore

/// What a migration step can do, and read. Every change runs inside the step's transaction.
///
/// Names are compared as SQLite compares them: ASCII letters without case, every other
/// character exactly (so `é` and `É` are two columns, as they are to SQLite).
public struct MigrationContext: Sendable {
    let database: Database

    // MARK: Reading the schema

    /// A column as the table declares it.
    public struct ColumnInfo: Sendable, Equatable {
        /// The column name.
        public var name: String
        /// The declared type, as written (`INTEGER`, `VARCHAR(20)`, or empty).
        public var type: String
        /// Whether the column may hold `NULL`.
        public var isNullable: Bool
        /// The default value's SQL text, if any.
        public var defaultSQL: String?
        /// Whether the column is (part of) the primary key.
        public var isPrimaryKey: Bool

        /// Makes a column description (the context reads them; this is for comparisons).
        public init(name: String, type: String, isNullable: Bool, defaultSQL: String?, isPrimaryKey: Bool) {
            self.name = name
            self.type = type
            self.isNullable = isNullable
            self.defaultSQL = defaultSQL
            self.isPrimaryKey = isPrimaryKey
        }
    }

    /// An index of a table.
    public struct IndexInfo: Sendable, Equatable {
        /// The index name.
        public var name: String
        /// Whether it is a UNIQUE index.
        public var isUnique: Bool
        /// Its columns, in order.
        public var columns: [String]

        /// Makes an index description (the context reads them; this is for comparisons).
        public init(name: String, isUnique: Bool, columns: [String]) {
            self.name = name
            self.isUnique = isUnique
            self.columns = columns
        }
    }

    /// The names of the tables in the database (not SQLite's own, nor the migrations'), sorted.
    public func tableNames() throws -> [String] {
        try database.tableNames().filter { !sqliteSameName($0, Migrator.tableName) }
    }

    /// Whether the database has the table.
    public func hasTable(_ table: String) throws -> Bool {
        try tableNames().contains { sqliteSameName($0, table) }
    }

    /// The table's columns, in order.
    /// - Throws: `.unknownTable` when there is no such table.
    public func columns(of table: String) throws -> [ColumnInfo] {
        try requireTable(table)
        return try database.rows(#"SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)"#, [.text(table)])
            .map { row in
                ColumnInfo(
                    name: row[0].textValue ?? "", type: row[1].textValue ?? "", isNullable: row[2] != .integer(1),
                    defaultSQL: row[3].textValue, isPrimaryKey: row[4] != .integer(0))
            }
    }

    /// Whether the table has the column (`false` when there is no such table).
    public func hasColumn(_ column: String, in table: String) throws -> Bool {
        guard try hasTable(table) else { return false }
        return try columns(of: table).contains { sqliteSameName($0.name, column) }
    }

    /// The table's indexes (those SQLite makes for UNIQUE constraints too).
    /// - Throws: `.unknownTable` when there is no such table.
    public func indexes(of table: String) throws -> [IndexInfo] {
        try requireTable(table)
        return try database.rows(#"SELECT name, "unique" FROM pragma_index_list(?)"#, [.text(table)]).compactMap { row in
            guard let name = row[0].textValue else { return nil }
            let columns = try database.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(name)])
                .compactMap { $0[0].textValue }
            return IndexInfo(name: name, isUnique: row[1] == .integer(1), columns: columns)
        }
    }

    // MARK: Changing it

    /// Runs one SQL statement with bound arguments (anything the named operations do not cover).
    public func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        try database.execute(sql, arguments)
    }

    /// Renames a table (`ALTER TABLE … RENAME TO`, which also updates its indexes, triggers
    /// and the foreign keys and views that name it). Indexes named after the table by the
    /// library's convention (`Client_phone_index`) are renamed with it (`Customer_phone_index`).
    public func renameTable(_ table: String, to newName: String) throws {
        try requireTable(table)
        let conventional = try conventionalIndexes(of: table)
        try execute("ALTER TABLE \(table.quotedIdentifier) RENAME TO \(newName.quotedIdentifier)")
        for index in conventional {
            try renameIndex(index.info, to: "\(newName)_\(index.column)_\(index.kind)", on: newName, columns: index.info.columns)
        }
    }

    /// Renames a column (`ALTER TABLE … RENAME COLUMN`, which also updates the indexes and
    /// views that use it). Indexes named after the column by the library's convention
    /// (`Bookmark_link_index`) are renamed with it (`Bookmark_url_index`), so that automatic
    /// migration finds them under the names it would give them.
    public func renameColumn(_ column: String, to newName: String, in table: String) throws {
        let existing = try requireColumn(column, in: table)
        let conventional = try conventionalIndexes(of: table).filter { sqliteSameName($0.column, existing) }
        try execute("ALTER TABLE \(table.quotedIdentifier) RENAME COLUMN \(existing.quotedIdentifier) TO \(newName.quotedIdentifier)")
        for index in conventional {
            try renameIndex(index.info, to: "\(table)_\(newName)_\(index.kind)", on: table, columns: [newName])
        }
    }

    /// Drops a column by rebuilding the table; indexes on other columns are recreated.
    public func dropColumn(_ column: String, from table: String) throws {
        let existing = try requireColumn(column, in: table)
        try rebuild(table) { columns in columns.filter { !sqliteSameName($0.name, existing) } }
    }

    /// Changes a column's declared type by rebuilding the table. Values are copied as
    /// they are; SQLite applies the new type's affinity (text `'42'` into INTEGER becomes 42).
    public func changeColumnType(_ column: String, in table: String, to type: SQLType) throws {
        let existing = try requireColumn(column, in: table)
        try rebuild(table) { columns in
            columns.map { definition in
                var changed = definition
                if sqliteSameName(definition.name, existing) { changed.type = type.rawValue }
                return changed
            }
        }
    }

    // MARK: Indexes named by the library's convention

    /// The table's indexes named `<table>_<column>_index` or `_unique` over that one column.
    private func conventionalIndexes(of table: String) throws -> [(info: IndexInfo, column: String, kind: String)] {
        let partial = Set(try database.rows(#"SELECT name FROM pragma_index_list(?) WHERE partial = 1"#, [.text(table)])
            .compactMap { $0[0].textValue.map(sqliteFolded) })
        return try indexes(of: table).compactMap { index in
            guard index.columns.count == 1, !partial.contains(sqliteFolded(index.name)) else { return nil }
            let kind = index.isUnique ? "unique" : "index"
            guard sqliteSameName(index.name, "\(table)_\(index.columns[0])_\(kind)") else { return nil }
            return (index, index.columns[0], kind)
        }
    }

    /// SQLite has no `ALTER INDEX … RENAME`: the index is made again under the new name, on
    /// `columns` (the names they have now).
    private func renameIndex(_ index: IndexInfo, to newName: String, on table: String, columns: [String]) throws {
        guard !sqliteSameName(index.name, newName) else { return }
        try execute("DROP INDEX \(index.name.quotedIdentifier)")
        try execute(
            "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX \(newName.quotedIdentifier) ON \(table.quotedIdentifier) ("
                + columns.map(\.quotedIdentifier).joined(separator: ", ") + ")")
    }

    // MARK: The table-rebuild procedure

    /// A column as the table declares it, for a rebuild.
    struct ColumnDefinition {
        var name: String
        var type: String
        var notNull: Bool
        var defaultSQL: String?
        var primaryKey: Bool

        /// The column's definition in the new table. The declared type and default come
        /// from `pragma_table_info`, as text SQLite hands back dequoted: a type that is not
        /// a plain type name is written as a string literal (SQLite's type names may be
        /// quoted), and a default that is not a literal is parenthesised, so that neither
        /// can become more SQL than one type and one default.
        func sql() throws -> String {
            var text = name.quotedIdentifier
            if !type.isEmpty { text += " " + (isPlainTypeName(type) ? type : quoteSQL(type, with: "'")) }
            if primaryKey { text += " PRIMARY KEY" }
            if notNull { text += " NOT NULL" }
            if let defaultSQL { text += " DEFAULT " + (try defaultExpression(defaultSQL)) }
            return text
        }
    }

    /// SQLite's procedure for schema changes ALTER TABLE cannot make: create the new
    /// table, copy the rows, drop the old one, rename, recreate indexes, triggers and views,
    /// then check foreign keys. Runs inside the step's transaction, with foreign keys off
    /// (``Migrator`` turns them off around each step): otherwise dropping the old table
    /// would run the `ON DELETE` actions of the tables that reference it.
    func rebuild(_ table: String, _ transform: ([ColumnDefinition]) -> [ColumnDefinition]) throws {
        guard try database.rows("PRAGMA foreign_keys").first?.first == .integer(0) else {
            throw ActiveRecordError(
                .misuse,
                "rebuilding \(table) needs foreign keys off, or dropping the old table would run the ON DELETE "
                    + "actions of the tables that reference it; run the step through a Migrator")
        }
        let columns = try definitions(of: table)
        let kept = transform(columns)
        let temporary = "activerecord_rebuild_\(table)"
        let keptNames = Set(kept.map { sqliteFolded($0.name) })
        // Indexes to recreate: those whose columns all remain (read before the old table goes).
        var schemaSQL: [String] = []
        for row in try database.rows(
            "SELECT name, sql FROM sqlite_master WHERE tbl_name = ? AND type = 'index' AND sql IS NOT NULL", [.text(table)]) {
            guard let index = row[0].textValue, let sql = row[1].textValue else { continue }
            let indexed = try database.rows("SELECT name FROM pragma_index_info(?)", [.text(index)]).compactMap { $0[0].textValue }
            if indexed.allSatisfy({ keptNames.contains(sqliteFolded($0)) }) { schemaSQL.append(sql) }
        }
        schemaSQL += try database.rows(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type = 'trigger' AND sql IS NOT NULL", [.text(table)])
            .compactMap { $0[0].textValue }
        // Views are checked when the new table is renamed into place: set them aside and make
        // them again after, each saying clearly if it used what the step removed.
        let views = try database.rows("SELECT name, sql FROM sqlite_master WHERE type = 'view' AND sql IS NOT NULL")
            .compactMap { row -> (name: String, sql: String)? in
                guard let name = row[0].textValue, let sql = row[1].textValue else { return nil }
                return (name, sql)
            }
        for view in views { try execute("DROP VIEW \(view.name.quotedIdentifier)") }
        let constraints = try tableConstraints(of: table, keeping: keptNames)
        let body = (try kept.map { try $0.sql() } + constraints).joined(separator: ", ")
        try execute("CREATE TABLE \(temporary.quotedIdentifier) (\(body))")
        let names = kept.map { $0.name.quotedIdentifier }.joined(separator: ", ")
        try execute("INSERT INTO \(temporary.quotedIdentifier) (\(names)) SELECT \(names) FROM \(table.quotedIdentifier)")
        try execute("DROP TABLE \(table.quotedIdentifier)")
        try execute("ALTER TABLE \(temporary.quotedIdentifier) RENAME TO \(table.quotedIdentifier)")
        for sql in schemaSQL { try execute(sql) }
        for view in views {
            do {
                try execute(view.sql)
                try database.withStrictIdentifiers { try execute("SELECT * FROM \(view.name.quotedIdentifier) LIMIT 0") }
            } catch let error as ActiveRecordError {
                throw ActiveRecordError(
                    .migrationFailed,
                    "the view \(view.name) uses what rebuilding \(table) removes, so it cannot be made again "
                        + "(\(error.message)); drop or change the view in this step first")
            }
        }
        let problems = try database.rows("SELECT * FROM pragma_foreign_key_check(?)", [.text(table)])
        guard problems.isEmpty else {
            throw ActiveRecordError(.constraint, "rebuilding \(table) broke \(problems.count) foreign key reference(s)")
        }
    }

    /// The table's FOREIGN KEY and UNIQUE constraints (which `pragma_table_info` does not show)
    /// whose columns all remain, each foreign key as deferrable as it was. CHECK constraints
    /// and collations are not carried over.
    func tableConstraints(of table: String, keeping kept: Set<String>) throws -> [String] {
        var constraints: [String] = []
        var keys: [Int64: (table: String, from: [String], to: [String], onUpdate: String, onDelete: String)] = [:]
        for row in try database.rows(
            "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            [.text(table)]) {
            guard case .integer(let id) = row[0] else { continue }
            var key = keys[id] ?? (row[1].textValue ?? "", [], [], row[4].textValue ?? "NO ACTION", row[5].textValue ?? "NO ACTION")
            key.from.append(row[2].textValue ?? "")
            if let to = row[3].textValue { key.to.append(to) }
            keys[id] = key
        }
        let deferred = try deferredForeignKeyColumns(of: table)
        for (_, key) in keys.sorted(by: { $0.key < $1.key }) where key.from.allSatisfy({ kept.contains(sqliteFolded($0)) }) {
            let target = key.to.isEmpty ? "" : "(" + key.to.map(\.quotedIdentifier).joined(separator: ", ") + ")"
            let isDeferred = key.from.contains { deferred.contains(sqliteFolded($0)) }
            constraints.append(
                "FOREIGN KEY (" + key.from.map(\.quotedIdentifier).joined(separator: ", ") + ") REFERENCES "
                    + key.table.quotedIdentifier + target + " ON UPDATE \(try foreignKeyAction(key.onUpdate))"
                    + " ON DELETE \(try foreignKeyAction(key.onDelete))" + (isDeferred ? " DEFERRABLE INITIALLY DEFERRED" : ""))
        }
        for row in try database.rows("SELECT name FROM pragma_index_list(?) WHERE origin = 'u'", [.text(table)]) {
            guard let index = row[0].textValue else { continue }
            let columns = try database.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(index)])
                .compactMap { $0[0].textValue }
            if !columns.isEmpty, columns.allSatisfy({ kept.contains(sqliteFolded($0)) }) {
                constraints.append("UNIQUE (" + columns.map(\.quotedIdentifier).joined(separator: ", ") + ")")
            }
        }
        return constraints
    }

    /// The columns (folded) whose foreign key the table declares `DEFERRABLE INITIALLY
    /// DEFERRED` (as the library's belongs-to keys are): `pragma_foreign_key_list` does not
    /// say, so the table's own `CREATE TABLE` text is read, definition by definition.
    private func deferredForeignKeyColumns(of table: String) throws -> Set<String> {
        guard let sql = try database.rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)])
            .first?.first?.textValue else { return [] }
        var columns: Set<String> = []
        for definition in topLevelDefinitions(ofCreateTable: sql) {
            let words = sqlWords(definition)
            let upper = words.map { $0.uppercased() }
            guard upper.contains("REFERENCES"), let deferrable = upper.firstIndex(of: "DEFERRABLE"),
                  deferrable + 2 < upper.count, upper[deferrable + 1] == "INITIALLY", upper[deferrable + 2] == "DEFERRED",
                  deferrable == 0 || upper[deferrable - 1] != "NOT" else { continue }
            if upper.first == "FOREIGN", upper.count > 2, upper[1] == "KEY" {
                // FOREIGN KEY (a, b) …: the names between the first parentheses.
                if let open = words.firstIndex(of: "("), let close = words.firstIndex(of: ")"), open < close {
                    for word in words[(open + 1)..<close] where word != "," { columns.insert(sqliteFolded(unquoted(word))) }
                }
            } else if let first = words.first, !["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK"].contains(upper[0]) {
                columns.insert(sqliteFolded(unquoted(first)))
            }
        }
        return columns
    }

    func definitions(of table: String) throws -> [ColumnDefinition] {
        try columns(of: table).map { column in
            ColumnDefinition(
                name: column.name, type: column.type, notNull: !column.isNullable, defaultSQL: column.defaultSQL,
                primaryKey: column.isPrimaryKey)
        }
    }

    private func requireTable(_ table: String) throws {
        guard try hasTable(table) else {
            throw ActiveRecordError(.unknownTable, "there is no table \(table)")
        }
    }

    /// The column's name as the table writes it.
    /// - Throws: `.unknownColumn` listing the table's columns.
    @discardableResult
    private func requireColumn(_ column: String, in table: String) throws -> String {
        let columns = try definitions(of: table).map(\.name)
        guard let found = columns.first(where: { sqliteSameName($0, column) }) else {
            throw ActiveRecordError(
                .unknownColumn, "\(table) has no column '\(column)'; its columns are: \(columns.joined(separator: ", "))")
        }
        return found
    }
}

// MARK: Reading schema text safely

/// Whether `type` is a plain SQL type name: words, and an optional `(n)` or `(n, m)`.
func isPlainTypeName(_ type: String) -> Bool {
    var scalars = Substring(type).unicodeScalars[...]
    func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || scalar == "_"
    }
    func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar >= "0" && scalar <= "9" }
    var words = 0
    while let first = scalars.first, isLetter(first) {
        scalars = scalars.drop { isLetter($0) || isDigit($0) }
        words += 1
        scalars = scalars.drop { $0 == " " }
    }
    guard words > 0 else { return false }
    if scalars.first == "(" {
        scalars = scalars.dropFirst()
        var numbers = 0
        while true {
            scalars = scalars.drop { $0 == " " }
            if scalars.first == "+" || scalars.first == "-" { scalars = scalars.dropFirst() }
            let digits = scalars.prefix { isDigit($0) }.count
            guard digits > 0 else { return false }
            scalars = scalars.dropFirst(digits).drop { $0 == " " }
            numbers += 1
            if scalars.first == ",", numbers == 1 { scalars = scalars.dropFirst(); continue }
            break
        }
        guard scalars.first == ")" else { return false }
        scalars = scalars.dropFirst()
    }
    return scalars.isEmpty
}

/// A column default for `DEFAULT …`: a literal as it is, any other expression in
/// parentheses (SQLite hands `DEFAULT (1+2)` back as `1+2`).
/// - Throws: `.invalidModel` for text that is not one balanced expression.
func defaultExpression(_ text: String) throws -> String {
    let upper = text.uppercased()
    if ["NULL", "TRUE", "FALSE", "CURRENT_TIME", "CURRENT_DATE", "CURRENT_TIMESTAMP"].contains(upper) { return text }
    if Double(text) != nil { return text }
    let words = sqlWords(text)
    if words.count == 1, let first = text.first, first == "'" || ((first == "X" || first == "x") && text.dropFirst().first == "'") {
        return text  // one string or blob literal
    }
    var depth = 0
    for word in words {
        if word == "(" { depth += 1 }
        if word == ")" { depth -= 1 }
        guard depth >= 0, word != ";" else { break }
    }
    guard depth == 0, !words.contains(";"), !words.isEmpty else {
        throw ActiveRecordError(.invalidModel, "a column default is not one SQL expression; the table cannot be rebuilt safely")
    }
    return "(" + text + ")"
}

/// `sql` split into words: quoted runs (`'…'`, `"…"`, `` `…` ``, `[…]`) whole, runs of
/// letters, digits and `_` or `$`, and every other character alone; blanks dropped.
func sqlWords(_ sql: String) -> [String] {
    let scalars = Array(sql.unicodeScalars)
    var words: [String] = []
    var index = 0
    func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isAlphabetic || (scalar >= "0" && scalar <= "9") || scalar == "_" || scalar == "$" || scalar == "."
    }
    while index < scalars.count {
        let scalar = scalars[index]
        if scalar.properties.isWhitespace { index += 1; continue }
        let closing: Unicode.Scalar? = switch scalar {
        case "'", "\"", "`": scalar
        case "[": "]"
        default: nil
        }
        if let closing {
            var end = index + 1
            while end < scalars.count {
                if scalars[end] == closing {
                    if closing != "]", end + 1 < scalars.count, scalars[end + 1] == closing { end += 2; continue }
                    break
                }
                end += 1
            }
            end = min(end, scalars.count - 1)
            words.append(String(String.UnicodeScalarView(scalars[index...end])))
            index = end + 1
        } else if isWordScalar(scalar) {
            var end = index
            while end < scalars.count, isWordScalar(scalars[end]) { end += 1 }
            words.append(String(String.UnicodeScalarView(scalars[index..<end])))
            index = end
        } else {
            words.append(String(scalar))
            index += 1
        }
    }
    return words
}

/// The definitions between the outer parentheses of a `CREATE TABLE` statement, split at
/// top-level commas (each a column definition or a table constraint), as text.
func topLevelDefinitions(ofCreateTable sql: String) -> [String] {
    var definitions: [String] = []
    var current: [String] = []
    var depth = 0
    for word in sqlWords(sql) {
        if word == "(" {
            depth += 1
            if depth == 1 { continue }
        } else if word == ")" {
            depth -= 1
            if depth == 0 { break }
        }
        guard depth >= 1 else { continue }
        if depth == 1, word == "," {
            definitions.append(current.joined(separator: " "))
            current = []
        } else {
            current.append(word)
        }
    }
    if !current.isEmpty { definitions.append(current.joined(separator: " ")) }
    return definitions
}

/// A quoted identifier's name: `"a""b"` → `a"b`; a bare one as it is.
func unquoted(_ word: String) -> String {
    guard let first = word.first, let last = word.last, word.count >= 2 else { return word }
    switch (first, last) {
    case ("\"", "\""), ("`", "`"), ("'", "'"):
        let inner = word.dropFirst().dropLast()
        return inner.replacingOccurrences(of: String([first, first]), with: String(first))
    case ("[", "]"): return String(word.dropFirst().dropLast())
    default: return word
    }
}

/// A foreign key action as SQL, from the few SQLite reports.
/// - Throws: `.invalidModel` for anything else (it would be written into SQL).
func foreignKeyAction(_ action: String) throws -> String {
    let known = ["NO ACTION", "RESTRICT", "SET NULL", "SET DEFAULT", "CASCADE"]
    guard let match = known.first(where: { $0 == action.uppercased() }) else {
        throw ActiveRecordError(.invalidModel, "a foreign key action SQLite reported is not one it knows; the table cannot be rebuilt safely")
    }
    return match
}

extension DatabaseValue {
    var textValue: String? {
        switch self {
        case .text(let text): text
        case .integer(let value): String(value)
        case .real(let value): String(value)
        default: nil
        }
    }
}
