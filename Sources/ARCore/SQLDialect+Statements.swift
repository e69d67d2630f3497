/// The statements the library writes outside the query compiler, made by the dialect from
/// their parts (tables, columns, conditions), so that no SQL text is spliced together by the
/// finders, relations, validations or migrations. Standard SQL, which SQLite and PostgreSQL
/// both take: an engine that needs another form implements the requirement.
extension SQLDialect {
    /// ``primaryKeyDefinition`` with the column named `name` instead of `id`.
    public func primaryKeyDefinition(named name: String) -> String {
        let id = "id".quotedIdentifier
        guard name != "id", primaryKeyDefinition.hasPrefix(id) else { return primaryKeyDefinition }
        return name.quotedIdentifier + primaryKeyDefinition.dropFirst(id.count)
    }

    /// ``insertSQL(into:columns:)``, for an engine that reads the new row's id without `RETURNING`.
    public func insertSQL(into table: String, columns: [String], returning key: String) -> String {
        insertSQL(into: table, columns: columns)
    }

    @_spi(Engines) public func selectSQL(
        _ columns: [SelectedColumn], from table: String, where conditions: [RowCondition], order: [RowOrder], limitOne: Bool
    ) -> String {
        var sql = "SELECT " + columns.map(\.sql).joined(separator: ", ") + " FROM " + table.quotedIdentifier
        sql += whereClause(conditions)
        if !order.isEmpty { sql += " ORDER BY " + order.map(\.sql).joined(separator: ", ") }
        if limitOne { sql += " LIMIT 1" }
        return sql
    }

    @_spi(Engines) public func existsSQL(in table: String, where conditions: [RowCondition]) -> String {
        "SELECT EXISTS (SELECT 1 FROM \(table.quotedIdentifier)\(whereClause(conditions)))"
    }

    @_spi(Engines) public func deleteSQL(from table: String, where conditions: [RowCondition]) -> String {
        "DELETE FROM \(table.quotedIdentifier)\(whereClause(conditions))"
    }

    @_spi(Engines) public func updateSQL(_ table: String, setting assignments: [RowAssignment], where conditions: [RowCondition]) -> String {
        "UPDATE \(table.quotedIdentifier) SET " + assignments.map(\.sql).joined(separator: ", ") + whereClause(conditions)
    }

    @_spi(Engines) public var commitTokensTableSQL: [String]? { nil }

    @_spi(Engines) public var expiredCommitTokensSQL: String? { nil }

    /// ` WHERE a AND b`, or nothing for no condition.
    private func whereClause(_ conditions: [RowCondition]) -> String {
        guard !conditions.isEmpty else { return "" }
        return " WHERE " + conditions.map { $0.sql(self) }.joined(separator: " AND ")
    }
}

/// One column of a hand-written `SELECT`.
@_spi(Engines) public enum SelectedColumn {
    /// A column, by name.
    case column(String)
    /// `count(*)`.
    case count
    /// The constant 1 (a row exists).
    case one
    /// An SQL expression, as written (made by the library, never from input).
    case expression(String)

    var sql: String {
        switch self {
        case .column(let name): name.quotedIdentifier
        case .count: "count(*)"
        case .one: "1"
        case .expression(let sql): sql
        }
    }
}

/// One condition of a hand-written statement's `WHERE`, on a column (by name) and,
/// where it has one, a bound value (`?`), bound by the caller in the conditions' order.
@_spi(Engines) public enum RowCondition {
    /// `"c" = ?`.
    case equals(String)
    /// `"c" = ?`, ASCII letters compared without case (``SQLDialect/equalsIgnoringASCIICase(_:)``).
    case equalsIgnoringCase(String)
    /// `"c" <> ?`.
    case notEquals(String)
    /// `"c" IS NULL`.
    case isNull(String)
    /// `"c" = ?`, or `"c" IS NULL` (no value bound) when `isNull`.
    case matches(String, isNull: Bool)
    /// `NOT ("a" IS NOT NULL AND "a" = ? AND …)`: not the row holding these values (an
    /// upsert's conflict target, each column bound once).
    case notTheRow([String])

    func sql(_ dialect: some SQLDialect) -> String {
        func name(_ column: String) -> String { column.quotedIdentifier }
        switch self {
        case .equals(let column): return "\(name(column)) = ?"
        case .equalsIgnoringCase(let column): return dialect.equalsIgnoringASCIICase(name(column))
        case .notEquals(let column): return "\(name(column)) <> ?"
        case .isNull(let column): return "\(name(column)) IS NULL"
        case .matches(let column, let isNull): return isNull ? "\(name(column)) IS NULL" : "\(name(column)) = ?"
        case .notTheRow(let columns):
            return "NOT (" + columns.map { "\(name($0)) IS NOT NULL AND \(name($0)) = ?" }.joined(separator: " AND ") + ")"
        }
    }
}

/// One term of a hand-written `ORDER BY`.
@_spi(Engines) public enum RowOrder {
    /// A column, ascending.
    case ascending(String)
    /// A column, descending.
    case descending(String)
    /// An expression the dialect made (``SQLDialect/migrationsOrder``).
    case expression(String)

    var sql: String {
        switch self {
        case .ascending(let column): column.quotedIdentifier
        case .descending(let column): column.quotedIdentifier + " DESC"
        case .expression(let sql): sql
        }
    }
}

/// One assignment of a hand-written `UPDATE`.
@_spi(Engines) public enum RowAssignment {
    /// `"c" = ?`.
    case bound(String)
    /// `"c" = NULL`.
    case null(String)

    var sql: String {
        switch self {
        case .bound(let column): "\(column.quotedIdentifier) = ?"
        case .null(let column): "\(column.quotedIdentifier) = NULL"
        }
    }
}
