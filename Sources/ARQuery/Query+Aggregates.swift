@_spi(Engines) import ARCore

extension Query {
    /// `sum(column)` over the query's records, as a `Double` whatever the column; `0` when
    /// there are none. `sum` by key path gives the column's own type (`Int` for
    /// an `Int` column).
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

    // MARK: By key path, typed as the column

    /// `sum(column)` of a numeric column named by key path, as the column's type: an `Int`
    /// column sums to an `Int` (exactly, with no detour through `Double`), a `Double` column
    /// to a `Double`; `nil` when no record matches (as `min` and
    /// `average` by key path are; `?? 0` for a total).
    ///
    /// ```swift
    /// let cents = try LineItem.query().where(\.$order.id == order.id).sum(\.cents) ?? 0   // Int
    /// ```
    /// - Throws: `.unknownColumn` for a key path that is not a `@Column`; `.typeMismatch`
    ///   when the sum does not fit the type (beyond `Int8`'s range, say); the engine's error
    ///   when it overflows 64 bits (SQLite: "integer overflow"; PostgreSQL sums exactly, then
    ///   the type refuses it).
    public func sum<Value: NumericColumnValue>(_ keyPath: KeyPath<Record, Value>) throws -> Value? {
        try aggregate("sum", keyPath, as: Value.self)
    }

    /// `sum(column)` of an optional numeric column, as its type (`NULL`s left out); `nil` when
    /// no record matches or every value is `nil`.
    public func sum<Value: NumericColumnValue>(_ keyPath: KeyPath<Record, Value?>) throws -> Value? {
        try aggregate("sum", keyPath, as: Value.self)
    }

    /// `avg(column)` of a numeric column named by key path; `nil` when no record matches.
    public func average<Value: NumericColumnValue>(_ keyPath: KeyPath<Record, Value>) throws -> Double? {
        try aggregate("avg", keyPath, as: Double.self)
    }

    /// `avg(column)` of an optional numeric column (`NULL`s left out); `nil` when no value.
    public func average<Value: NumericColumnValue>(_ keyPath: KeyPath<Record, Value?>) throws -> Double? {
        try aggregate("avg", keyPath, as: Double.self)
    }

    /// `min(column)` of a column named by key path, as its type; `nil` when no record matches.
    ///
    /// ```swift
    /// let cheapest = try Product.query().min(\.cents)      // Int?
    /// let first = try Product.query().min(\.name)          // String?
    /// ```
    /// - Throws: `.unknownColumn` for a key path that is not a `@Column`; the query's errors.
    public func min<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>) throws -> Value? {
        try aggregate("min", keyPath, as: Value.self)
    }

    /// `min(column)` of an optional column (`NULL`s left out), as its type; `nil` when no value.
    public func min<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value?>) throws -> Value? {
        try aggregate("min", keyPath, as: Value.self)
    }

    /// `max(column)` of a column named by key path, as its type; `nil` when no record matches.
    public func max<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>) throws -> Value? {
        try aggregate("max", keyPath, as: Value.self)
    }

    /// `max(column)` of an optional column (`NULL`s left out), as its type; `nil` when no value.
    public func max<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value?>) throws -> Value? {
        try aggregate("max", keyPath, as: Value.self)
    }

    /// An aggregate of the column a key path names, read as `type` (`nil` for `NULL`).
    private func aggregate<Value: ColumnValue, Result: ColumnValue>(
        _ function: String, _ keyPath: KeyPath<Record, Value>, as type: Result.Type
    ) throws -> Result? {
        try Result?.fromSQL(aggregate(function, KeyPathColumns.columnName(keyPath)))
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
