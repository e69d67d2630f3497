@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import InMemoryTracing
import Metrics
import MetricsTestKit
import Testing
import Tracing

/// A model of this file's own.
final class InstrumentedGadget: Model {
    @Column var name: String = ""
}

/// Metrics (swift-metrics) and spans (swift-distributed-tracing) per database.
///
/// `MetricsSystem.bootstrap` and `InstrumentationSystem.bootstrap` can run once per process, and
/// would reach every other test's database. These tests bind a recording factory and tracer
/// task-locally instead (`withMetricsFactory`, `withTracer`: swift-metrics 2.13's and
/// swift-distributed-tracing 1.7's overrides, which `MetricsSystem.factory` and
/// `InstrumentationSystem.tracer` return inside them): a database opened inside the scope reports
/// to them, exactly as it would to bootstrapped ones, and the tests run in parallel, each with
/// its own. Nothing in this test process bootstraps either system, so a database opened outside
/// a scope sees the no-op ones, as a program that bootstraps nothing does.
@Suite struct InstrumentationTests {
    /// A value no span may carry: it is bound, never written into SQL.
    static let hostile = "Robert'); DROP TABLE \"InstrumentedGadget\"; -- secret-4711"

    /// Runs `body` with a fresh database of `engine` opened under a recording metrics factory and
    /// tracer.
    func withInstrumentedDatabase(
        _ engine: TestEngine, file: Bool = false, _ body: (Database, TestMetrics, InMemoryTracer) throws -> Void
    ) throws {
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        try withMetricsFactory(metrics) {
            try withTracer(tracer) {
                try withDatabase(engine, file: file) { db in
                    #expect(db.isInstrumented)
                    try body(db, metrics, tracer)
                }
            }
        }
    }

    /// The timers of `label` for `db` whose `operation` is `operation`.
    func timers(_ metrics: TestMetrics, _ label: String, _ db: Database, operation: String? = nil) -> [TestTimer] {
        metrics.timers(label: label).filter { timer in
            let dimensions = Dictionary(timer.dimensions, uniquingKeysWith: { first, _ in first })
            return dimensions["database"] == db.path && (operation == nil || dimensions["operation"] == operation)
        }
    }

    func gauge(_ metrics: TestMetrics, _ label: String, _ db: Database) throws -> TestRecorder {
        let found = metrics.recorders(label: label).filter { recorder in
            recorder.dimensions.contains { $0 == ("database", db.path) }
        }
        return try #require(found.first)
    }

    /// Every attribute of `span`, written out.
    func allAttributes(_ span: FinishedInMemorySpan) -> String {
        var text = ""
        span.attributes.forEach { key, value in text += "\(key)=\(value)\n" }
        return text
    }

    func attribute(_ span: FinishedInMemorySpan, _ key: String) -> String? {
        guard case .string(let value) = span.attributes.get(key) else { return nil }
        return value
    }

    @Test(arguments: TestEngine.all)
    func findRecordsSelectDurationAndOneSpanWithoutTheBoundValue(engine: TestEngine) throws {
        try withInstrumentedDatabase(engine) { db, metrics, tracer in
            let gadget = try InstrumentedGadget.create(["name": Self.hostile])
            tracer.clearFinishedSpans()
            let selectsBefore = timers(metrics, "activerecord_query_duration", db, operation: "select").first?.values.count ?? 0

            let found = try InstrumentedGadget.find(try #require(gadget.id))
            #expect(found?.name == Self.hostile)

            let selects = try #require(timers(metrics, "activerecord_query_duration", db, operation: "select").first)
            #expect(selects.values.count == selectsBefore + 1)
            #expect(selects.values.last.map { $0 > 0 } == true)
            #expect(selects.dimensions.contains { $0 == ("engine", engine == .sqlite ? "sqlite" : "postgresql") })

            let spans = tracer.finishedSpans
            #expect(spans.count == 1)
            let span = try #require(spans.first)
            #expect(span.operationName == "SELECT InstrumentedGadget")
            #expect(span.kind == .client)
            #expect(attribute(span, "db.system") == (engine == .sqlite ? "sqlite" : "postgresql"))
            #expect(attribute(span, "db.operation.name") == "SELECT")
            #expect(attribute(span, "db.collection.name") == "InstrumentedGadget")
            let text = try #require(attribute(span, "db.query.text"))
            #expect(text.contains("?"))
            #expect(span.status == nil)

            // Bound values reach no span: not the find's, not a query by the hostile value, not the insert's.
            _ = try InstrumentedGadget.first(where: "name", equals: Self.hostile)
            _ = try InstrumentedGadget.create(["name": Self.hostile])
            let all = tracer.finishedSpans
            #expect(all.count == 3)
            #expect(all.map(\.operationName) == ["SELECT InstrumentedGadget", "SELECT InstrumentedGadget", "INSERT InstrumentedGadget"])
            for span in all {
                #expect(!allAttributes(span).contains("secret-4711"))
                #expect(!span.operationName.contains("secret-4711"))
            }
            #expect(timers(metrics, "activerecord_query_duration", db, operation: "insert").first?.values.isEmpty == false)
        }
    }

    @Test(arguments: TestEngine.all)
    func spansAreChildrenOfTheCallersSpan(engine: TestEngine) throws {
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        try withMetricsFactory(metrics) {
            try withTracer(tracer) {
                try withDatabase(engine) { db in
                    let gadget = try InstrumentedGadget.create(["name": "a"])
                    tracer.clearFinishedSpans()
                    try withSpan("GET /gadgets/:id") { request in
                        _ = try InstrumentedGadget.find(try #require(gadget.id))
                        let statement = try #require(tracer.finishedSpans.first)
                        #expect(statement.parentSpanID == request.context.inMemorySpanContext?.spanID)
                        #expect(statement.traceID == request.context.inMemorySpanContext?.traceID)
                    }
                    // Outside any span, a statement's span is a root.
                    tracer.clearFinishedSpans()
                    _ = try InstrumentedGadget.find(try #require(gadget.id))
                    #expect(tracer.finishedSpans.first?.parentSpanID == nil)
                }
            }
        }
    }

    @Test(arguments: TestEngine.all)
    func aFailedStatementMarksItsSpan(engine: TestEngine) throws {
        try withInstrumentedDatabase(engine) { db, metrics, tracer in
            // Failing when it runs: a NOT NULL column given NULL.
            try db.execute(#"CREATE TABLE "InstrumentedStrict" ("x" TEXT NOT NULL, "y" TEXT)"#)
            tracer.clearFinishedSpans()
            #expect(throws: ActiveRecordError.self) {
                try db.execute(#"INSERT INTO "InstrumentedStrict" ("x", "y") VALUES (?, ?)"#, [.null, .text(Self.hostile)])
            }
            let failed = try #require(tracer.finishedSpans.last)
            #expect(failed.operationName == "INSERT InstrumentedStrict")
            #expect(failed.status?.code == .error)
            #expect(failed.errors.count == 1)
            #expect(failed.errors.first?.error is ActiveRecordError)
            #expect(!allAttributes(failed).contains("secret-4711"))
            // The failed statement's time is recorded too.
            #expect(timers(metrics, "activerecord_query_duration", db, operation: "insert").first?.values.count == 1)

            // Failing when it is prepared: a table that does not exist.
            tracer.clearFinishedSpans()
            #expect(throws: ActiveRecordError.self) {
                try db.execute(#"SELECT "x" FROM "NoSuchInstrumentedTable" WHERE "x" = ?"#, [.text(Self.hostile)])
            }
            let unprepared = try #require(tracer.finishedSpans.last)
            #expect(unprepared.operationName == "SELECT NoSuchInstrumentedTable")
            #expect(unprepared.status?.code == .error)
            #expect(unprepared.errors.count == 1)
            #expect(!allAttributes(unprepared).contains("secret-4711"))
        }
    }

    @Test(arguments: TestEngine.all)
    func cursorsHaveASpanFromOpenToClose(engine: TestEngine) throws {
        try withInstrumentedDatabase(engine, file: true) { db, _, tracer in
            for name in ["a", "b", "c"] { _ = try InstrumentedGadget.create(["name": name]) }
            tracer.clearFinishedSpans()
            var names: [String] = []
            try InstrumentedGadget.query().forEach { names.append($0.name) }
            #expect(names == ["a", "b", "c"])
            let spans = tracer.finishedSpans.filter { $0.operationName == "SELECT InstrumentedGadget" }
            #expect(spans.count == 1)
        }
    }

    @Test
    func poolGaugesMoveOnPostgreSQL() throws {
        guard TestEngine.all.contains(.postgres) else { return }
        try withInstrumentedDatabase(.postgres) { db, metrics, _ in
            _ = try InstrumentedGadget.create(["name": "a"])
            let open = try gauge(metrics, "activerecord_connections_open", db)
            let inUse = try gauge(metrics, "activerecord_connections_in_use", db)
            #expect(open.lastValue.map { $0 >= 1 } == true)
            // Outside any work, nothing is in use; inside a transaction, its connection is.
            #expect(inUse.lastValue == 0)
            try db.transaction {
                #expect(inUse.lastValue == 1)
                // Another thread's read, while the transaction holds its connection: a second one.
                // (Dispatched asynchronously: `sync` may run the block on this very thread.)
                let count = Mutex<Int?>(nil)
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    count.withLock { $0 = try? db.use { try InstrumentedGadget.count() } }
                    done.signal()
                }
                done.wait()
                #expect(count.withLock { $0 } == 1)
                #expect(inUse.values.contains(2))
                #expect(inUse.lastValue == 1)
            }
            #expect(inUse.lastValue == 0)
            #expect(open.lastValue.map { $0 >= 2 } == true)
            // Each check-out's wait was timed.
            let waits = try #require(timers(metrics, "activerecord_connection_wait_duration", db).first)
            #expect(waits.values.count >= 2)
        }
    }

    @Test(arguments: TestEngine.all)
    func asyncCallsTimeTheirWaitForAThread(engine: TestEngine) async throws {
        let metrics = TestMetrics()
        let test = try withMetricsFactory(metrics) { try engine.makeDatabase(file: true) }
        defer { test.drop() }
        let db = test.database
        #expect(db.isInstrumented)
        _ = try await InstrumentedGadget.count(on: db)
        let before = timers(metrics, "activerecord_connection_wait_duration", db).first?.values.count ?? 0
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<20 { group.addTask { try await InstrumentedGadget.create(["name": "g\(n)"], on: db) } }
            try await group.waitForAll()
        }
        // Each call's time in its lane's queue (and, on PostgreSQL, its pool check-out too).
        let after = try #require(timers(metrics, "activerecord_connection_wait_duration", db).first).values.count
        #expect(after - before >= 20)
    }

    @Test
    func sqliteReportsItsOpenConnections() throws {
        try withInstrumentedDatabase(.sqlite, file: true) { db, metrics, _ in
            _ = try InstrumentedGadget.create(["name": "a"])
            _ = try InstrumentedGadget.all()
            // None when the database decided to report, the writer, then a reader opened for the read.
            let open = try gauge(metrics, "activerecord_connections_open", db)
            #expect(open.values == [0, 1, 2])
        }
    }

    @Test
    func sqliteTimesAWaitForTheWriter() throws {
        try withInstrumentedDatabase(.sqlite, file: true) { db, metrics, _ in
            _ = try InstrumentedGadget.create(["name": "a"])
            // Taken at once: no wait recorded.
            #expect(timers(metrics, "activerecord_connection_wait_duration", db).first?.values.isEmpty != false)
            // This thread holds the writer in a transaction for 100 ms; another thread's save
            // waits for it meanwhile.
            let started = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
            try db.transaction {
                _ = try InstrumentedGadget.create(["name": "b"])
                DispatchQueue.global().async {
                    started.signal()
                    _ = try? db.use { try InstrumentedGadget.create(["name": "c"]) }
                    done.signal()
                }
                started.wait()
                Thread.sleep(forTimeInterval: 0.1)
            }
            done.wait()
            let waits = try #require(timers(metrics, "activerecord_connection_wait_duration", db).first)
            #expect(waits.values.count == 1)
            #expect(waits.values.first.map { $0 > 50_000_000 } == true)
        }
    }

    @Test(arguments: TestEngine.all)
    func nothingBootstrappedRecordsNothing(engine: TestEngine) throws {
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        try withDatabase(engine) { db in
            // Opened with the no-op factory and tracer: not instrumented, its connections hold nothing.
            #expect(!db.isInstrumented)
            #expect(db.instrumentation.instruments == nil)
            try db.withConnection { #expect($0.instruments == nil) }
            let gadget = try InstrumentedGadget.create(["name": Self.hostile])
            // A backend appearing later is not looked for per statement: nothing is recorded.
            try withMetricsFactory(metrics) {
                try withTracer(tracer) {
                    _ = try InstrumentedGadget.find(try #require(gadget.id))
                }
            }
            #expect(metrics.timers.isEmpty && metrics.recorders.isEmpty)
            #expect(tracer.finishedSpans.isEmpty && tracer.activeSpans.isEmpty)

            // Until the database is asked to look again.
            withMetricsFactory(metrics) {
                withTracer(tracer) {
                    db.refreshInstrumentation()
                }
            }
            #expect(db.isInstrumented)
            _ = try InstrumentedGadget.find(try #require(gadget.id))
            #expect(tracer.finishedSpans.count == 1)
            #expect(timers(metrics, "activerecord_query_duration", db, operation: "select").first?.values.count == 1)

            // And back: refreshed with nothing in effect, it stops reporting.
            db.refreshInstrumentation()
            #expect(!db.isInstrumented)
            try db.withConnection { #expect($0.instruments == nil) }
            _ = try InstrumentedGadget.find(try #require(gadget.id))
            #expect(tracer.finishedSpans.count == 1)
        }
    }

    @Test
    func onlyTracingBootstrappedRecordsSpansWithoutMetrics() throws {
        let tracer = InMemoryTracer()
        try withTracer(tracer) {
            try withDatabase(.sqlite) { db in
                #expect(db.isInstrumented)
                _ = try InstrumentedGadget.count()  // the table made first
                tracer.clearFinishedSpans()
                _ = try InstrumentedGadget.count()
                #expect(tracer.finishedSpans.map(\.operationName) == ["SELECT InstrumentedGadget"])
            }
        }
    }

    @Test(arguments: [
        (#"SELECT "t0".* FROM "Post" AS "t0" WHERE "t0"."id" = ? LIMIT 1"#, "SELECT", "Post", "SELECT Post"),
        (#"INSERT INTO "Post" ("title") VALUES (?) RETURNING "id""#, "INSERT", "Post", "INSERT Post"),
        (#"UPDATE "Po""st" SET "from" = ? WHERE "id" = ?"#, "UPDATE", #"Po"st"#, #"UPDATE Po"st"#),
        (#"DELETE FROM "Post" WHERE "id" = ?"#, "DELETE", "Post", "DELETE Post"),
        (#"select 'FROM x', "FROM" from comments"#, "SELECT", "comments", "SELECT comments"),
        ("BEGIN IMMEDIATE", "BEGIN", nil, "BEGIN"),
        ("  (SELECT 1)", "SELECT", nil, "SELECT"),
    ] as [(String, String, String?, String)])
    func statementDescriptions(sql: String, operation: String, table: String?, spanName: String) {
        let description = StatementDescription(sql: sql, system: "sqlite", namespace: nil)
        #expect(description.operationName == operation)
        #expect(description.collection == table)
        #expect(description.spanName == spanName)
    }

    @Test(arguments: TestEngine.all)
    func namespaceIsTheDatabase(engine: TestEngine) throws {
        for file in engine == .sqlite ? [false, true] : [false] {
            try withInstrumentedDatabase(engine, file: file) { db, _, tracer in
                _ = try InstrumentedGadget.count()
                let span = try #require(tracer.finishedSpans.last)
                let expected: String? = switch engine {
                case .sqlite: file ? db.path : nil
                case .postgres: "postgres"
                }
                #expect(attribute(span, "db.namespace") == expected)
            }
        }
        // A URL names its database in its path.
        guard engine == .postgres, let url = ProcessInfo.processInfo.environment["AR_TEST_POSTGRES_URL"] else { return }
        let tracer = InMemoryTracer()
        try withTracer(tracer) {
            let db = try Database(.postgres(url))
            _ = try db.rows("SELECT 1")
        }
        #expect(tracer.finishedSpans.last.flatMap { attribute($0, "db.namespace") } == "postgres")
    }
}
