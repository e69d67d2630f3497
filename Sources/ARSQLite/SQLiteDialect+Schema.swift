@_spi(Engines) import ARCore

/// SQLite's schema steps: it has no `ALTER TABLE ADD CONSTRAINT`, so a foreign key or a CHECK
/// constraint is added (or dropped) by rebuilding the table (``SQLiteRebuild``), which carries
/// the table's other constraints over.
extension SQLiteDialect: SchemaStepsDialect {
    package func addForeignKey(
        _ column: String, in table: String, references parent: String, column referencedColumn: String,
        onDelete action: ForeignKeyAction, _ connection: Connection
    ) throws {
        var rebuild = SQLiteRebuild(table: table, connection: connection)
        rebuild.droppedForeignKey = foldedName(column)
        rebuild.addedConstraints = [
            "FOREIGN KEY (\(column.quotedIdentifier)) REFERENCES \(parent.quotedIdentifier)(\(referencedColumn.quotedIdentifier))"
                + " ON DELETE \(action.sql) DEFERRABLE INITIALLY DEFERRED"
        ]
        try rebuild.run { $0 }
    }

    package func dropForeignKey(_ column: String, in table: String, _ connection: Connection) throws {
        var rebuild = SQLiteRebuild(table: table, connection: connection)
        rebuild.droppedForeignKey = foldedName(column)
        try rebuild.run { $0 }
    }

    package func addCheck(_ name: String, _ expression: String, to table: String, _ connection: Connection) throws {
        var rebuild = SQLiteRebuild(table: table, connection: connection)
        rebuild.addedConstraints = ["CONSTRAINT \(name.quotedIdentifier) CHECK (\(expression))"]
        try rebuild.run { $0 }
    }

    package func dropCheck(_ name: String, from table: String, _ connection: Connection) throws {
        var rebuild = SQLiteRebuild(table: table, connection: connection)
        rebuild.droppedCheck = name
        try rebuild.run { $0 }
    }

    /// Read from the table's `CREATE TABLE` text (SQLite keeps no catalogue of CHECK
    /// constraints): its table-level `[CONSTRAINT name] CHECK (…)` definitions, each expression
    /// as written. A CHECK written inside a column's definition is not listed.
    package func checks(of table: String, _ connection: Connection) throws -> [CheckDescription] {
        guard let sql = try connection.rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)])
            .first?.first?.schemaText else { return [] }
        return checkConstraints(ofCreateTable: sql)
    }

    package func foreignKeyDetails(of table: String, _ connection: Connection) throws -> [ForeignKeyDetail] {
        let deferred = try SQLiteRebuild(table: table, connection: connection).deferredForeignKeyColumns()
        return try connection.rows(
            #"SELECT "from", "table", "to", on_delete, on_update FROM pragma_foreign_key_list(?) ORDER BY id, seq"#, [.text(table)]
        ).compactMap { row in
            guard let from = row[0].schemaText, let parent = row[1].schemaText else { return nil }
            return ForeignKeyDetail(
                column: from, table: parent, referencedColumn: row[2].schemaText ?? "id",
                onDelete: row[3].schemaText ?? "NO ACTION", onUpdate: row[4].schemaText ?? "NO ACTION",
                isDeferred: deferred.contains(foldedName(from)))
        }
    }

    package func dumpedColumns(of table: String, _ connection: Connection) throws -> [ColumnDescription] {
        try columns(of: table, connection)
    }
}

/// The table-level CHECK constraints of a `CREATE TABLE` statement, each expression as
/// written (the text between the parentheses after `CHECK`).
func checkConstraints(ofCreateTable sql: String) -> [CheckDescription] {
    topLevelDefinitionTexts(ofCreateTable: sql).compactMap { definition in
        let words = sqlWords(definition)
        let upper = words.map { $0.uppercased() }
        let name: String?
        if upper.count > 3, upper[0] == "CONSTRAINT", upper[2] == "CHECK" {
            name = unquoted(words[1])
        } else if upper.first == "CHECK" {
            name = nil
        } else {
            return nil
        }
        let scalars = Array(definition.unicodeScalars)
        // After the name (which may hold a parenthesis when quoted), the first parenthesis opens the expression.
        guard let open = firstUnquotedOpening(in: scalars), let close = scalars.lastIndex(of: ")"), open < close else { return nil }
        let expression = String(String.UnicodeScalarView(scalars[(open + 1)..<close])).trimmingBlanks()
        return CheckDescription(name: name, expression: expression)
    }
}

/// The first `(` outside quotes.
private func firstUnquotedOpening(in scalars: [Unicode.Scalar]) -> Int? {
    var quote: Unicode.Scalar?
    for (index, scalar) in scalars.enumerated() {
        if let open = quote {
            if scalar == open { quote = nil }
        } else if scalar == "'" || scalar == "\"" || scalar == "`" {
            quote = scalar
        } else if scalar == "[" {
            quote = "]"
        } else if scalar == "(" {
            return index
        }
    }
    return nil
}

/// The definitions between the outer parentheses of a `CREATE TABLE` statement, split at
/// top-level commas, each as its original text (``topLevelDefinitions(ofCreateTable:)`` gives
/// them as words, which loses the spacing of operators such as `>=`).
func topLevelDefinitionTexts(ofCreateTable sql: String) -> [String] {
    var definitions: [String] = []
    var current = String.UnicodeScalarView()
    var depth = 0
    var quote: Unicode.Scalar?
    for scalar in sql.unicodeScalars {
        if let open = quote {
            if scalar == open { quote = nil }
            if depth >= 1 { current.append(scalar) }
            continue
        }
        switch scalar {
        case "'", "\"", "`": quote = scalar
        case "[": quote = "]"
        case "(":
            depth += 1
            if depth == 1 { continue }
        case ")":
            depth -= 1
            if depth == 0 {
                definitions.append(String(current).trimmingBlanks())
                return definitions.filter { !$0.isEmpty }
            }
        case "," where depth == 1:
            definitions.append(String(current).trimmingBlanks())
            current = String.UnicodeScalarView()
            continue
        default: break
        }
        if depth >= 1 { current.append(scalar) }
    }
    return definitions.filter { !$0.isEmpty }
}

extension String {
    /// The text without leading and trailing white space.
    func trimmingBlanks() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
