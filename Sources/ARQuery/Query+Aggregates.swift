import ARCore

extension Query {
    /// `sum(column)` over the query's records; `0` when there are none.
    ///
    /// ```swift
    /// let total = try User.query().where("age", .greaterThan(18)).sum("score")
    /// ```
    public func sum(_ column: String) throws -> Double {
        try Double.fromSQL(aggregate("total", column))
    }

    /// `avg(column)`, or `nil` when there are no records.
    public func average(_ column: String) throws -> Double? {
        try Double?.fromSQL(aggregate("avg", column))
    }

    /// `min(column)`, or `NULL` when there are no records.
    public func min(_ column: String) throws -> DatabaseValue { try aggregate("min", column) }

    /// `max(column)`, or `NULL` when there are no records.
    public func max(_ column: String) throws -> DatabaseValue { try aggregate("max", column) }

    /// `min(column)` as a Swift value, or `nil` when there are no records.
    public func min<Value: ColumnValue>(_ column: String, as type: Value.Type) throws -> Value? {
        try Value?.fromSQL(aggregate("min", column))
    }

    /// `max(column)` as a Swift value, or `nil` when there are no records.
    public func max<Value: ColumnValue>(_ column: String, as type: Value.Type) throws -> Value? {
        try Value?.fromSQL(aggregate("max", column))
    }

    private func aggregate(_ function: String, _ column: String) throws -> DatabaseValue {
        let sql = try compile()
        var columnArguments: [DatabaseValue] = []
        let expression = try clauses.renderExpression(column, sql.tables, sql.dialect, into: &columnArguments)
        if sql.needsSubquery {
            let inner = sql.select("\(expression) AS value")
            return try scalar(
                "SELECT \(sql.dialect.aggregate(function, "value")) FROM (\(inner)) AS \(CompiledQuery.subqueryName)",
                columnArguments + sql.arguments, sql)
        }
        return try scalar(
            "SELECT \(sql.dialect.aggregate(function, expression)) \(sql.body)", columnArguments + sql.bodyArguments, sql)
    }

    /// Rows of values, typically for grouped queries: each expression is a
    /// column or an aggregate (`count(*)`, `sum(c)`, `avg(c)`, `min(c)`, `max(c)`, `total(c)`).
    ///
    /// ```swift
    /// let rows = try User.query().group(by: "age").having("count(*) > %@", 1)
    ///     .order(by: "age").values("age, count(*)")      // [[.integer(30), .integer(2)], …]
    /// ```
    public func values(_ expressions: String) throws -> [[DatabaseValue]] {
        let sql = try compile()
        var selectArguments: [DatabaseValue] = []
        let list = try clauses.renderExpressions(expressions, sql.tables, sql.dialect, into: &selectArguments)
        return try sql.withReader { connection in
            try connection.withStatement(sql.select(list.joined(separator: ", ")), selectArguments + sql.arguments) { statement in
                var rows: [[DatabaseValue]] = []
                while try statement.step() { rows.append(try (0..<statement.columnCount).map { try statement.value($0) }) }
                return rows
            }
        }
    }
}
