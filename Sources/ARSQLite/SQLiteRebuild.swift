@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SQLite's procedure for the schema changes `ALTER TABLE` cannot make (drop a column,
/// change a type): create the new table, copy the rows, drop the old one, rename, recreate
/// indexes, triggers and views, then check foreign keys. The schema text it reads back is
/// never turned into more SQL than one type and one default (see ``isPlainTypeName(_:)``).
struct SQLiteRebuild {
    let table: String
    let connection: Connection
    /// Constraints the new table gains (a migration step's foreign key or CHECK constraint).
    var addedConstraints: [String] = []
    /// The one column (folded) whose foreign key the new table loses, if any.
    var droppedForeignKey: String?
    /// The CHECK constraint (by name) the new table loses, if any.
    var droppedCheck: String?

    private func execute(_ sql: String) throws { try connection.execute(sql) }

    /// Runs `body` with SQLite's double-quoted-string misfeature off, so that a double-quoted
    /// name that is no column is an error rather than a string (how the views remade are checked).
    private func withStrictIdentifiers<R>(_ body: () throws -> R) throws -> R {
        guard let sqlite = connection.engineConnection as? SQLiteConnection else { return try body() }
        sqlite.setDoubleQuotedStrings(false)
        defer { sqlite.setDoubleQuotedStrings(true) }
        return try body()
    }

    /// A column as the table declares it, for a rebuild.
    struct ColumnDefinition {
        var name: String
        var type: String
        var notNull: Bool
        var defaultSQL: String?
        var primaryKey: Bool

        init(_ column: ColumnDescription) {
            name = column.name
            type = column.type
            notNull = !column.isNullable
            defaultSQL = column.defaultSQL
            primaryKey = column.isPrimaryKey
        }

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

    /// Rebuilds the table with the columns `transform` keeps (or changes). Runs inside the
    /// migration step's transaction, with foreign keys off (``SQLiteDialect/aroundMigrationStep(_:_:)``
    /// turns them off around each step): otherwise dropping the old table would run the
    /// `ON DELETE` actions of the tables that reference it.
    func run(_ transform: ([ColumnDefinition]) -> [ColumnDefinition]) throws {
        guard try connection.rows("PRAGMA foreign_keys").first?.first == .integer(0) else {
            throw ActiveRecordError(
                .misuse,
                "rebuilding \(table) needs foreign keys off, or dropping the old table would run the ON DELETE "
                    + "actions of the tables that reference it; run the step through a Migrator")
        }
        let columns = try SQLiteDialect().columns(of: table, connection).map(ColumnDefinition.init)
        let kept = transform(columns)
        let temporary = "activerecord_rebuild_\(table)"
        let keptNames = Set(kept.map { foldedName($0.name) })
        // Indexes to recreate: those whose columns all remain (read before the old table goes).
        var schemaSQL: [String] = []
        for row in try connection.rows(
            "SELECT name, sql FROM sqlite_master WHERE tbl_name = ? AND type = 'index' AND sql IS NOT NULL", [.text(table)]) {
            guard let index = row[0].schemaText, let sql = row[1].schemaText else { continue }
            let indexed = try connection.rows("SELECT name FROM pragma_index_info(?)", [.text(index)]).compactMap { $0[0].schemaText }
            if indexed.allSatisfy({ keptNames.contains(foldedName($0)) }) { schemaSQL.append(sql) }
        }
        schemaSQL += try connection.rows(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type = 'trigger' AND sql IS NOT NULL", [.text(table)])
            .compactMap { $0[0].schemaText }
        // Views are checked when the new table is renamed into place: set them aside and make
        // them again after, each saying clearly if it used what the step removed.
        let views = try connection.rows("SELECT name, sql FROM sqlite_master WHERE type = 'view' AND sql IS NOT NULL")
            .compactMap { row -> (name: String, sql: String)? in
                guard let name = row[0].schemaText, let sql = row[1].schemaText else { return nil }
                return (name, sql)
            }
        for view in views { try execute("DROP VIEW \(view.name.quotedIdentifier)") }
        let checks = try carriedChecks(keeping: keptNames)
        let constraints = try tableConstraints(keeping: keptNames) + checks
        let body = (try kept.map { try $0.sql() } + constraints + addedConstraints).joined(separator: ", ")
        do {
            try execute("CREATE TABLE \(temporary.quotedIdentifier) (\(body))")
        } catch let error as ActiveRecordError where !checks.isEmpty || !addedConstraints.isEmpty {
            throw error.with(
                message: "rebuilding \(table) failed: \(error.message); a CHECK constraint of the table may use a column "
                    + "the step removes (drop it first with dropCheck), or a new constraint names a column the table lacks")
        }
        let names = kept.map { $0.name.quotedIdentifier }.joined(separator: ", ")
        try execute("INSERT INTO \(temporary.quotedIdentifier) (\(names)) SELECT \(names) FROM \(table.quotedIdentifier)")
        try execute("DROP TABLE \(table.quotedIdentifier)")
        try execute("ALTER TABLE \(temporary.quotedIdentifier) RENAME TO \(table.quotedIdentifier)")
        for sql in schemaSQL { try execute(sql) }
        for view in views {
            do {
                try execute(view.sql)
                try withStrictIdentifiers { try execute("SELECT * FROM \(view.name.quotedIdentifier) LIMIT 0") }
            } catch let error as ActiveRecordError {
                throw ActiveRecordError(
                    .migrationFailed,
                    "the view \(view.name) uses what rebuilding \(table) removes, so it cannot be made again "
                        + "(\(error.message)); drop or change the view in this step first")
            }
        }
        let problems = try connection.rows("SELECT * FROM pragma_foreign_key_check(?)", [.text(table)])
        guard problems.isEmpty else {
            throw ActiveRecordError(.constraint, "rebuilding \(table) broke \(problems.count) foreign key reference(s)")
        }
    }

    /// The table's FOREIGN KEY and UNIQUE constraints (which `pragma_table_info` does not show)
    /// whose columns all remain, each foreign key as deferrable as it was (but the one on
    /// ``droppedForeignKey``). Collations and CHECK constraints written inside a column's
    /// definition are not carried over; table-level CHECK constraints are (``carriedChecks()``).
    func tableConstraints(keeping kept: Set<String>) throws -> [String] {
        var constraints: [String] = []
        var keys: [Int64: (table: String, from: [String], to: [String], onUpdate: String, onDelete: String)] = [:]
        for row in try connection.rows(
            "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            [.text(table)]) {
            guard case .integer(let id) = row[0] else { continue }
            var key = keys[id] ?? (row[1].schemaText ?? "", [], [], row[4].schemaText ?? "NO ACTION", row[5].schemaText ?? "NO ACTION")
            key.from.append(row[2].schemaText ?? "")
            if let to = row[3].schemaText { key.to.append(to) }
            keys[id] = key
        }
        let deferred = try deferredForeignKeyColumns()
        for (_, key) in keys.sorted(by: { $0.key < $1.key })
        where key.from.allSatisfy({ kept.contains(foldedName($0)) }) && !(key.from.count == 1 && foldedName(key.from[0]) == droppedForeignKey) {
            let target = key.to.isEmpty ? "" : "(" + key.to.map(\.quotedIdentifier).joined(separator: ", ") + ")"
            let isDeferred = key.from.contains { deferred.contains(foldedName($0)) }
            constraints.append(
                "FOREIGN KEY (" + key.from.map(\.quotedIdentifier).joined(separator: ", ") + ") REFERENCES "
                    + key.table.quotedIdentifier + target + " ON UPDATE \(try foreignKeyAction(key.onUpdate))"
                    + " ON DELETE \(try foreignKeyAction(key.onDelete))" + (isDeferred ? " DEFERRABLE INITIALLY DEFERRED" : ""))
        }
        for row in try connection.rows("SELECT name FROM pragma_index_list(?) WHERE origin = 'u'", [.text(table)]) {
            guard let index = row[0].schemaText else { continue }
            let columns = try connection.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(index)])
                .compactMap { $0[0].schemaText }
            if !columns.isEmpty, columns.allSatisfy({ kept.contains(foldedName($0)) }) {
                constraints.append("UNIQUE (" + columns.map(\.quotedIdentifier).joined(separator: ", ") + ")")
            }
        }
        return constraints
    }

    /// The columns (folded) whose foreign key the table declares `DEFERRABLE INITIALLY
    /// DEFERRED` (as the library's belongs-to keys and `addForeignKey`'s are): `pragma_foreign_key_list` does not
    /// say, so the table's own `CREATE TABLE` text is read, definition by definition.
    func deferredForeignKeyColumns() throws -> Set<String> {
        guard let sql = try connection.rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)])
            .first?.first?.schemaText else { return [] }
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
                    for word in words[(open + 1)..<close] where word != "," { columns.insert(foldedName(unquoted(word))) }
                }
            } else if let first = words.first, !["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK"].contains(upper[0]) {
                columns.insert(foldedName(unquoted(first)))
            }
        }
        return columns
    }
}

extension SQLiteRebuild {
    /// The table's table-level CHECK constraints (but ``droppedCheck``, and those that name a
    /// column the rebuild drops, as PostgreSQL's `DROP COLUMN` drops them), as the table wrote
    /// them: `CONSTRAINT "name" CHECK (…)`. The expression is carried over as its text, which
    /// must be one balanced expression (as ``defaultExpression(_:)`` checks).
    func carriedChecks(keeping kept: Set<String>) throws -> [String] {
        guard let sql = try connection.rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)])
            .first?.first?.schemaText else { return [] }
        let dropped = Set(try SQLiteDialect().columns(of: table, connection).map { foldedName($0.name) }).subtracting(kept)
        return try checkConstraints(ofCreateTable: sql).compactMap { check in
            if let name = check.name, let droppedCheck, isSameName(name, droppedCheck) { return nil }
            let names = sqlWords(check.expression).filter { !$0.hasPrefix("'") }.map { foldedName(unquoted($0)) }
            if names.contains(where: dropped.contains) { return nil }
            _ = try defaultExpression(check.expression)  // one balanced expression, or an error
            return (check.name.map { "CONSTRAINT \($0.quotedIdentifier) " } ?? "") + "CHECK (\(check.expression))"
        }
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
        return String(inner.replacing(String([first, first]), with: String(first)))
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

