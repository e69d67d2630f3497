@_spi(Engines) import ARCore

extension Query {
    /// The values of one or more columns of the matching records, typed, without making
    /// records: one value per record for one key path, a tuple per record for several.
    ///
    /// ```swift
    /// let names = try User.query().order(by: \.name).pluck(\.name)             // [String]
    /// let pairs = try User.query().where(\.age > 30).pluck(\.name, \.age)      // [(String, Int)]
    /// ```
    /// Values are read as the columns' types read them (strictly: a stored value that does
    /// not fit is `.typeMismatch`), in the query's order, else in id order.
    /// - Throws: `.unknownColumn` for a key path that is not a `@Column`, the query's errors.
    public func pluck<each Value: ColumnValue>(_ keyPaths: repeat KeyPath<Record, each Value>) throws -> [(repeat each Value)] {
        var names: [String] = []
        for keyPath in repeat each keyPaths { names.append(try KeyPathColumns.columnName(keyPath)) }
        return try pluckRows(names) { row in
            var index = 0
            func next<V: ColumnValue>(_ type: V.Type) throws -> V {
                defer { index += 1 }
                return try V.fromSQL(row[index])
            }
            return (repeat try next((each Value).self))
        }
    }

    /// The values of columns named by name (`id`, `createdAt` and `updatedAt` too), typed.
    ///
    /// ```swift
    /// let ids = try User.query().where("age > %@", 30).pluck("id", as: Int64.self)        // [Int64]
    /// let rows = try User.query().pluck(["id", "name"], as: Int64.self, String.self)      // [(Int64, String)]
    /// ```
    /// - Throws: `.unknownColumn` naming the model's columns, `.typeMismatch` for a value that
    ///   does not fit its type, the query's errors.
    public func pluck<Value: ColumnValue>(_ column: String, as type: Value.Type) throws -> [Value] {
        try pluckRows([column]) { row in try Value.fromSQL(row[0]) }
    }

    /// The values of several columns named by name, as tuples of the given types.
    /// - Throws: `.misuse` when the names and types differ in number; see ``pluck(_:as:)``.
    public func pluck<each Value: ColumnValue>(_ columns: [String], as types: repeat (each Value).Type) throws -> [(repeat each Value)] {
        var count = 0
        for _ in repeat each types { count += 1 }
        guard count == columns.count else {
            throw ActiveRecordError(.misuse, "pluck: \(columns.count) column names but \(count) types")
        }
        return try pluckRows(columns) { row in
            var index = 0
            func next<V: ColumnValue>(_ type: V.Type) throws -> V {
                defer { index += 1 }
                return try V.fromSQL(row[index])
            }
            return (repeat try next(each types))
        }
    }

    /// Selects `columns` (names, resolved as the predicate language resolves them) and makes
    /// a value of each row.
    private func pluckRows<Row>(_ columns: [String], _ makeRow: ([DatabaseValue]) throws -> Row) throws -> [Row] {
        if let records = recordsInMemory {  // a relation of an unsaved owner, or eager-loaded
            return try records.map { record in try makeRow(try columns.map { try record.value(of: $0) }) }
        }
        let sql = try compile(defaultsToIdOrder: true)
        var selectArguments: [DatabaseValue] = []
        let list = try columns.map { try clauses.renderExpression($0, sql.tables, sql.dialect, into: &selectArguments) }
        return try sql.withReader { connection in
            try connection.withStatement(sql.select(list.joined(separator: ", ")), selectArguments + sql.arguments) { statement in
                var rows: [Row] = []
                var row = [DatabaseValue](repeating: .null, count: columns.count)
                while try statement.step() {
                    for index in row.indices { row[index] = try statement.value(Int32(index)) }
                    rows.append(try makeRow(row))
                }
                return rows
            }
        }
    }
}
