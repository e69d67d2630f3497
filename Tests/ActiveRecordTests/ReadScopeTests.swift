@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// `db.read { }`: one connection and one snapshot for a block of reads.
@Suite("Read scopes")
struct ReadScopeTests {
    @Test(arguments: TestEngine.all) func aBlockReadsOneSnapshot(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { db throws in
            try seedPeople()
            let (before, during, inside) = try db.read {
                let before = try Person.count()
                // Another thread commits a new person while the block runs.
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    _ = try? db.use { try Person.create(["name": "Otto", "age": 70]) }
                    done.signal()
                }
                done.wait()
                // This thread's own write runs as it would outside the block.
                let own = try Person.create(["name": "Pia", "age": 71])
                return (before, try Person.count(), try Person.find(own.id!)?.name)
            }
            #expect(before == 6)
            #expect(during == 6)  // neither write is in the block's snapshot
            #expect(inside == nil)
            #expect(try Person.count() == 8)  // both committed
            #expect(try Person.query().where("age >= %@", 70).order(by: "age").fetch().map(\.name) == ["Otto", "Pia"])
        }
    }

    @Test(arguments: TestEngine.all) func findsInABlockReturnWhatFindsOutsideReturn(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { db throws in
            try seedPeople()
            let outside = try (1...7).map { try Person.find(Int64($0))?.name }
            let inside = try db.read { try (1...7).map { try Person.find(Int64($0))?.name } }
            #expect(inside == outside)
            #expect(inside == ["Alex", "Алексей", "John", "Maria", "Zoe", "alex", nil])
            // Nested, and inside a transaction: the block simply runs.
            #expect(try db.read { try db.read { try Person.count() } } == 6)
            try db.transaction {
                _ = try Person.create(["name": "Quinn", "age": 9])
                #expect(try db.read { try Person.count() } == 7)  // the transaction's own write
            }
        }
    }

    @Test(arguments: TestEngine.all) func anErrorEndsTheBlockAndItsSnapshot(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { db throws in
            try seedPeople()
            struct Stop: Error {}
            #expect(throws: Stop.self) {
                try db.read {
                    _ = try Person.count()
                    throw Stop()
                }
            }
            _ = try Person.create(["name": "Rae", "age": 3])
            #expect(try db.read { try Person.count() } == 7)
        }
    }

    @Test func aDatabaseWithoutReadersHoldsItsConnectionForTheBlock() throws {
        try withMemoryDatabase { db throws in
            try seedPeople()
            let counts = try db.read {
                let first = try Person.count()
                _ = try Person.create(["name": "Sam", "age": 4])
                return (first, try Person.count())
            }
            #expect(counts == (6, 7))  // one connection: the block sees its own write
        }
    }

    @Test func blocksOnTwoDatabasesEachReadTheirOwn() throws {
        try withDatabase(.sqlite, file: true) { first throws in
            try seedPeople()
            try withDatabase(.sqlite, file: true) { second throws in
                _ = try Person.create(["name": "Solo", "age": 9])
                let names = try first.read {
                    try first.use {
                        let outer = try Person.find(1)?.name
                        // Inside the inner block (`second` current), each database reads
                        // through its own block.
                        let inner = try second.read {
                            [try Person.find(1)?.name, try first.use { try Person.find(1)?.name }]
                        }
                        // Once the inner block ends, the outer one reads its own database again.
                        return [outer] + inner + [try Person.find(1)?.name, try second.use { try Person.find(1)?.name }]
                    }
                }
                #expect(names == ["Alex", "Solo", "Alex", "Alex", "Solo"])
                #expect(try first.use { try Person.count() } == 6)
                #expect(try Person.count() == 1)
            }
        }
    }

    @Test func threadsEachReadInTheirOwnBlock() throws {
        try withDatabase(.sqlite, file: true) { db throws in
            try seedPeople()
            let collected = Collected()
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                let found = (try? db.read {
                    try (1...6).compactMap { try Person.find(Int64(($0 + thread) % 6 + 1))?.name }
                }) ?? []
                collected.add(found.sorted())
            }
            let all = ["Alex", "Алексей", "John", "Maria", "Zoe", "alex"].sorted()
            #expect(collected.lists == Array(repeating: all, count: 4))
        }
    }
}

/// What threads found, gathered under a lock.
private final class Collected: @unchecked Sendable {
    // @unchecked Sendable: `found` is only reached holding `lock`.
    private let lock = NSLock()
    private var found: [[String]] = []
    func add(_ names: [String]) { lock.withLock { found.append(names) } }
    var lists: [[String]] { lock.withLock { found } }
}
