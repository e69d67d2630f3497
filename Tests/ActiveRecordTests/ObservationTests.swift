@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// What an observation delivered, in order, for a test to wait on.
private final class Deliveries: Sendable {
    private let values = Mutex<[[String]]>([])
    private let errors = Mutex<[String]>([])

    func record(_ result: Result<[Person], any Error>) {
        switch result {
        case .success(let people): values.withLock { $0.append(people.map(\.name)) }
        case .failure(let error): errors.withLock { $0.append("\(error)") }
        }
    }

    var all: [[String]] { values.withLock { $0 } }
    var failures: [String] { errors.withLock { $0 } }

    /// Waits (up to 10 s) until `condition` holds for the deliveries.
    @discardableResult
    func wait(_ condition: ([[String]]) -> Bool) -> Bool {
        for _ in 0..<1_000 {
            if condition(all) { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition(all)
    }

    /// Lets an observation that is not expected to deliver have the time to do it wrongly.
    func settle() { Thread.sleep(forTimeInterval: 0.3) }
}

/// Logs its transaction outcome callbacks.
final class Receipt: Model, Callbacks {
    @Column var total: Int = 0
    static let log = Mutex<[String]>([])
    func afterCommit() { Receipt.log.withLock { $0.append("commit \(total)") } }
    func afterRollback() { Receipt.log.withLock { $0.append("rollback \(total)") } }
}

@Suite("Observation: results again after each committed change; afterCommit and afterRollback")
struct ObservationTests {
    @Test(arguments: TestEngine.all) func anObservedQueryIsDeliveredNowAndAfterEachCommit(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let deliveries = Deliveries()
            let observation = db.observe(Person.query().where("age > %@", 30).order(by: "name")) { deliveries.record($0) }
            #expect(deliveries.wait { $0 == [["Alex", "John", "alex"]] })
            // An autocommit write: delivered.
            try Person.create(["name": "Bob", "age": 60])
            #expect(deliveries.wait { $0.last == ["Alex", "Bob", "John", "alex"] })
            // A transaction: delivered once it commits, with all of it.
            let before = deliveries.all.count
            try db.transaction {
                try Person.create(["name": "Cy", "age": 70])
                try Person.create(["name": "Di", "age": 71])
                deliveries.settle()
                #expect(deliveries.all.count == before)   // nothing before the commit
            }
            #expect(deliveries.wait { $0.last == ["Alex", "Bob", "Cy", "Di", "John", "alex"] })
            #expect(!deliveries.all.contains(["Alex", "Bob", "Cy", "John", "alex"]))  // never half of it
            // A rolled-back transaction, a write to another table: nothing.
            let settled = deliveries.all.count
            try db.transaction {
                try Person.create(["name": "Ghost", "age": 99])
                throw Rollback()
            }
            try Favorite.create(["title": "elsewhere"])
            deliveries.settle()
            #expect(deliveries.all.count == settled)
            // Batch writes count too.
            try Person.query().where("name = %@", "Bob").deleteAll()
            #expect(deliveries.wait { $0.last == ["Alex", "Cy", "Di", "John", "alex"] })
            // Cancelled: nothing more.
            observation.cancel()
            #expect(observation.isCancelled)
            let final = deliveries.all.count
            try Person.create(["name": "Ed", "age": 80])
            deliveries.settle()
            #expect(deliveries.all.count == final)
            #expect(deliveries.failures.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func manyCommitsAtOnceAreCoalesced(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let deliveries = Deliveries()
            let observation = db.observe(tables: ["Person"], fetch: { try Person.query().order(by: "id").fetch() }) { result in
                deliveries.record(result)
                Thread.sleep(forTimeInterval: 0.05)  // a slow consumer
            }
            #expect(deliveries.wait { $0.count == 1 })
            for n in 1...40 { try Person.create(["name": "p\(n)", "age": n]) }
            #expect(deliveries.wait { $0.last?.count == 40 })
            deliveries.settle()
            #expect(deliveries.all.count < 20)          // 40 commits, far fewer fetches
            #expect(deliveries.all.last?.count == 40)   // and the last one saw them all
            _ = observation
        }
    }

    @Test(arguments: TestEngine.all) func releasingTheObservationStopsIt(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let deliveries = Deliveries()
            var observation: DatabaseObservation? = db.observe(Person.query()) { deliveries.record($0) }
            #expect(deliveries.wait { $0.count == 1 })
            #expect(observation?.isCancelled == false)
            observation = nil
            try Person.create(["name": "After", "age": 1])
            deliveries.settle()
            #expect(deliveries.all == [[]])
            // Raw SQL counts as changing every table.
            let raw = Deliveries()
            let watching = db.observe(Person.query()) { raw.record($0) }
            #expect(raw.wait { $0.count == 1 })
            try db.execute(#"UPDATE "Person" SET "name" = 'Renamed'"#)
            #expect(raw.wait { $0.last == ["Renamed"] })
            watching.cancel()
        }
    }

    @Test(arguments: TestEngine.all) func anAsyncSequenceOfResults(engine: TestEngine) async throws {
        let test = try engine.makeDatabase()
        defer { test.drop() }
        let db = test.database
        try db.use { try seedPeople() }
        var seen: [[String]] = []
        for try await people in db.observe(Person.query().where("age < %@", 20)) {
            seen.append(people.map(\.name))
            if seen.count == 1 { try await db.write { _ = try Person.create(["name": "Kid", "age": 5]) } }
            if seen.count == 2 { break }  // leaving the loop stops the observation
        }
        #expect(seen == [["Zoe"], ["Zoe", "Kid"]])
    }

    @Test(.serialized, arguments: TestEngine.all) func afterCommitAndAfterRollbackRunWhenTheTransactionEnds(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            Receipt.log.withLock { $0 = [] }
            let first = try Receipt.create(["total": 1])           // its own transaction: committed at once
            #expect(Receipt.log.withLock { $0 } == ["commit 1"])
            try db.transaction {
                first.total = 2
                try first.save()
                try first.save()                                    // twice: one callback
                try Receipt.create(["total": 3])
                #expect(Receipt.log.withLock { $0 }.count == 1)     // nothing until the outer commit
                _ = try? db.transaction {
                    try Receipt.create(["total": 4])
                    throw Rollback()                                // the savepoint's record rolls back
                }
                #expect(Receipt.log.withLock { $0 } == ["commit 1", "rollback 4"])
            }
            #expect(Receipt.log.withLock { $0 } == ["commit 1", "rollback 4", "commit 2", "commit 3"])
            try db.transaction {
                try first.destroy()
                throw Rollback()
            }
            #expect(Receipt.log.withLock { $0 }.last == "rollback 2")
            #expect(!first.isDestroyed)
        }
    }
}
