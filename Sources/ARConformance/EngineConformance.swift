@_spi(Engines) import ARCore
import ActiveRecord
import Testing

/// What every engine promises the library, checked on a database of the engine under test:
/// how a third engine proves itself, and how SQLite and PostgreSQL keep their word (as
/// Fluent's `FluentBenchmarker.testAll`).
///
/// ```swift
/// @Test func myEngineConforms() throws {
///     let conformance = EngineConformance(engine: "MyEngine") { body in
///         let server = try MyTestServer.freshDatabase()     // empty, for one check
///         defer { server.drop() }
///         try body(.myEngine(server.url))
///     }
///     conformance.runAll()
/// }
/// ```
///
/// Each check (see ``checks``) opens a ``Database`` at a fresh location of its own, states one
/// promise of the engine contract (`DatabaseEngine`, `EngineConnection`, `EngineStatement`,
/// `SQLDialect`) and works through the connection and statement the library itself uses,
/// then through records. A broken promise is an issue of the running test that names the
/// engine, the check and the promise; an error a check did not expect ends that check only.
public struct EngineConformance {
    /// The engine's name, in every issue the checks record.
    public let engine: String
    /// Runs its argument with a fresh, empty place for a database of the engine, then removes it.
    let withLocation: ((DatabaseLocation) throws -> Void) throws -> Void

    /// A suite for one engine.
    /// - Parameters:
    ///   - engine: the engine's name, for messages.
    ///   - withLocation: runs its argument with a location where a fresh, empty database of
    ///     the engine opens (a new file, a new server schema), then removes what it made. Each
    ///     check calls it once, and may open several databases at the location it is given.
    public init(engine: String, withLocation: @escaping ((DatabaseLocation) throws -> Void) throws -> Void) {
        self.engine = engine
        self.withLocation = withLocation
    }

    /// Runs every check of ``checks``, each on a fresh database.
    public func runAll() {
        for check in Self.checks { run(check) }
    }

    /// Runs the checks with these names (see ``Check/name``); an unknown name is an issue.
    public func run(named names: [String]) {
        for name in names {
            guard let check = Self.checks.first(where: { $0.name == name }) else {
                Issue.record("no conformance check is named \(name); they are: \(Self.checks.map(\.name).joined(separator: ", "))")
                continue
            }
            run(check)
        }
    }

    /// Runs one check on a fresh database of the engine.
    public func run(_ check: Check) {
        do {
            try withLocation { location in
                let database = try Database(location)
                database.logger = nil
                let context = ConformanceContext(engine: engine, check: check, database: database, location: location)
                try database.use { try check.body(context) }
            }
        } catch {
            Issue.record("\(engine) › \(check.name) (\(check.promise)): stopped by an error: \(error)")
        }
    }

    /// One promise of the engine contract and the code that checks it.
    public struct Check: Sendable, CustomStringConvertible {
        /// A short name, unique in ``EngineConformance/checks``.
        public let name: String
        /// What the engine promises, in a sentence.
        public let promise: String
        let body: @Sendable (ConformanceContext) throws -> Void

        /// The check's name.
        public var description: String { name }
    }

    /// Every check, in the order ``runAll()`` runs them.
    public static let checks: [Check] = valueChecks + writeChecks + transactionChecks + errorChecks + dialectChecks
        + schemaChecks + migrationChecks + readChecks + recordChecks
}

/// One run of a check: its database, and how it says that a promise broke.
struct ConformanceContext {
    let engine: String
    let check: EngineConformance.Check
    let database: Database
    let location: DatabaseLocation

    /// The engine's dialect.
    var dialect: any SQLDialect { database.dialect }

    /// Records an issue naming the engine and the check, unless `condition` holds.
    func expect(_ condition: Bool, _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
        if !condition { fail(what(), sourceLocation: sourceLocation) }
    }

    /// Records an issue unless `actual` is `expected`.
    func expect<T: Equatable>(
        _ actual: T, _ expected: T, _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        if actual != expected { fail("\(what()): got \(actual), expected \(expected)", sourceLocation: sourceLocation) }
    }

    /// Records an issue unless `body` throws an ``ActiveRecordError`` that `matches`; returns it.
    @discardableResult
    func expectError(
        _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation,
        matching matches: (ActiveRecordError) -> Bool, _ body: () throws -> Void
    ) -> ActiveRecordError? {
        do {
            try body()
            fail("\(what()): nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as ActiveRecordError {
            if !matches(error) { fail("\(what()): got \(error.code): \(error)", sourceLocation: sourceLocation) }
            return error
        } catch {
            fail("\(what()): got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    func fail(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        Issue.record("\(engine) › \(check.name) (\(check.promise)): \(what)", sourceLocation: sourceLocation)
    }

    /// Runs `body` with the connection the calling thread writes through.
    func withConnection<R>(_ body: (Connection) throws -> R) throws -> R {
        try database.withConnection(body)
    }

    /// The rows of `sql`, through the package's connection.
    func rows(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> [[DatabaseValue]] {
        try withConnection { try $0.rows(sql, arguments) }
    }

    func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        try withConnection { try $0.execute(sql, arguments) }
    }

    /// Makes a table with the dialect's `id` column and `columns` (name, storage class,
    /// whatever follows the type: `NOT NULL`, `UNIQUE`, `CHECK (…)`).
    func createTable(_ name: String, _ columns: [(name: String, type: SQLType, constraints: String)]) throws {
        let definitions = [dialect.primaryKeyDefinition] + columns.map { column in
            "\(column.name.quotedIdentifier) \(dialect.columnType(column.type, .plain))"
                + (column.constraints.isEmpty ? "" : " " + column.constraints)
        }
        try execute("CREATE TABLE \(name.quotedIdentifier) (\(definitions.joined(separator: ", ")))")
    }

    /// Inserts a row through ``SQLDialect/insertSQL(into:columns:)`` and the statement's
    /// `insert()`, and returns its id.
    @discardableResult
    func insert(into table: String, _ values: [String: DatabaseValue]) throws -> Int64 {
        let columns = values.keys.sorted()
        return try withConnection { connection in
            try connection.withStatement(dialect.insertSQL(into: table, columns: columns), columns.map { values[$0]! }) {
                try $0.insert()
            }
        }
    }

    /// The one value of a query of one row and one column.
    func scalar(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> DatabaseValue {
        let rows = try rows(sql, arguments)
        guard rows.count == 1, rows[0].count == 1 else {
            throw ActiveRecordError(.misuse, "\(sql) returned \(rows.count) rows, not one of one column")
        }
        return rows[0][0]
    }
}

extension EngineConformance {
    /// A check of the named promise.
    static func check(_ name: String, _ promise: String, _ body: @escaping @Sendable (ConformanceContext) throws -> Void) -> Check {
        Check(name: name, promise: promise, body: body)
    }
}
