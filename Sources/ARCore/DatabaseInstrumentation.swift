#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Metrics
import Synchronization
import Tracing

/// What a database reports to swift-metrics and swift-distributed-tracing, and the decision,
/// taken once per database, whether it reports anything at all.
///
/// A program bootstraps a backend (`MetricsSystem.bootstrap`, `InstrumentationSystem.bootstrap`)
/// before it opens its databases; each database then looks once, when it opens and again on
/// ``Database/refreshInstrumentation()``, at the factory and the tracer in effect (a task-local
/// one of `withMetricsFactory` / `withTracer` included). When both are the no-op ones, its
/// connections hold no ``Instruments`` and a statement pays one flag test, the one it already
/// made for a SQL logger (``Connection``'s `runsAside`): nothing is created or read per statement.
///
/// Metrics, each with the dimensions `database` (``Database/path``: a server's address without
/// its password) and `engine` (`sqlite`, `postgresql`):
/// - `activerecord_query_duration` (Timer), one per statement kind, dimension `operation`:
///   `select`, `insert`, `update`, `delete`, `other` (by the SQL's first keyword; `BEGIN`,
///   `COMMIT`, DDL, `PRAGMA` and a `WITH` are `other`). A statement's time runs from its start
///   to the end of the work on its rows (decoding them into records included).
/// - `activerecord_connections_open` (Gauge): the connections the database holds open.
/// - `activerecord_connections_in_use` (Gauge): those a caller uses (PostgreSQL's pool; SQLite's
///   writer and readers are taken without a lock on every statement, and are not counted).
/// - `activerecord_connection_wait_duration` (Timer): how long a caller waited for a connection
///   (every check-out of PostgreSQL's pool; on SQLite, each wait for the writer's lock that had
///   to wait: one not taken at once).
///
/// Spans: one per statement, of kind `client`, named by operation and table (`SELECT Post`),
/// a child of the caller's `ServiceContext.current` when there is one, with the OpenTelemetry
/// database attributes `db.system`, `db.operation.name`, `db.collection.name` (the first table
/// the statement names), `db.namespace` (``DatabaseEngine/namespace``) and
/// `db.query.text`: the SQL text with its placeholders, never a bound value. A failed statement
/// records its error on the span and sets the span's status to error.
package final class DatabaseInstrumentation: Sendable {
    /// The engine, as OpenTelemetry names it: `sqlite`, `postgresql`.
    package let system: String
    /// The dimensions of every metric: the database (without password) and the engine.
    private let dimensions: [(String, String)]
    /// The database's namespace (`db.namespace`), when the location names one.
    private let namespace: String?
    /// The instruments in effect (`nil`: no backend).
    private let current = Lock<Instruments?>(nil)
    /// Whether ``current`` is set: read without the lock by the pool's hooks.
    private let isActive = Atomic<Bool>(false)
    /// The connections open and in use, kept whether or not a backend is there, so that the
    /// gauges are right after ``refresh()`` turns reporting on.
    private let open = Atomic<Int>(0)
    private let inUse = Atomic<Int>(0)

    /// An instrumentation reporting nothing until ``refresh()``.
    /// - Parameters:
    ///   - engine: the engine's name (``SQLDialect/name``), lowercased for `db.system`.
    ///   - database: ``Database/path`` (a server's address without its password).
    ///   - namespace: ``DatabaseEngine/namespace``.
    package init(engine: String, database: String, namespace: String?) {
        system = engine.lowercased()
        dimensions = [("database", database), ("engine", system)]
        self.namespace = namespace
    }

    deinit {
        // The database is gone: its connections with it.
        guard let instruments = current.withLock({ $0 }) else { return }
        instruments.connectionsOpen?.record(0)
        instruments.connectionsInUse?.record(0)
    }

    /// What the connections report to, `nil` when nothing is bootstrapped.
    package var instruments: Instruments? { current.withLock { $0 } }

    /// Looks again at the metrics factory and the tracer in effect (the global ones, or
    /// task-local ones) and makes the instruments for them: `nil` when both are the no-op ones.
    @discardableResult
    package func refresh() -> Instruments? {
        let factory = MetricsSystem.factory
        let tracer = InstrumentationSystem.tracer
        let metrics = factory is NOOPMetricsHandler ? nil : factory
        let tracing = tracer is NoOpTracer ? nil : tracer
        let instruments =
            metrics == nil && tracing == nil
            ? nil : Instruments(metrics: metrics, tracer: tracing, dimensions: dimensions, system: system, namespace: namespace)
        current.withLock { $0 = instruments }
        isActive.store(instruments != nil, ordering: .relaxed)
        if let gauges = instruments {
            gauges.connectionsOpen?.record(open.load(ordering: .relaxed))
            gauges.connectionsInUse?.record(inUse.load(ordering: .relaxed))
        }
        return instruments
    }

    /// Whether the database reports to a backend: a pool times its check-outs only then.
    @inline(__always)
    package var isReporting: Bool { isActive.load(ordering: .relaxed) }

    /// Records that a caller waited `duration` for a connection (a pool's check-out, the
    /// writer's lock, an executor's queue). Nothing without a backend.
    package func recordConnectionWait(_ duration: Duration) {
        guard isReporting else { return }
        instruments?.connectionWait?.record(duration: duration)
    }

    /// ``recordConnectionWait(_:)`` of a wait that began at `start` (``monotonicNanoseconds()``)
    /// and ends now.
    func recordConnectionWait(since start: UInt64) {
        guard isReporting else { return }
        instruments?.connectionWait?.recordNanoseconds(Int64(bitPattern: monotonicNanoseconds() &- start))
    }

    /// Counts connections taken (`delta` > 0) or given back (`delta` < 0) by callers, and
    /// reports the count when a backend is there. ``ConnectionPool`` counts its own check-outs:
    /// call this for connections handed out some other way. One atomic add otherwise.
    @inline(__always)
    package func connectionsInUse(delta: Int) {
        let count = inUse.wrappingAdd(delta, ordering: .relaxed).newValue
        if isReporting { reportConnectionsInUse(count) }
    }

    /// ``connectionsInUse(delta:)``'s report, out of line (the count alone is on every pool
    /// check-out and check-in).
    @inline(never)
    private func reportConnectionsInUse(_ count: Int) {
        instruments?.connectionsInUse?.record(count)
    }

    /// Counts connections opened (`delta` > 0) or closed (`delta` < 0), and reports the count
    /// when a backend is there.
    package func connectionsOpen(delta: Int) {
        let count = open.wrappingAdd(delta, ordering: .relaxed).newValue
        if isReporting { instruments?.connectionsOpen?.record(count) }
    }
}

/// The metrics and the tracer a database reports to, made once per
/// ``DatabaseInstrumentation/refresh()``: a connection holds them while a backend is there.
package final class Instruments: Sendable {
    /// `activerecord_query_duration`, by ``StatementOperation`` (`nil`: no metrics backend).
    let queryDurations: [Metrics.Timer]?
    let connectionsOpen: Gauge?
    let connectionsInUse: Gauge?
    let connectionWait: Metrics.Timer?
    /// The tracer (`nil`: no tracing backend).
    let tracer: (any Tracer)?
    let system: String
    let namespace: String?

    init(metrics: (any MetricsFactory)?, tracer: (any Tracer)?, dimensions: [(String, String)], system: String, namespace: String?) {
        if let metrics {
            queryDurations = StatementOperation.allCases.map { operation in
                Metrics.Timer(
                    label: "activerecord_query_duration", dimensions: dimensions + [("operation", operation.label)],
                    factory: metrics)
            }
            connectionsOpen = Gauge(label: "activerecord_connections_open", dimensions: dimensions, factory: metrics)
            connectionsInUse = Gauge(label: "activerecord_connections_in_use", dimensions: dimensions, factory: metrics)
            connectionWait = Metrics.Timer(label: "activerecord_connection_wait_duration", dimensions: dimensions, factory: metrics)
        } else {
            queryDurations = nil
            connectionsOpen = nil
            connectionsInUse = nil
            connectionWait = nil
        }
        self.tracer = tracer
        self.system = system
        self.namespace = namespace
    }

    /// Runs `body`, a run of `statement`, timed and inside a span.
    @inline(never)
    func measure<R>(_ statement: Statement, _ body: () throws -> R) throws -> R {
        let description = statement.instrumentationDescription ?? describe(statement)
        let span = tracer.map { start($0, description) }
        let started = monotonicNanoseconds()
        do {
            let result = try body()
            end(description, span, since: started)
            return result
        } catch {
            span?.recordError(error)
            span?.setStatus(SpanStatus(code: .error))
            end(description, span, since: started)
            throw error
        }
    }

    /// Records a statement that failed before it ran (when it was prepared): its span, with the
    /// error, and no duration.
    @inline(never)
    func recordFailure(_ sql: String, _ error: any Error) {
        guard let tracer else { return }
        let span = start(tracer, StatementDescription(sql: sql, system: system, namespace: namespace))
        span.recordError(error)
        span.setStatus(SpanStatus(code: .error))
        span.end()
    }

    /// A span and a start time for a statement that runs over several calls (a cursor), ended by
    /// ``end(_:)``.
    func begin(_ statement: Statement) -> RunningStatement {
        let description = statement.instrumentationDescription ?? describe(statement)
        return RunningStatement(
            description: description, span: tracer.map { start($0, description) },
            started: monotonicNanoseconds())
    }

    /// Ends what ``begin(_:)`` began, with `error` when the statement failed.
    func end(_ running: RunningStatement, error: (any Error)? = nil) {
        if let error, let span = running.span {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        }
        end(running.description, running.span, since: running.started)
    }

    private func describe(_ statement: Statement) -> StatementDescription {
        let description = StatementDescription(sql: statement.sql, system: system, namespace: namespace)
        statement.instrumentationDescription = description
        return description
    }

    /// Starts `description`'s span, a child of the caller's, with its attributes: made once per
    /// statement and set in one call (a tracer may take a lock per change), shared as they are
    /// when the tracer set none of its own (a merge rehashes every key).
    private func start(_ tracer: any Tracer, _ description: StatementDescription) -> any Span {
        let span = tracer.startSpan(description.spanName, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.updateAttributes { attributes in
            if attributes.isEmpty {
                attributes = description.spanAttributes
            } else {
                attributes.merge(description.spanAttributes)
            }
        }
        return span
    }

    private func end(_ description: StatementDescription, _ span: (any Span)?, since started: UInt64) {
        queryDurations?[description.operation.rawValue].recordNanoseconds(Int64(bitPattern: monotonicNanoseconds() &- started))
        span?.end()
    }
}

/// A statement that runs over several calls (a cursor), as ``Instruments/begin(_:)`` began it.
package struct RunningStatement {
    let description: StatementDescription
    let span: (any Span)?
    /// ``monotonicNanoseconds()`` when it began.
    let started: UInt64
}

/// The monotonic clock in nanoseconds: what a statement's duration is measured with (a
/// `ContinuousClock` instant subtracted into a `Duration` and taken apart again costs several
/// times the clock's read).
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// The kinds of statement a query duration is reported by (`operation` dimension).
package enum StatementOperation: Int, CaseIterable, Sendable {
    case select, insert, update, delete, other

    /// The dimension's value.
    var label: String {
        switch self {
        case .select: "select"
        case .insert: "insert"
        case .update: "update"
        case .delete: "delete"
        case .other: "other"
        }
    }
}

/// What instrumentation reads off a statement's SQL, once per prepared statement (kept on it):
/// its operation (the first keyword) and the first table it names (after `FROM`, `INTO` or
/// `UPDATE`).
package final class StatementDescription: Sendable {
    package let operation: StatementOperation
    /// `db.operation.name`: the first keyword, upper-cased (`SELECT`, `BEGIN`), if any.
    package let operationName: String?
    /// `db.collection.name`: the table of a `SELECT`, `INSERT`, `UPDATE` or `DELETE`, if found.
    package let collection: String?
    /// The span's name: `SELECT Post`, `BEGIN`, or the engine's name for SQL without a keyword.
    package let spanName: String
    /// The span's attributes: `db.system`, `db.operation.name`, `db.collection.name`,
    /// `db.namespace` (when known) and `db.query.text` (the SQL, placeholders and all).
    package let spanAttributes: SpanAttributes

    /// Reads `sql`'s operation and table, for a database of `system` (`db.system`) and `namespace`.
    package init(sql: String, system: String, namespace: String?) {
        var scanner = SQLWords(sql)
        let keyword = scanner.nextWord()?.uppercased()
        operationName = keyword
        operation =
            switch keyword {
            case "SELECT": .select
            case "INSERT": .insert
            case "UPDATE": .update
            case "DELETE": .delete
            default: .other
            }
        let tableFollows: Set<String> =
            switch operation {
            case .select, .delete: ["FROM"]
            case .insert: ["INTO"]
            case .update: ["UPDATE"]
            case .other: []
            }
        var collection: String?
        if operation == .update {
            collection = scanner.nextIdentifier()
        } else if !tableFollows.isEmpty {
            while let word = scanner.nextWord() {
                if tableFollows.contains(word.uppercased()) {
                    collection = scanner.nextIdentifier()
                    break
                }
            }
        }
        self.collection = collection
        spanName = [keyword ?? system, collection].compactMap { $0 }.joined(separator: " ")
        var attributes = SpanAttributes()
        attributes.set("db.system", value: .string(system))
        if let keyword { attributes.set("db.operation.name", value: .string(keyword)) }
        if let collection { attributes.set("db.collection.name", value: .string(collection)) }
        if let namespace { attributes.set("db.namespace", value: .string(namespace)) }
        attributes.set("db.query.text", value: .string(sql))
        spanAttributes = attributes
    }
}

/// Words and identifiers of SQL text, for ``StatementDescription``: skips quoted identifiers,
/// string literals and punctuation between words.
private struct SQLWords {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ sql: String) { scalars = Array(sql.unicodeScalars) }

    /// The next bare word (letters, digits, `_`), skipping quoted text.
    mutating func nextWord() -> String? {
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\"" || scalar == "'" || scalar == "`" {
                _ = quoted(by: scalar)
            } else if Self.isWordScalar(scalar) {
                return word()
            } else {
                index += 1
            }
        }
        return nil
    }

    /// The next identifier: quoted (its quotes removed, doubled quotes made single) or bare.
    mutating func nextIdentifier() -> String? {
        while index < scalars.count, scalars[index].properties.isWhitespace || scalars[index] == "(" { index += 1 }
        guard index < scalars.count else { return nil }
        let scalar = scalars[index]
        if scalar == "\"" || scalar == "`" { return quoted(by: scalar) }
        return Self.isWordScalar(scalar) ? word() : nil
    }

    private mutating func word() -> String {
        var text = String.UnicodeScalarView()
        while index < scalars.count, Self.isWordScalar(scalars[index]) {
            text.append(scalars[index])
            index += 1
        }
        return String(text)
    }

    private mutating func quoted(by quote: Unicode.Scalar) -> String {
        var text = String.UnicodeScalarView()
        index += 1
        while index < scalars.count {
            if scalars[index] == quote {
                if index + 1 < scalars.count, scalars[index + 1] == quote {
                    text.append(quote)
                    index += 2
                    continue
                }
                index += 1
                break
            }
            text.append(scalars[index])
            index += 1
        }
        return String(text)
    }

    private static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
    }
}
