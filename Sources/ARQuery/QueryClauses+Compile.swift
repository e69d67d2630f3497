@_spi(Engines) import ARCore
import Synchronization

/// One table of a query: the queried one or a joined one.
struct QueryTable {
    let table: TableEngine
    /// The name that keys `fetchJoined()` rows and may qualify columns besides the table
    /// name: the class name of a model, the table name of a run-time model.
    let modelName: String
    /// The model class and its mapping, for queries of a class's records.
    let modelType: Model.Type?
    let mapping: ModelMapping?

    var quotedName: String { table.schema.name.quotedIdentifier }

    init(_ modelType: Model.Type) throws {
        let mapping = try modelType.mapping()
        self.modelType = modelType
        self.mapping = mapping
        table = mapping.table
        modelName = ModelMapping.modelName(modelType)
    }

    init(_ model: DynamicModel) {
        modelType = nil
        mapping = nil
        table = model.table
        modelName = model.schema.name
    }

    /// `"User"."id", "User"."createdAt", …` for the given declared columns (all when `nil`).
    func selectList(columns: [Int]? = nil) -> String {
        guard let columns else { return table.qualifiedSelectList }
        let qualified = table.qualifiedColumns
        return (qualified[0..<3] + columns.map { qualified[$0 + 3] }).joined(separator: ", ")
    }

    /// `"Table"."column"` for a column or property name, or `nil`.
    func qualifiedColumn(_ name: String) -> String? {
        table.position(of: name).map { table.qualifiedColumns[$0] }
    }

    /// The declared column index of a column or property name.
    /// - Throws: `.unknownColumn`, listing the table's columns.
    func columnIndex(_ name: String) throws -> Int {
        guard let position = table.position(of: name), position >= 3 else { throw table.schema.unknownColumn(name) }
        return position - 3
    }
}

/// A column or table that a query cannot resolve.
struct ResolutionError: Error {
    var code: ActiveRecordError.Code
    var subject: String
    var detail: String
    var position: Int
}

/// The SQL and arguments compiled from ``QueryClauses``: the query's ``CompiledShape``
/// (shared by every query of its shape) and its argument values.
struct CompiledQuery {
    let shape: CompiledShape
    /// Every argument of ``recordsSQL`` and the other full queries, in order: the body's, then the tail's.
    let arguments: [DatabaseValue]
    /// How many of ``arguments`` are the body's.
    let bodyArgumentCount: Int
    /// The database it was compiled for (`nil` when only checked).
    var database: Database?

    var tables: [QueryTable] { shape.tables }
    /// `FROM … JOIN … WHERE … GROUP BY … HAVING …`
    var body: String { shape.body }
    /// ` ORDER BY … LIMIT ? OFFSET ?`
    var tail: String { shape.tail }
    /// The base table's declared columns to select (`nil`: all).
    var selectedColumns: [Int]? { shape.selectedColumns }
    var isDistinct: Bool { shape.isDistinct }
    /// Whether counting or aggregating needs the query as a subquery.
    var needsSubquery: Bool { shape.needsSubquery }
    /// The engine's dialect, which the compiled SQL is written in.
    var dialect: any SQLDialect { shape.dialect }
    /// The base table's records: ``select(_:)`` with its (selected) columns.
    var recordsSQL: String { shape.recordsSQL }
    /// The arguments of ``body``.
    var bodyArguments: [DatabaseValue] { Array(arguments[..<bodyArgumentCount]) }

    /// `SELECT [DISTINCT] <list> FROM … WHERE … ORDER BY … LIMIT …`.
    func select(_ list: String) -> String { shape.select(list) }

    /// Runs `body` with a connection to read from (a reader, or the writer in a transaction),
    /// after making sure every table of the query exists.
    func withReader<R>(_ body: (Connection) throws -> R) throws -> R {
        try (database ?? Database.current).withReader(shape.tableEngines, body)
    }

    /// A cursor over the records of ``recordsSQL`` (see ``Database/openCursor(_:_:tables:)``).
    func openCursor() throws -> RowCursor {
        try (database ?? Database.current).openCursor(recordsSQL, arguments, tables: shape.tableEngines)
    }

    /// The key that caches ``recordsSQL``'s prepared statement on a connection: the shape's
    /// serial when the shape is cached (else `nil`: by its text).
    var recordsStatement: StatementKey.Kind? { shape.recordsStatement }

    /// `SELECT count(*) …` and its arguments: the rows ``recordsSQL`` returns. Counted over a
    /// subquery that selects only what tells rows apart (the columns for `distinct`, else a
    /// constant), which a grouped query can select on every engine.
    var count: (sql: String, arguments: [DatabaseValue]) {
        guard needsSubquery else { return ("SELECT count(*) \(body)", bodyArguments) }
        let rows = isDistinct ? recordsSQL : select("1")
        return ("SELECT count(*) FROM (\(rows)) AS \(Self.subqueryName)", arguments)
    }

    /// The name a subquery in `FROM` is given (PostgreSQL requires one).
    static let subqueryName = "activerecord_rows"
}

/// Where one parameter of a compiled query takes its value from.
enum ArgumentSlot {
    /// A literal of the format, or of an order or group expression.
    case constant(DatabaseValue)
    /// A scalar argument: of which condition (the `where` ones, then the `having` ones), which.
    case argument(condition: Int, index: Int)
    /// An element of a list argument.
    case element(condition: Int, index: Int, element: Int)
}

/// The SQL of a query and where its parameters' values come from: everything but the
/// values, so that one compilation serves every query of the same ``QueryShape``.
final class CompiledShape {
    private static let serials = Atomic<UInt64>(0)

    let tables: [QueryTable]
    let tableEngines: [TableEngine]
    let body: String
    let tail: String
    let selectedColumns: [Int]?
    let isDistinct: Bool
    let needsSubquery: Bool
    let dialect: any SQLDialect
    let recordsSQL: String
    /// The parameters of ``body``, in order.
    let bodySlots: [ArgumentSlot]
    /// The parameters of the tail's `ORDER BY` (literals only), before `LIMIT ? OFFSET ?`.
    let orderArguments: [DatabaseValue]
    let hasLimitOrOffset: Bool
    /// A number never reused: connections cache ``recordsSQL``'s statement by it.
    let serial: UInt64
    /// Whether the shape is in ``QueryShape/cache`` (and so runs again).
    fileprivate(set) var isCached = false

    init(
        tables: [QueryTable], body: String, tail: String, selectedColumns: [Int]?, isDistinct: Bool, needsSubquery: Bool,
        dialect: any SQLDialect, bodySlots: [ArgumentSlot], orderArguments: [DatabaseValue], hasLimitOrOffset: Bool,
        lockClause: String = ""
    ) {
        self.tables = tables
        tableEngines = tables.map(\.table)
        self.body = body
        self.tail = tail
        self.selectedColumns = selectedColumns
        self.isDistinct = isDistinct
        self.needsSubquery = needsSubquery
        self.dialect = dialect
        self.bodySlots = bodySlots
        self.orderArguments = orderArguments
        self.hasLimitOrOffset = hasLimitOrOffset
        serial = Self.serials.add(1, ordering: .relaxed).newValue
        recordsSQL = Self.select(tables[0].selectList(columns: selectedColumns), isDistinct, body, tail) + lockClause
    }

    /// `SELECT [DISTINCT] <list> FROM … WHERE … ORDER BY … LIMIT …`.
    func select(_ list: String) -> String { Self.select(list, isDistinct, body, tail) }

    /// The key that caches ``recordsSQL``'s prepared statement on a connection: the
    /// ``serial`` when the shape is cached (else `nil`: by its text).
    var recordsStatement: StatementKey.Kind? { isCached ? .query(serial) : nil }

    private static func select(_ list: String, _ isDistinct: Bool, _ body: String, _ tail: String) -> String {
        "SELECT \(isDistinct ? "DISTINCT " : "")\(list) \(body)\(tail)"
    }

    /// The query of this shape with the arguments, limit and offset of `clauses` (which have
    /// this shape: every argument converted).
    /// - Throws: `.invalidValue` for a negative limit or offset.
    func query(_ clauses: QueryClauses) throws -> CompiledQuery {
        try checkLimits(clauses.limitCount, clauses.offsetCount)
        // A copy, read in place as `bind` reads a query's box (a `borrowing` walk measured +14
        // instructions a query in the binding).
        var clauses = clauses
        var arguments: [DatabaseValue] = []
        arguments.reserveCapacity(bodySlots.count + orderArguments.count + (hasLimitOrOffset ? 2 : 0))
        var bodyArgumentCount = 0
        forEachValue(of: &clauses) { value, isBody in
            arguments.append(value)
            if isBody { bodyArgumentCount += 1 }
        }
        return CompiledQuery(shape: self, arguments: arguments, bodyArgumentCount: bodyArgumentCount)
    }

    /// Binds the arguments, limit and offset of `clauses` (which have this shape, and whose
    /// limits ``checkLimits(_:_:)`` passed) to `statement`'s parameters, from 1: what
    /// ``query(_:)`` would collect, without an array of them. The clauses are taken in place
    /// (see `QueryClauses.compile(_:_:caching:for:defaultsToIdOrder:)`); they are not changed.
    func bind(_ clauses: inout QueryClauses, to statement: Statement) throws {
        var parameter: Int32 = 1
        try forEachValue(of: &clauses) { value, _ in
            try statement.bind(value, at: parameter)
            parameter += 1
        }
    }

    /// - Throws: `.invalidValue` for a negative limit or offset.
    @inline(__always)
    func checkLimits(_ limit: Int?, _ offset: Int?) throws {
        if (limit ?? 0) < 0 || (offset ?? 0) < 0 { throw Self.negativeLimit(limit, offset) }
    }

    @inline(never)
    private static func negativeLimit(_ limit: Int?, _ offset: Int?) -> ActiveRecordError {
        if let limit, limit < 0 { return ActiveRecordError(.invalidValue, "limit(\(limit)) must not be negative") }
        return ActiveRecordError(.invalidValue, "offset(\(offset ?? 0)) must not be negative")
    }

    /// Calls `body` with each parameter's value in order, and whether it is the body's (not
    /// the tail's): the body's slots, the order's literals, then the limit and offset.
    @inline(__always)
    private func forEachValue(
        of clauses: inout QueryClauses, _ body: (DatabaseValue, _ isBody: Bool) throws -> Void
    ) rethrows {
        for slot in bodySlots {
            switch slot {
            case .constant(let value):
                try body(value, true)
            case .argument(let condition, let index):
                guard case .value(let value) = clauses.argument(index, of: condition) else { preconditionFailure("not a value") }
                try body(value, true)
            case .element(let condition, let index, let element):
                guard case .list(let list) = clauses.argument(index, of: condition) else { preconditionFailure("not a list") }
                try body(list[element], true)
            }
        }
        for value in orderArguments { try body(value, false) }
        if hasLimitOrOffset {
            try body(clauses.limitCount.map { .integer(Int64($0)) } ?? dialect.unlimited, false)
            try body(.integer(Int64(clauses.offsetCount ?? 0)), false)
        }
    }
}

extension QueryClauses {
    /// `clauses.compile(…)`, taking the clauses in place: for a query's box (`QueryState`), a
    /// call on its stored property would first copy the clauses out of it (a class, whose
    /// property a callee could change), retaining every field.
    static func compile(
        _ clauses: inout QueryClauses, _ base: @autoclosure () throws -> QueryTable, caching model: Model.Type?,
        for database: Database, defaultsToIdOrder: Bool
    ) throws -> CompiledQuery {
        try clauses.compile(try base(), caching: model, for: database, defaultsToIdOrder: defaultsToIdOrder)
    }

    /// `clauses.shape(…)`, taking the clauses in place (see the `compile` above).
    static func shape(
        _ clauses: inout QueryClauses, _ base: @autoclosure () throws -> QueryTable, caching model: Model.Type,
        for database: Database, defaultsToIdOrder: Bool
    ) throws -> CompiledShape {
        try clauses.shape(try base(), caching: model, for: database, defaultsToIdOrder: defaultsToIdOrder)
    }

    /// SQLite's default `SQLITE_MAX_VARIABLE_NUMBER`.
    static var maximumParameters: Int { 32_766 }

    /// Builds the query's SQL: from the calling thread's cache of compiled shapes when a
    /// query of the same shape was compiled on it before (then nothing is parsed, resolved
    /// or written, and no lock is taken), else by ``compileShape(_:dialect:defaultsToIdOrder:)``.
    ///
    /// - Parameters:
    ///   - base: the queried table (made only on a cache miss).
    ///   - model: the model class `base` is the table of, whose shapes are cached; `nil` for a
    ///     run-time model, whose query is compiled each time (a cached shape would keep its
    ///     table, and through the table's parents the C API's database, alive for the thread's life).
    ///   - database: the database it runs on, whose dialect the SQL is written in.
    ///   - defaultsToIdOrder: order by the base table's id when no order is given
    ///     (record fetches, so that results are repeatable).
    /// - Throws: `.invalidPredicate` (syntax, argument count, with the position),
    ///   `.unknownColumn` / `.unknownTable` (naming the columns), `.invalidValue` (a
    ///   negative limit or offset), a conversion error of an argument.
    func compile(
        _ base: @autoclosure () throws -> QueryTable, caching model: Model.Type?, for database: Database,
        defaultsToIdOrder: Bool = false
    ) throws -> CompiledQuery {
        try shape(try base(), caching: model, for: database, defaultsToIdOrder: defaultsToIdOrder).query(self)
    }

    /// The compiled shape of the query (see ``compile(_:caching:for:defaultsToIdOrder:)``), for a
    /// caller that binds the values itself (``CompiledShape/bind(_:to:)``, after
    /// ``CompiledShape/checkLimits(_:_:)``).
    func shape(
        _ base: @autoclosure () throws -> QueryTable, caching model: Model.Type?, for database: Database,
        defaultsToIdOrder: Bool
    ) throws -> CompiledShape {
        guard let model, rowLock == nil else {
            // A locking query is compiled each time (its shapes are not cached): it runs in a
            // transaction that writes what it read, where the compilation is little of the cost.
            if rowLock != nil { try database.requireTransaction(for: "lock()") }
            return try compileShape(try base(), dialect: database.dialect, defaultsToIdOrder: defaultsToIdOrder)
        }
        let target = QueryShape.Target(
            base: ObjectIdentifier(model), dialect: database.dialectType, defaultsToIdOrder: defaultsToIdOrder)
        // A condition that failed to build, or an argument that does not convert, matches no
        // cached shape: the full compilation then reports the first error, as it finds them.
        // The closures capture no clauses (a capture of `self` would copy every field).
        if let last = QueryShape.cache.withValue({ $0.last }), last.shape.matches(self, target) {
            return last.compiled
        }
        let key = fingerprint(target)
        if let entry = QueryShape.cache.withValue({ $0.entries[key] }), entry.shape.matches(self, target) {
            QueryShape.cache.withValue { $0.last = entry }
            return entry.compiled
        }
        let compiled = try compileShape(try base(), dialect: database.dialect, defaultsToIdOrder: defaultsToIdOrder)
        compiled.isCached = true
        let entry = QueryShape.Entry(QueryShape(self, target), compiled)
        QueryShape.cache.withValue { cache in
            if cache.entries.count >= QueryShape.cacheLimit { cache.entries.removeAll() }
            // A different shape with the same fingerprint is replaced.
            cache.entries[key] = entry
            cache.last = entry
        }
        return compiled
    }

    /// Resolves the query's tables (`base`, then the joined models) and builds its SQL,
    /// checking that every argument converted.
    /// - Throws: as ``compile(_:caching:for:defaultsToIdOrder:)``, but for a negative limit or offset.
    func compileShape(_ base: QueryTable, dialect: any SQLDialect, defaultsToIdOrder: Bool) throws -> CompiledShape {
        var tables = [base]
        var from = "FROM \(base.quotedName)"
        for join in joins {
            let joined = try QueryTable(join.model)
            guard !tables.contains(where: { isSameName($0.table.schema.name, joined.table.schema.name) }) else {
                throw ActiveRecordError(
                    .invalidPredicate, "the table \(joined.table.schema.name) is already in the query; it cannot be joined twice")
            }
            let (local, foreign) = try joinColumns(join, joined, tables, dialect)
            tables.append(joined)
            from += " \(join.kind.rawValue) \(joined.quotedName) ON \(local) = \(foreign)"
        }
        let selected = try selectedColumns(base)
        var slots: [ArgumentSlot] = []
        var clauses = [from]
        let wheres = try conditions.enumerated().map { try render($1, number: $0, tables, dialect, slots: &slots) }
        if !wheres.isEmpty { clauses.append("WHERE " + wheres.joined(separator: " AND ")) }
        if !groupColumns.isEmpty {
            var constants: [DatabaseValue] = []
            let keys = try groupColumns.map { try renderExpression($0, tables, dialect, into: &constants) }
            slots += constants.map { .constant($0) }
            clauses.append("GROUP BY " + keys.joined(separator: ", "))
        }
        let havings = try havingConditions.enumerated().map {
            try render($1, number: conditions.count + $0, tables, dialect, slots: &slots)
        }
        if !havings.isEmpty { clauses.append("HAVING " + havings.joined(separator: " AND ")) }

        var orderArguments: [DatabaseValue] = []
        var orders = try orderings.map { ordering in
            dialect.orderTerm(try renderExpression(ordering.column, tables, dialect, into: &orderArguments), ascending: ordering.ascending)
        }
        if randomOrder { orders.append("random()") }
        if orders.isEmpty && defaultsToIdOrder { orders.append("\(base.quotedName).\"id\" ASC") }
        var tail = ""
        if !orders.isEmpty { tail += " ORDER BY " + orders.joined(separator: ", ") }
        let hasLimitOrOffset = limitCount != nil || offsetCount != nil
        if hasLimitOrOffset { tail += " LIMIT ? OFFSET ?" }
        let total = slots.count + orderArguments.count + (hasLimitOrOffset ? 2 : 0)
        guard total <= Self.maximumParameters else {
            throw ActiveRecordError(
                .invalidPredicate,
                "the query has \(total) values to bind; SQLite binds at most \(Self.maximumParameters). Split a long IN list.")
        }
        var lockClause = ""
        if let rowLock {
            guard !isDistinct, groupColumns.isEmpty else {
                throw ActiveRecordError(
                    .misuse, "lock() locks the rows of a record query: it cannot be used with distinct() or group(by:)")
            }
            lockClause = dialect.rowLockClause(rowLock, of: base.table.schema.name)
        }
        return CompiledShape(
            tables: tables, body: clauses.joined(separator: " "), tail: tail, selectedColumns: selected,
            isDistinct: isDistinct, needsSubquery: hasLimitOrOffset || isDistinct || !groupColumns.isEmpty,
            dialect: dialect, bodySlots: slots, orderArguments: orderArguments, hasLimitOrOffset: hasLimitOrOffset,
            lockClause: lockClause)
    }

    private func joinColumns(
        _ join: Join, _ joined: QueryTable, _ tables: [QueryTable], _ dialect: any SQLDialect
    ) throws -> (String, String) {
        if let (local, foreign) = join.on {
            return (
                try resolveNamed(local, tables, dialect, context: "join(\(joined.modelName).self, on: \"\(local)\", …)"),
                try resolveNamed(foreign, [joined], dialect, context: "join(\(joined.modelName).self, on: …, \"\(foreign)\")"))
        }
        let base = tables[0]
        let foreignKey = foreignKeyName(forModelNamed: joined.modelName)
        if let column = base.qualifiedColumn(foreignKey), let id = joined.qualifiedColumn("id") {
            return (column, id)
        }
        let backKey = foreignKeyName(forModelNamed: base.modelName)
        if let column = joined.qualifiedColumn(backKey), let id = base.qualifiedColumn("id") {
            return (id, column)
        }
        throw ActiveRecordError(
            .unknownColumn,
            "cannot join \(joined.modelName) to \(base.modelName) by convention: neither \(base.modelName).\(foreignKey) "
                + "nor \(joined.modelName).\(backKey) exists; name the columns with join(_:_:on:_:)")
    }

    private func selectedColumns(_ base: QueryTable) throws -> [Int]? {
        switch selection {
        case .all: return nil
        case .only(let names):
            let indexes = Set(try names.compactMap { try index(of: $0, in: base) })
            return base.table.schema.columns.indices.filter(indexes.contains)
        case .except(let names):
            let indexes = Set(try names.compactMap { try index(of: $0, in: base) })
            return base.table.schema.columns.indices.filter { !indexes.contains($0) }
        }
    }

    /// The declared column index for `only`/`except`; `nil` for `id` and the timestamps (always loaded).
    private func index(of name: String, in base: QueryTable) throws -> Int? {
        if TableSchema.reservedColumnNames.contains(name) { return nil }
        return try base.columnIndex(name)
    }

    // MARK: Rendering

    /// Renders one `where`/`having` condition (the `number`-th, counting `where`s then
    /// `having`s), appending where each of its parameters takes its value from to `slots`.
    private func render(
        _ condition: Condition, number: Int, _ tables: [QueryTable], _ dialect: any SQLDialect, slots: inout [ArgumentSlot]
    ) throws -> String {
        let format: String?
        let node: PredicateNode
        let placeholders: Int
        let sources: [QueryArgument.Source]
        switch condition {
        case .failed(let error):
            throw error
        case .format(let text, let arguments):
            do {
                (node, placeholders) = try PredicateCache.parse(text)
            } catch {
                throw Self.syntaxError(error, in: text)
            }
            format = text
            sources = arguments
        case .tree(let tree, let arguments):
            (format, node, placeholders, sources) = (nil, tree, arguments.count, arguments)
        }
        // Made only for a message: masking and quoting the format costs more than rendering it.
        let context = { format.map { " in \(quote($0))" } ?? "" }
        guard sources.count == placeholders else {
            throw ActiveRecordError(
                .invalidPredicate,
                "\(quote(format ?? "")) has \(placeholders) placeholder\(placeholders == 1 ? "" : "s") "
                    + "but \(sources.count) argument\(sources.count == 1 ? " was" : "s were") given")
        }
        let converted = try sources.enumerated().map { index, source in
            try convert(source, placeholder: index + 1, context: context)
        }
        var renderer = makeRenderer(tables, dialect, values: converted)
        let sql = try rethrowing(context: context, format: format) { try renderer.render(node) }
        slots += renderer.parameters.map { slot($0, condition: number) }
        switch node {
        case .and, .or: return sql  // already in parentheses
        default: return "(" + sql + ")"
        }
    }

    /// Renders a column or aggregate expression (`name`, `Group.title`, `count(*)`). A
    /// column's exact name is that column, whatever characters it holds (the C API orders
    /// by names, not expressions).
    func renderExpression(
        _ text: String, _ tables: [QueryTable], _ dialect: any SQLDialect, into arguments: inout [DatabaseValue]
    ) throws -> String {
        for table in tables {
            if let column = table.qualifiedColumn(text) { return column }
        }
        let operands = try renderExpressions(text, tables, dialect, into: &arguments)
        guard operands.count == 1 else {
            throw ActiveRecordError(.invalidPredicate, "expected one column in \(quote(text))")
        }
        return operands[0]
    }

    /// Renders a comma-separated list of column or aggregate expressions.
    func renderExpressions(
        _ text: String, _ tables: [QueryTable], _ dialect: any SQLDialect, into arguments: inout [DatabaseValue]
    ) throws -> [String] {
        let context = { " in \(quote(text))" }
        let operands: [PredicateOperand]
        do {
            operands = try PredicateCache.parseOperands(text)
        } catch {
            throw ActiveRecordError(.invalidPredicate, "\(error.message) at position \(error.position)\(context())")
        }
        var renderer = makeRenderer(tables, dialect, values: [])
        let rendered = try rethrowing(context: context, format: text) { try operands.map { try renderer.render($0) } }
        for parameter in renderer.parameters {
            // No placeholders here (the renderer refuses them): every parameter is a literal.
            if case .constant(let value) = slot(parameter, condition: 0) { arguments.append(value) }
        }
        return rendered
    }

    private func makeRenderer(_ tables: [QueryTable], _ dialect: any SQLDialect, values: [QueryArgument]) -> PredicateRenderer {
        PredicateRenderer(
            resolveColumn: { qualifier, name, position in
                try resolve(qualifier: qualifier, name: name, position: position, tables)
            },
            shape: { index, position in
                guard index < values.count else {
                    throw PredicateSyntaxError("placeholders are not allowed here", at: position)
                }
                switch values[index] {
                case .value(.null): return .null
                case .value: return .value
                case .list(let list): return .list(count: list.count)
                }
            },
            like: { dialect.like($0, $1, escape: $2, negated: $3) },
            aggregate: dialect.aggregate)
    }

    private func rethrowing<R>(context: () -> String, format: String?, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as PredicateSyntaxError {
            let at = format == nil ? "" : " at position \(error.position)"
            throw ActiveRecordError(.invalidPredicate, "\(error.message)\(at)\(context())")
        } catch let error as ResolutionError {
            let at = format == nil ? "" : " at position \(error.position)"
            throw ActiveRecordError(error.code, "\(error.subject)\(at)\(context()); \(error.detail)")
        }
    }

    private func convert(_ source: QueryArgument.Source, placeholder: Int, context: () -> String) throws -> QueryArgument {
        do {
            return try source.converted()
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(error.code, "argument \(placeholder)\(context()): \(error.message)")
        }
    }

    /// Where a parameter the renderer wrote for the `condition`-th condition takes its value from.
    private func slot(_ source: ParameterSource, condition: Int) -> ArgumentSlot {
        switch source {
        case .argument(let index): .argument(condition: condition, index: index)
        case .argumentElement(let index, let element): .element(condition: condition, index: index, element: element)
        case .integer(let value): .constant(.integer(value))
        case .real(let value): .constant(.real(value))
        case .text(let value): .constant(.text(value))
        }
    }

    // MARK: Resolution

    /// `"Table"."column"` for a column of one of the query's tables.
    private func resolve(qualifier: String?, name: String, position: Int, _ tables: [QueryTable]) throws -> String {
        var candidates = tables
        if let qualifier {
            candidates = tables.filter {
                isSameName($0.table.schema.name, qualifier) || isSameName($0.modelName, qualifier)
            }
            guard !candidates.isEmpty else {
                throw ResolutionError(
                    code: .unknownTable, subject: "unknown table '\(qualifier)'",
                    detail: "the query has: \(tables.map(\.table.schema.name).joined(separator: ", "))",
                    position: position)
            }
        }
        for table in candidates {
            if let column = table.qualifiedColumn(name) { return column }
        }
        let table = candidates[0]
        throw ResolutionError(
            code: .unknownColumn, subject: "unknown column '\(name)'",
            detail: "\(table.table.schema.name)'s columns are: \(table.table.schema.allColumnNames.joined(separator: ", "))",
            position: position)
    }

    private func resolveNamed(_ text: String, _ tables: [QueryTable], _ dialect: any SQLDialect, context: String) throws -> String {
        var ignored: [DatabaseValue] = []
        do {
            return try renderExpression(text, tables, dialect, into: &ignored)
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(error.code, "\(context): \(error.message)")
        }
    }

    /// The error for a syntax error in `format`: `… at position 5 in "…"`.
    static func syntaxError(_ error: PredicateSyntaxError, in format: String) -> ActiveRecordError {
        ActiveRecordError(.invalidPredicate, "\(error.message) at position \(error.position) in \(quote(format))")
    }

    private func quote(_ format: String) -> String { Self.quote(format) }

    /// A format as messages show it: quoted, at most 200 characters, with the values of its
    /// literals masked (they may be data, as bound values may): a string's characters and a
    /// number's digits become `*`, so that positions in the message still point right.
    private static func quote(_ format: String) -> String {
        let shown = format.count > 200 ? String(format.prefix(200)) + "…" : format
        return "\"\(maskingLiterals(shown))\""
    }

    /// `name = 'secret' AND age > 4.2e1` → `name = '******' AND age > *****`.
    static func maskingLiterals(_ format: String) -> String {
        let scalars = Array(format.unicodeScalars)
        var result = String.UnicodeScalarView()
        func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar >= "0" && scalar <= "9" }
        func isWord(_ scalar: Unicode.Scalar) -> Bool {
            isDigit(scalar) || scalar == "_" || scalar == "$" || scalar.properties.isAlphabetic
        }
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            let previous: Unicode.Scalar? = index > 0 ? scalars[index - 1] : nil
            if scalar == "'" {
                // A string literal: its characters masked, a doubled quote inside counted as two.
                result.append(scalar)
                index += 1
                while index < scalars.count {
                    if scalars[index] == "'" {
                        if index + 1 < scalars.count, scalars[index + 1] == "'" {
                            result.append(contentsOf: "**".unicodeScalars)
                            index += 2
                            continue
                        }
                        result.append("'")
                        index += 1
                        break
                    }
                    result.append("*")
                    index += 1
                }
            } else if (isDigit(scalar) || (scalar == "." && index + 1 < scalars.count && isDigit(scalars[index + 1])))
                        && !(previous.map(isWord) ?? false) {
                // A number literal (not digits inside a name): digits, point, exponent.
                while index < scalars.count {
                    let current = scalars[index]
                    let signAfterExponent = (current == "+" || current == "-") && (scalars[index - 1] == "e" || scalars[index - 1] == "E")
                    guard isDigit(current) || current == "." || current == "e" || current == "E" || signAfterExponent else { break }
                    result.append("*")
                    index += 1
                }
            } else {
                result.append(scalar)
                index += 1
            }
        }
        return String(result)
    }
}
