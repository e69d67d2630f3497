@_spi(Engines) import ARCore
import Synchronization

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
    /// A whole list argument, as the one value the dialect binds it as.
    case list(condition: Int, index: Int)
    /// A scalar argument (or an element of a list argument), as its JSON text: compared with
    /// a value inside a JSON column.
    case json(condition: Int, index: Int, element: Int?)
}

/// The SQL of a query and where its parameters' values come from: everything but the
/// values, so that one compilation serves every query of the same ``QueryShape``.
final class CompiledShape {
    private static let serials = Atomic<UInt64>(0)

    let tables: [QueryTable]
    let tableEngines: [TableOperations]
    /// The base table's model mapping (`tables[0].mapping`), read without copying the table out.
    let baseMapping: ModelMapping?
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
    private(set) var isCached = false

    /// Notes that the compiler put the shape in ``QueryShape/cache``.
    func markCached() { isCached = true }

    init(
        tables: [QueryTable], body: String, tail: String, selectedColumns: [Int]?, isDistinct: Bool, needsSubquery: Bool,
        dialect: any SQLDialect, bodySlots: [ArgumentSlot], orderArguments: [DatabaseValue], hasLimitOrOffset: Bool,
        lockClause: String = ""
    ) {
        self.tables = tables
        tableEngines = tables.map(\.table)
        baseMapping = tables[0].mapping
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
        // A copy, read in place as `bind` reads a query's box (a `borrowing` walk made the
        // binding dearer; see Benchmarks/README.md, Hot-path notes).
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
            case .list(let condition, let index):
                guard case .list(let list) = clauses.argument(index, of: condition) else { preconditionFailure("not a list") }
                try body(dialect.listParameter(list), true)
            case .json(let condition, let index, let element):
                switch clauses.argument(index, of: condition) {
                case .value(let value): try body(.text(jsonText(value)), true)
                case .list(let list): try body(.text(jsonText(list[element ?? 0])), true)
                }
            }
        }
        for value in orderArguments { try body(value, false) }
        if hasLimitOrOffset {
            try body(clauses.limitCount.map { .integer(Int64($0)) } ?? dialect.unlimited, false)
            try body(.integer(Int64(clauses.offsetCount ?? 0)), false)
        }
    }
}
