import ARCore

/// A query over a ``DynamicModel``: the predicate language with arguments as
/// database values, order, limit and offset. What the C API runs.
///
/// ```swift
/// let query = DynamicQuery(notes, where: "stars >= ? AND title LIKE ?", arguments: [.value(.integer(3)), .value(.text("B%"))])
/// let records = try query.order(by: "title").limit(10).fetch()
/// ```
public struct DynamicQuery: Sendable {
    /// The model whose records the query returns.
    public let model: DynamicModel
    private var predicate: String?
    private var arguments: [QueryArgument]
    private var orderings: [(column: String, ascending: Bool)] = []
    private var limitCount: Int?
    private var offsetCount: Int?

    /// A query of `model`'s records matching `predicate` (all when `nil`).
    public init(_ model: DynamicModel, where predicate: String? = nil, arguments: [QueryArgument] = []) {
        self.model = model
        self.predicate = predicate
        self.arguments = arguments
    }

    /// The number of placeholders (`%@`, `?`) in a predicate.
    /// - Throws: `.invalidPredicate` with the position of a syntax error.
    public static func placeholderCount(in predicate: String) throws -> Int {
        do {
            return try PredicateCache.parse(predicate).placeholderCount
        } catch {
            throw ActiveRecordError(.invalidPredicate, "\(error.message) at position \(error.position) in \"\(predicate.prefix(200))\"")
        }
    }

    /// Orders by a column; several calls sort by each in turn. Unordered: id order.
    public func order(by column: String, ascending: Bool = true) -> DynamicQuery {
        var copy = self
        copy.orderings.append((column, ascending))
        return copy
    }

    /// At most `count` records.
    public func limit(_ count: Int) -> DynamicQuery {
        var copy = self
        copy.limitCount = count
        return copy
    }

    /// Skips the first `count` records.
    public func offset(_ count: Int) -> DynamicQuery {
        var copy = self
        copy.offsetCount = count
        return copy
    }

    /// Checks the predicate's columns and syntax without running anything (arguments may be
    /// placeholders' stand-ins).
    /// - Throws: `.invalidPredicate` (with the position), `.unknownColumn`.
    public func check() throws {
        _ = try compile(ordered: true)
    }

    /// The matching records.
    /// - Throws: `.invalidPredicate` (with the position), `.unknownColumn`, SQLite errors.
    public func fetch() throws -> [DynamicRecord] {
        let (clauses, arguments) = try compile(ordered: true)
        let mapping = model.mapping
        return try Database.current.withReader(mapping) { connection in
            try mapping.fetch("SELECT \(mapping.qualifiedSelectList) \(clauses)", arguments, in: connection) {
                model.recordForDecoding()
            }
        }
    }

    /// The number of matching records (respecting limit and offset).
    public func count() throws -> Int {
        let (clauses, arguments) = try compile(ordered: false)
        let mapping = model.mapping
        let sql = "SELECT count(*) FROM (SELECT 1 \(clauses))"
        return try Database.current.withReader(mapping) { connection in
            try connection.withStatement(sql, arguments) { statement in try statement.step() ? Int(statement.int64(0)) : 0 }
        }
    }

    /// `FROM … WHERE … ORDER BY … LIMIT ? OFFSET ?` and its bound values.
    func compile(ordered: Bool) throws -> (String, [DatabaseValue]) {
        let schema = model.schema
        let qualified = model.mapping.qualifiedColumns
        let resolve: (String?, String, Int) throws -> String = { qualifier, name, position in
            if let qualifier, qualifier.lowercased() != schema.name.lowercased() {
                throw ResolutionError(
                    code: .unknownTable, subject: "unknown table '\(qualifier)'", detail: "the query has: \(schema.name)",
                    position: position)
            }
            if let index = schema.allColumnNames.firstIndex(of: name) { return qualified[index] }
            throw ResolutionError(
                code: .unknownColumn, subject: "unknown column '\(name)'",
                detail: "\(schema.name)'s columns are: \(schema.allColumnNames.joined(separator: ", "))", position: position)
        }
        var sql = "FROM \(schema.name.quotedIdentifier)"
        var values: [DatabaseValue] = []
        if let predicate {
            let context = " in \"\(predicate.prefix(200))\""
            let parsed: (node: PredicateNode, placeholderCount: Int)
            do {
                parsed = try PredicateCache.parse(predicate)
            } catch {
                throw ActiveRecordError(.invalidPredicate, "\(error.message) at position \(error.position)\(context)")
            }
            guard parsed.placeholderCount == arguments.count else {
                throw ActiveRecordError(
                    .invalidPredicate,
                    "\"\(predicate.prefix(200))\" has \(parsed.placeholderCount) placeholder(s) but \(arguments.count) argument(s) were given")
            }
            var renderer = PredicateRenderer(resolveColumn: resolve, shape: { index, _ in
                switch arguments[index] {
                case .value(.null): .null
                case .value: .value
                case .list(let list): .list(count: list.count)
                }
            })
            do {
                sql += " WHERE " + (try renderer.render(parsed.node))
            } catch let error as PredicateSyntaxError {
                throw ActiveRecordError(.invalidPredicate, "\(error.message) at position \(error.position)\(context)")
            } catch let error as ResolutionError {
                throw ActiveRecordError(error.code, "\(error.subject) at position \(error.position)\(context); \(error.detail)")
            }
            values = renderer.parameters.map { source in
                switch source {
                case .argument(let index):
                    if case .value(let value) = arguments[index] { return value }
                    return .null
                case .argumentElement(let index, let element):
                    if case .list(let list) = arguments[index] { return list[element] }
                    return .null
                case .integer(let value): return .integer(value)
                case .real(let value): return .real(value)
                case .text(let value): return .text(value)
                }
            }
        }
        if ordered {
            var orders: [String] = []
            for ordering in orderings {
                do {
                    orders.append(try resolve(nil, ordering.column, 0) + (ordering.ascending ? " ASC" : " DESC"))
                } catch let error as ResolutionError {
                    throw ActiveRecordError(error.code, "order: \(error.subject); \(error.detail)")
                }
            }
            sql += " ORDER BY " + (orders.isEmpty ? qualified[0] + " ASC" : orders.joined(separator: ", "))
        }
        if limitCount != nil || offsetCount != nil {
            guard (limitCount ?? 0) >= 0, (offsetCount ?? 0) >= 0 else {
                throw ActiveRecordError(.invalidValue, "limit and offset must not be negative")
            }
            sql += " LIMIT ? OFFSET ?"
            values += [.integer(Int64(limitCount ?? -1)), .integer(Int64(offsetCount ?? 0))]
        }
        return (sql, values)
    }
}
