@_spi(Engines) import ARCore

extension Query {
    /// The query's SQL for the current database; see ``QueryClauses/compile(_:caching:for:defaultsToIdOrder:)``.
    func compile(defaultsToIdOrder: Bool = false) throws -> CompiledQuery {
        let database = try Database.current
        var sql = try QueryClauses.compile(
            &state.clauses, QueryTable(Record.self), caching: Record.self, for: database,
            defaultsToIdOrder: defaultsToIdOrder)
        sql.database = database
        return sql
    }

    /// Runs the query: `SELECT` the records, in the given order, else in id order.
    ///
    /// - Throws: `.invalidPredicate` (syntax or argument count, with the position),
    ///   `.unknownColumn` / `.unknownTable` (naming the model's columns), SQLite errors.
    public func fetch() throws -> [Record] {
        // Only a relation's own query (pristine) may answer from memory: looked at first here,
        // so that any other query calls nothing for it.
        if state.isPristine, let records = recordsInMemory { return records }
        // The compiled shape, its values bound straight from the clauses: no compiled query,
        // no array of the values (`compile()` makes both, for the other terminal calls).
        let database = try Database.current
        let shape = try QueryClauses.shape(
            &state.clauses, QueryTable(Record.self), caching: Record.self, for: database, defaultsToIdOrder: true)
        try shape.checkLimits(state.clauses.limitCount, state.clauses.offsetCount)
        let mapping = try shape.baseMapping ?? Record.mapping()
        let state = state
        let records = try database.withReader(shape.tableEngines) { connection in
            try mapping.table.fetchRecords(
                shape.recordsSQL, key: shape.recordsStatement, [], columns: shape.selectedColumns, in: connection,
                bind: { try shape.bind(&state.clauses, to: $0) }, of: Record.self, mapping: mapping)
        }
        if state.hasExtras { for preload in preloaders { try preload(records) } }
        return records.asRecords(of: Record.self)  // each made by `Record()`
    }

    /// The first record: in the query's order, else the lowest id. Runs the query with `LIMIT 1`.
    public func first() throws -> Record? {
        if let records = recordsInMemory { return records.first }
        return try limit(1).fetch().first
    }

    /// The last record: the query's order reversed, else the highest id.
    public func last() throws -> Record? {
        if let records = recordsInMemory { return records.last }
        return try with { $0.clauses = clauses.reversed }.limit(1).fetch().first
    }

    /// The number of records the query returns (respecting conditions, joins,
    /// `distinct`, grouping, and `limit`/`offset` when given).
    public func count() throws -> Int {
        if let records = recordsInMemory { return records.count }
        let sql = try compile()
        let count = sql.count
        return Int(try scalar(count.sql, count.arguments, sql).integerValue ?? 0)
    }

    /// Whether the query returns any record.
    public func exists() throws -> Bool {
        if let records = recordsInMemory { return !records.isEmpty }
        let sql = try compile()
        return try scalar("SELECT EXISTS (\(sql.recordsSQL))", sql.arguments, sql).integerValue == 1
    }

    /// The first column of the first row of `text`, run for the compiled query `sql`.
    func scalar(_ text: String, _ arguments: [DatabaseValue], _ sql: CompiledQuery) throws -> DatabaseValue {
        try sql.withReader { connection in
            try connection.withStatement(text, arguments) { statement in
                try statement.step() ? try statement.value(0) : .null
            }
        }
    }

    // MARK: Joins

    /// Runs a joined query and returns, per row, the records keyed by model
    /// (class) name, as the seeds do: `["User": user, "Group": group]`. A side
    /// without a match (outer joins) is absent from its row.
    public func fetchJoined() throws -> [[String: Model]] {
        try fetchJoinedRows { tables, records in
            var row: [String: Model] = [:]
            for (table, record) in zip(tables, records) { if let record { row[table.modelName] = record } }
            return row
        }
    }

    /// Runs a query joined with `other` and returns typed pairs; a side is `nil`
    /// when an outer join found no match for it.
    ///
    /// ```swift
    /// for (user, group) in try User.query().join(Group.self, .left).fetchJoined(Group.self) { … }
    /// ```
    public func fetchJoined<Other: Model>(_ other: Other.Type) throws -> [(Record?, Other?)] {
        guard clauses.joins.contains(where: { $0.model == other }) else {
            throw ActiveRecordError(.misuse, "fetchJoined(\(other).self) needs a join(\(other).self, …) first")
        }
        return try fetchJoinedRows { tables, records in
            let index = tables.firstIndex { $0.modelType == other } ?? 0
            return (records[0] as? Record, records[index] as? Other)
        }
    }

    private func fetchJoinedRows<Row>(_ makeRow: ([QueryTable], [Model?]) -> Row) throws -> [Row] {
        let sql = try compile(defaultsToIdOrder: true)
        let text = sql.select(sql.tables.map { $0.selectList() }.joined(separator: ", "))
        return try sql.withReader { connection in
            try connection.withStatement(text, sql.arguments) { statement in
                var rows: [Row] = []
                while try statement.step() {
                    var offset: Int32 = 0
                    var records: [Model?] = []
                    for table in sql.tables {
                        if statement.isNull(offset) {
                            records.append(nil)
                        } else if let modelType = table.modelType, let mapping = table.mapping {
                            let record = modelType.init()
                            record.adopt(mapping)
                            try table.table.decode(record, from: statement, at: offset)
                            records.append(record)
                        }
                        offset += Int32(3 + table.table.schema.columns.count)
                    }
                    rows.append(makeRow(sql.tables, records))
                }
                return rows
            }
        }
    }
}

extension Query {
    /// Deletes the matching rows with one `DELETE` and returns how many it deleted.
    ///
    /// ```swift
    /// try Bookmark.query().where("visits = 0 AND createdAt < %@", lastYear).deleteAll()
    /// ```
    /// SQL only, as Rails' `delete_all`: no callbacks and no dependencies run (`Model.destroy()`
    /// and `destroyAll()` run them), and records already in memory are not marked destroyed.
    /// Conditions, joins, order, limit and offset all apply.
    /// - Throws: `.misuse` for a grouped query; the query's errors; the engine's (a foreign
    ///   key that still points at a row).
    @discardableResult
    public func deleteAll() throws -> Int {
        let sql = try compile()
        return try sql.writeMatchingRows("deleteAll", "DELETE FROM \(sql.tables[0].quotedName)", [], grouped: !clauses.groupColumns.isEmpty)
    }

    /// Sets columns of the matching rows with one `UPDATE` (and `updatedAt` to now, unless
    /// given) and returns how many rows it changed.
    ///
    /// ```swift
    /// try Bookmark.query().where("url LIKE %@", "http:%").updateAll(["starred": false])
    /// ```
    /// Values are bound, never spliced. SQL only: no validations or callbacks run, and
    /// records already in memory keep their values (`Model.reload()` reads them again).
    /// - Throws: `.unknownColumn` naming the model's columns; `.typeMismatch` for a value
    ///   that does not fit its column; `.misuse` for `id`, no values or a grouped query;
    ///   the query's and the engine's errors.
    @discardableResult
    public func updateAll(_ values: [String: (any ColumnValue)?]) throws -> Int {
        let sql = try compile()
        let converted = try values.map { name, value in
            do {
                return (column: name, value: try value?.toSQL() ?? .null)
            } catch let error as ActiveRecordError {
                throw ActiveRecordError(error.code, "updateAll: \(name): \(error.message)")
            }
        }
        let (head, arguments) = try sql.updateHead(converted)
        return try sql.writeMatchingRows("updateAll", head, arguments, grouped: !clauses.groupColumns.isEmpty)
    }
}
