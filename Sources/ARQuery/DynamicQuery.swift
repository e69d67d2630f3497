@_spi(Engines) import ARCore

/// A query over a `DynamicModel`: the predicate language with arguments as
/// database values, order, limit and offset. What the C API runs, through the
/// same compiler as ``Query``.
///
/// ```swift
/// let query = DynamicQuery(notes, where: "stars >= ? AND title LIKE ?", arguments: [.value(.integer(3)), .value(.text("B%"))])
/// let records = try query.order(by: "title").limit(10).fetch()
/// ```
public struct DynamicQuery: @unchecked Sendable {
    // @unchecked Sendable: the clauses of a dynamic query hold only Sendable values (its
    // arguments are QueryArguments, `.converted`); Query's own may hold any ColumnValue.
    /// The model whose records the query returns.
    public let model: DynamicModel
    private var clauses = QueryClauses()

    /// A query of `model`'s records matching `predicate` (all when `nil`).
    public init(_ model: DynamicModel, where predicate: String? = nil, arguments: [QueryArgument] = []) {
        self.model = model
        if let predicate { clauses.conditions.append(.format(predicate, arguments: QueryArgument.Sources(arguments.lazy.map { .converted($0) }))) }
    }

    /// The number of placeholders (`%@`, `?`) in a predicate.
    /// - Throws: `.invalidPredicate` with the position of a syntax error.
    public static func placeholderCount(in predicate: String) throws -> Int {
        do {
            return try PredicateCache.parse(predicate).placeholderCount
        } catch {
            throw QueryClauses.syntaxError(error, in: predicate)
        }
    }

    /// Orders by a column; several calls sort by each in turn. Unordered: id order.
    public func order(by column: String, ascending: Bool = true) -> DynamicQuery {
        with { $0.clauses.orderings.append(.init(column: column, ascending: ascending)) }
    }

    /// At most `count` records.
    public func limit(_ count: Int) -> DynamicQuery { with { $0.clauses.limitCount = count } }

    /// Skips the first `count` records.
    public func offset(_ count: Int) -> DynamicQuery { with { $0.clauses.offsetCount = count } }

    private func with(_ change: (inout DynamicQuery) -> Void) -> DynamicQuery {
        var copy = self
        change(&copy)
        return copy
    }

    /// Checks the predicate's columns and syntax without running anything (arguments may be
    /// placeholders' stand-ins), compiling for the dialect of the database models use.
    /// - Throws: `.invalidPredicate` (with the position), `.unknownColumn`; what opening the
    ///   default database throws when none is configured.
    public func check() throws {
        _ = try clauses.compileShape(QueryTable(model), dialect: try Database.current.dialect, defaultsToIdOrder: true)
    }

    private func compile() throws -> CompiledQuery {
        let database = try Database.current
        var sql = try clauses.compile(
            QueryTable(model), caching: nil, for: database, defaultsToIdOrder: true)
        sql.database = database
        return sql
    }

    /// The matching records.
    /// - Throws: `.invalidPredicate` (with the position), `.unknownColumn`, the engine's errors.
    public func fetch() throws -> [DynamicRecord] {
        let sql = try compile()
        return try sql.withReader { connection in
            try model.table.fetch(sql.recordsSQL, key: sql.recordsStatement, sql.arguments, in: connection) {
                model.recordForDecoding()
            }
        }
    }

    /// The number of matching records (respecting limit and offset).
    public func count() throws -> Int {
        let sql = try compile()
        let count = sql.count
        return try sql.withReader { connection in
            try connection.withStatement(count.sql, count.arguments) { statement in
                try statement.step() ? Int(statement.int64(0)) : 0
            }
        }
    }

    /// Deletes the matching rows with one `DELETE` (SQL only, as `Query.deleteAll()`); returns
    /// how many it deleted.
    /// - Throws: the query's errors; the engine's (a foreign key that still points at a row).
    @discardableResult
    public func deleteAll() throws -> Int {
        let sql = try compile()
        return try sql.writeMatchingRows("deleteAll", "DELETE FROM \(sql.tables[0].quotedName)", [], grouped: false)
    }

    /// Sets columns of the matching rows with one `UPDATE` (and `updatedAt`, unless given), as
    /// `Query.updateAll(_:)`; returns how many rows it changed.
    /// - Throws: `.unknownColumn`, `.typeMismatch`, `.misuse` (for `id` or no values), the
    ///   query's and the engine's errors.
    @discardableResult
    public func updateAll(_ values: [(column: String, value: DatabaseValue)]) throws -> Int {
        let sql = try compile()
        let (head, arguments) = try sql.updateHead(values)
        return try sql.writeMatchingRows("updateAll", head, arguments, grouped: false)
    }

    /// A cursor over the matching rows, as `Query.cursor()` opens one: on a leased reader
    /// connection outside a transaction (the rows as the first step found them), else on
    /// the writer, locked per step.
    /// - Throws: `.invalidPredicate`, `.unknownColumn`, the engine's errors.
    package func rowCursor() throws -> RowCursor {
        let sql = try compile()
        return try sql.openCursor()
    }
}
