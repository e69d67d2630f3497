@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Synchronization
import Testing

final class ServedAuthor: Model, Validating {
    @Column var name: String = ""
    @Column var score: Int = 0
    @HasMany(dependency: .destroy) var posts: Query<ServedPost>

    static let validations = Validations(for: ServedAuthor.self) { $0.presence(\.name) }
}

final class ServedPost: Model {
    @Column var title: String = ""
    @Column var score: Int = 0
    @BelongsTo var servedAuthor: ServedAuthor?
}

final class ServedTick: Model {
    @Column var n: Int = 0
    @Column var origin: String = ""
}

/// A SQL query that runs for many seconds unless interrupted, on each engine.
private func longQuery(_ engine: TestEngine) -> String {
    switch engine {
    case .sqlite:
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT count(*) FROM c"
    case .postgres:
        "SELECT pg_sleep(60)"
    }
}

/// Runs `body` with a fresh database of `engine`: SQLite in a temporary file (so that it has
/// reader connections and a reader lane), then drops it.
private func withServedDatabase(_ engine: TestEngine, _ body: (Database) async throws -> Void) async throws {
    let test = try engine.makeDatabase(file: true)
    defer { test.drop() }
    try await body(test.database)
}

/// A gate database threads wait at, so that a test can hold a lane busy.
private final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let entered = Atomic<Int>(0)
    var enteredCount: Int { entered.load(ordering: .acquiring) }
    func pass() {
        entered.add(1, ordering: .releasing)
        semaphore.wait()
    }
    func open(_ count: Int) { for _ in 0..<count { semaphore.signal() } }

    /// Holds every thread of `db`'s write lane at the gate: returns the calls holding them,
    /// once all are there.
    func holdWriteLane(of db: Database, engine: TestEngine) async throws -> [Task<Void, any Error>] {
        let threads = engine == .sqlite ? 1 : db.asyncThreadLimit - 1
        var blockers: [Task<Void, any Error>] = []
        for _ in 0..<threads { blockers.append(Task { try await db.write { self.pass() } }) }
        for _ in 0..<1_000 where enteredCount < threads { try await Task.sleep(for: .milliseconds(10)) }
        return blockers
    }
}

/// A flag and a counter that tasks and database threads share.
private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

private final class TaskCounter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// Waits (up to 10 s) until `condition` holds.
private func eventually(_ condition: () -> Bool) async throws {
    for _ in 0..<1_000 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
}

@Suite("Async calls on the database's own threads")
struct AsyncServingTests {
    @Test("Every operation a handler needs, awaited, with records usable by the caller", arguments: TestEngine.all)
    func everyOperationFromAsyncCode(engine: TestEngine) async throws {
        try await withServedDatabase(engine) { db in
            let ada = try await ServedAuthor.create(["name": "Ada", "score": 3], on: db)
            let adaID = try #require(ada.id)
            ada.score = 5
            try await ada.save(on: db)                      // an update of the record sent and back
            let grace = ServedAuthor()
            grace.name = "Grace"
            try await grace.save(on: db)

            // Validation failures come back on the record, keyed.
            let nameless = ServedAuthor()
            await #expect(throws: ActiveRecordError.self) { try await nameless.save(on: db) }
            #expect(nameless.errors(for: "name").map(\.message) == ["can't be blank"])

            // A transaction that returns records.
            let posts = try await db.write { () throws -> [ServedPost] in
                try (1...3).map { n in
                    let post = ServedPost()
                    post.title = "post \(n)"
                    post.score = n * 10
                    post.servedAuthor = try ServedAuthor.find(adaID)
                    try post.save()
                    return post
                }
            }
            #expect(posts.map(\.title) == ["post 1", "post 2", "post 3"])

            let found = try #require(try await ServedAuthor.find(adaID, on: db))
            #expect(found.name == "Ada" && found.score == 5)
            #expect(try await ServedAuthor.find(999_999, on: db) == nil)
            #expect(try await ServedAuthor.count(on: db) == 2)
            #expect(try await ServedAuthor.exists(id: grace.id!, on: db))

            // Queries: fetch with eager loading, first, count, pluck, aggregates.
            let authors = try await ServedAuthor.query().order(by: "name").includes(\.posts).fetch(on: db)
            #expect(authors.map(\.name) == ["Ada", "Grace"])
            #expect(try authors[0].posts.fetch().map(\.title) == ["post 1", "post 2", "post 3"])
            #expect(try await ServedPost.query().where("score > %@", 15).count(on: db) == 2)
            #expect(try await ServedPost.query().order(by: "score", ascending: false).first(on: db)?.title == "post 3")
            #expect(try await ServedPost.query().order(by: "id").pluck(\.title, \.score, on: db).map(\.1) == [10, 20, 30])
            #expect(try await ServedPost.query().sum("score", on: db) == 60)
            #expect(try await ServedPost.query().max("score", as: Int.self, on: db) == 30)
            #expect(try await ServedPost.query().exists(on: db))

            // Batch writes.
            let batch = (1...4).map { n -> ServedTick in
                let tick = ServedTick()
                tick.n = n
                tick.origin = "batch"
                return tick
            }
            try await ServedTick.insertAll(batch, on: db)
            #expect(batch.allSatisfy { $0.id != nil })
            #expect(try await ServedTick.query().where("n > %@", 2).updateAll(["origin": "late"], on: db) == 2)
            #expect(try await ServedTick.query().where("origin = %@", "late").deleteAll(on: db) == 2)
            #expect(try await ServedTick.delete(id: batch[0].id!, on: db))
            #expect(try await ServedTick.count(on: db) == 1)

            // A cursor as an AsyncSequence, in pages smaller than the result.
            var titles: [String] = []
            for try await post in ServedPost.query().order(by: "id").records(on: db, pageSize: 2) { titles.append(post.title) }
            #expect(titles == ["post 1", "post 2", "post 3"])

            // A read block: one snapshot, records handed back.
            let (names, total) = try await db.read { (try ServedAuthor.query().order(by: "name").fetch().map(\.name), try ServedPost.count()) }
            #expect(names == ["Ada", "Grace"] && total == 3)

            // Reload and destroy (dependent posts go with the author).
            try await db.write { try ServedAuthor.query().where("id = %@", adaID).updateAll(["score": 9]) }
            try await ada.reload(on: db)
            #expect(ada.score == 9)
            try await ada.destroy(on: db)
            #expect(try await ServedPost.count(on: db) == 0)
            #expect(try await ServedAuthor.destroyAll(on: db) == 1)
        }
    }

    @Test("Observation delivers to async code the commits of awaited writes", arguments: TestEngine.all)
    func observationFromAsyncCode(engine: TestEngine) async throws {
        try await withServedDatabase(engine) { db in
            _ = try await ServedTick.count(on: db)
            let changes = db.use { db.observe(ServedTick.query().order(by: "n")) }
            var iterator = changes.makeAsyncIterator()
            #expect(try await iterator.next()?.count == 0)
            try await ServedTick.create(["n": 1, "origin": "observed"], on: db)
            #expect(try await iterator.next()?.map(\.n) == [1])
        }
    }

    @Test("Calls wait in the order they came while every thread is busy", arguments: TestEngine.all)
    func callsAreServedInOrder(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        // One thread for the lane, so that the calls also run one after another (on
        // PostgreSQL, a handle on the test's schema with a pool of one).
        let served = try test.schema.map { try Database(.postgres(TestEngine.connection(schema: $0), maximumConnections: 1)) }
        do {
            let db = served ?? test.database
            _ = try await ServedTick.count(on: db)
            let gate = Gate()
            // Every thread of the write lane held at the gate.
            let blockers = try await gate.holdWriteLane(of: db, engine: engine)
            #expect(db.asyncWaitingCount(.writes) == 0)
            let order = Mutex<[Int]>([])
            var waiting: [Task<Void, any Error>] = []
            for n in 0..<20 {
                waiting.append(Task { try await db.write { order.withLock { $0.append(n) } } })
                try await eventually { db.asyncWaitingCount(.writes) == n + 1 }
                #expect(db.asyncWaitingCount(.writes) == n + 1)
            }
            gate.open(blockers.count)
            for task in blockers + waiting { try await task.value }
            #expect(order.withLock { $0 } == Array(0..<20))
        }
    }

    @Test("Cancelling a running query interrupts it in the engine; the connection stays usable", arguments: TestEngine.all)
    func cancellingARunningQueryInterruptsIt(engine: TestEngine) async throws {
        try await withServedDatabase(engine) { db in
            try await ServedTick.create(["n": 1], on: db)
            let sql = longQuery(engine)
            let started = Flag()
            let task = Task {
                try await db.read {
                    started.set()
                    return try db.rows(sql).count
                }
            }
            try await eventually { started.isSet }
            try await Task.sleep(for: .milliseconds(100))
            let cancelled = ContinuousClock.now
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            let latency = ContinuousClock.now - cancelled
            // The query runs for a minute or more uninterrupted: this shows the interrupt, not a latency figure
            // (measured in Benchmarks/README.md).
            #expect(latency < .seconds(5))
            // The connections go on: a read and a write.
            #expect(try await ServedTick.count(on: db) == 1)
            try await ServedTick.create(["n": 2], on: db)
            #expect(try await db.read { try db.rows("SELECT 1").count } == 1)
        }
    }

    @Test("A cancelled transaction rolls back, whether cancelled in a statement or between two", arguments: TestEngine.all)
    func aCancelledTransactionRollsBack(engine: TestEngine) async throws {
        try await withServedDatabase(engine) { db in
            _ = try await ServedTick.count(on: db)
            let sql = longQuery(engine)
            let inStatement = Flag()
            let first = Task {
                try await db.write {
                    try ServedTick.create(["n": 1, "origin": "in a statement"])
                    inStatement.set()
                    _ = try db.rows(sql)
                }
            }
            try await eventually { inStatement.isSet }
            try await Task.sleep(for: .milliseconds(50))
            first.cancel()
            await #expect(throws: CancellationError.self) { try await first.value }

            // Many short statements: the cancellation is seen at the next one.
            let saved = TaskCounter()
            let second = Task {
                try await db.write {
                    for n in 0..<100_000 {
                        try ServedTick.create(["n": n, "origin": "between statements"])
                        saved.increment()
                        usleep(200)
                    }
                }
            }
            try await eventually { saved.count > 20 }
            second.cancel()
            await #expect(throws: CancellationError.self) { try await second.value }
            let savedCount = saved.count
            #expect(savedCount < 100_000)

            #expect(try await ServedTick.count(on: db) == 0)
            try await ServedTick.create(["n": 7, "origin": "after"], on: db)
            #expect(try await ServedTick.query().pluck("origin", as: String.self, on: db) == ["after"])
        }
    }

    @Test("A task cancelled while it waits leaves the queue at once; its work never runs", arguments: TestEngine.all)
    func aCallCancelledWhileWaitingLeavesTheQueue(engine: TestEngine) async throws {
        try await withServedDatabase(engine) { db in
            _ = try await ServedTick.count(on: db)
            let gate = Gate()
            let blockers = try await gate.holdWriteLane(of: db, engine: engine)
            let ran = Flag()
            let waiting = Task { try await db.write { ran.set() } }
            try await eventually { db.asyncWaitingCount(.writes) == 1 }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            gate.open(blockers.count)
            for task in blockers { try await task.value }
            try await ServedTick.create(["n": 1], on: db)
            let didRun = ran.isSet
            #expect(!didRun)
            #expect(db.asyncWaitingCount(.writes) == 0)
        }
    }

    @Test("A call's timeout stops it with .timeout; the connection-wait timeout fails a call that waited, with .busy", arguments: TestEngine.all)
    func deadlines(engine: TestEngine) async throws {
        try await withServedDatabase(engine) { db in
            try await ServedTick.create(["n": 1], on: db)
            let sql = longQuery(engine)
            let timeout = await #expect(throws: ActiveRecordError.self) {
                try await db.read(timeout: .milliseconds(200)) { try db.rows(sql).count }
            }
            #expect(timeout?.code == .timeout)
            #expect(timeout?.message.contains("timeout of 200 ms") == true)
            #expect(try await ServedTick.count(on: db) == 1)

            db.connectionWaitTimeout = .milliseconds(100)
            let gate = Gate()
            let blockers = try await gate.holdWriteLane(of: db, engine: engine)
            let ran = Flag()
            let busy = await #expect(throws: ActiveRecordError.self) {
                try await db.write { ran.set() }
            }
            #expect(busy?.code == .busy)
            #expect(busy?.message.contains("waited 100 ms") == true)
            gate.open(blockers.count)
            for task in blockers { try await task.value }
            let didRun = ran.isSet
            #expect(!didRun)
            db.connectionWaitTimeout = .seconds(30)
            try await ServedTick.create(["n": 2], on: db)
            #expect(try await ServedTick.count(on: db) == 2)
        }
    }

    @Test("10,000 concurrent tasks of finds and saves: all complete, threads stay within the bound", arguments: TestEngine.all)
    func tenThousandTasksStayWithinTheThreadBound(engine: TestEngine) throws {
        // In a child process: the test process's other tests make threads of their own.
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let path: String
        switch engine {
        case .sqlite: path = test.database.path
        case .postgres: path = "postgres:" + TestEngine.connection(schema: test.schema!)
        }
        let result = try runStressChildren([["async-load", path, "10000"]])[0]
        #expect(result.status == 0, "\(result.output)")
        let fields = result.output.split(separator: " ").map(String.init)
        func value(_ name: String) -> Int { fields.firstIndex(of: name).flatMap { Int(fields[$0 + 1].trimmingCharacters(in: .whitespacesAndNewlines)) } ?? -1 }
        #expect(value("completed") == 10_000, "\(result.output)")
        #expect(value("failed") == 0, "\(result.output)")
        #expect(value("saved") == 10_000, "\(result.output)")
        // The library's threads (the bound) and a small constant for the runtime's own.
        #expect(value("peak") <= value("baseline") + value("bound") + 2, "\(result.output)")
        #expect(value("bound") == (engine == .sqlite ? 1 + 4 + 1 : 10 + 1))
    }

    @Test("Two databases in one server never mix, under concurrency", arguments: TestEngine.all)
    func twoDatabasesNeverMix(engine: TestEngine) async throws {
        let cache = try Database(.temporary)
        try await withServedDatabase(engine) { main in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<200 {
                    group.addTask {
                        try await ServedTick.create(["n": n, "origin": "main"], on: main)
                        try await ServedTick.create(["n": n, "origin": "cache"], on: cache)
                        // The task-local form: `use` binds the database for the task's synchronous calls too.
                        try await cache.use { try await cache.write { try ServedTick.create(["n": n, "origin": "cache"]) } }
                        try await main.write { try ServedTick.create(["n": n, "origin": "main"]) }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await ServedTick.query().where("origin = %@", "main").count(on: main) == 400)
            #expect(try await ServedTick.query().where("origin <> %@", "main").count(on: main) == 0)
            #expect(try await ServedTick.query().where("origin = %@", "cache").count(on: cache) == 400)
            #expect(try await ServedTick.query().where("origin <> %@", "cache").count(on: cache) == 0)
        }
    }
}

/// Records handed back to a main-actor caller (a UI, a main-actor handler) are usable there.
@MainActor
@Test("Awaited calls from the main actor hand their records back to it", arguments: TestEngine.all)
func awaitedCallsFromTheMainActor(engine: TestEngine) async throws {
    let test = try engine.makeDatabase(file: true)
    defer { test.drop() }
    let db = test.database
    let created = try await ServedAuthor.create(["name": "Main"], on: db)
    let id = try #require(created.id)
    let found = try #require(try await ServedAuthor.find(id, on: db))
    found.score = 4
    try await found.save(on: db)
    let all = try await ServedAuthor.query().where("score = %@", 4).fetch(on: db)
    #expect(all.map(\.name) == ["Main"])
    var names: [String] = []
    for try await author in ServedAuthor.query().records(on: db) { names.append(author.name) }
    #expect(names == ["Main"])
    try await found.destroy(on: db)
    #expect(try await ServedAuthor.count(on: db) == 0)
}
