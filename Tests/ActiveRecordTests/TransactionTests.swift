@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

struct Boom: Error {}

@Suite("Transactions")
struct TransactionTests {
    @Test(arguments: TestEngine.all) func commitsWhenTheBlockReturns(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let outcome = try db.transaction {
                try Item.create(["title": "a"])
                try Item.create(["title": "b"])
            }
            #expect(outcome == .committed)
            #expect(try Item.count() == 2)
        }
    }

    @Test(arguments: TestEngine.all) func rollsBackAndRethrowsWhenTheBlockThrows(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Item.create(["title": "before"])
            #expect(throws: Boom.self) {
                try db.transaction {
                    try Item.create(["title": "lost"])
                    throw Boom()
                }
            }
            #expect(try Item.all().map(\.title) == ["before"])
        }
    }

    @Test(arguments: TestEngine.all) func theRollbackErrorRollsBackSilently(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let outcome = try Database.transaction {
                try Item.create(["title": "lost"])
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            #expect(try Item.count() == 0)
            // A table created inside a rolled-back transaction is created again on next use.
            try Item.create(["title": "kept"])
            #expect(try Item.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func nestedTransactionsAreSavepointsThatRollBackAlone(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.transaction {
                try Item.create(["title": "A"])
                try db.transaction {
                    try Item.create(["title": "B"])
                    throw Rollback()
                }
                try Item.create(["title": "C"])
            }
            #expect(try Item.all().map(\.title) == ["A", "C"])
        }
    }

    /// Thousands of writes in one transaction (the undo log keeps them in chunks of 1,024):
    /// rolling back a savepoint that began mid-chunk and spans chunks restores exactly its
    /// records in memory, and the outer rollback the rest.
    @Test func rollbacksRestoreRecordsAcrossAThousandWrites() throws {
        try withDatabase(.sqlite) { db throws in
            var outer: [Item] = []
            var inner: [Item] = []
            var renamed: [Item] = []
            try db.transaction {
                for number in 0..<1_500 { outer.append(try Item.create(["title": "outer \(number)"])) }
                try db.transaction {
                    for number in 0..<1_100 { inner.append(try Item.create(["title": "inner \(number)"])) }
                    for item in outer.prefix(600) {
                        item.title = "renamed"
                        try item.save()
                        renamed.append(item)
                    }
                    throw Rollback()
                }
                #expect(inner.allSatisfy { $0.id == nil })
                #expect(outer.allSatisfy { $0.id != nil })
                #expect(renamed.allSatisfy { $0.hasChanges && $0.title == "renamed" })
                #expect(try Item.count() == 1_500)
                try db.transaction {
                    for number in 0..<600 { inner.append(try Item.create(["title": "again \(number)"])) }
                }
                #expect(try Item.count() == 2_100)
                throw Rollback()
            }
            #expect(outer.allSatisfy { $0.id == nil } && inner.allSatisfy { $0.id == nil })
            #expect(try Item.count() == 0)
        }
    }

    /// Destroyed records are kept apart from the undo log, in chunks of 1,024 too: a
    /// savepoint that began mid-chunk and spans chunks brings back exactly its records, a
    /// released one's records are the outer level's, and the outer rollback brings back all.
    @Test func rollbacksBringBackDestroyedRecordsAcrossChunks() throws {
        try withDatabase(.sqlite) { db throws in
            let items = try db.withTransaction { try (0..<3_000).map { try Item.create(["title": "item \($0)"]) } }
            let outer = Array(items[0..<1_500]), inner = Array(items[1_500..<2_600]), released = Array(items[2_600...])
            try db.transaction {
                for item in outer { try item.destroy() }
                try db.transaction {
                    for item in inner { try item.destroy() }
                    #expect(inner.allSatisfy { $0.isDestroyed })
                    throw Rollback()
                }
                #expect(outer.allSatisfy { $0.isDestroyed } && !inner.contains { $0.isDestroyed })
                #expect(try Item.count() == 1_500)
                try db.transaction {
                    for item in released { try item.destroy() }
                }
                #expect(released.allSatisfy { $0.isDestroyed && $0.recordState == .destroyed })
                // A record brought back can be destroyed again, and that stays rolled back too.
                try inner[0].destroy()
                #expect(try Item.count() == 1_099)
                throw Rollback()
            }
            #expect(!items.contains { $0.isDestroyed } && items.allSatisfy { $0.recordState == .persisted })
            #expect(try Item.count() == 3_000)
            // Committed destroys stay destroyed.
            try db.transaction { for item in inner { try item.destroy() } }
            #expect(inner.allSatisfy { $0.isDestroyed } && !outer.contains { $0.isDestroyed })
            #expect(try Item.count() == 1_900)
        }
    }

    @Test(arguments: TestEngine.all) func aConstraintFailureInsideRollsEverythingBack(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Account.create(["email": "a@x"])
            expectError(.constraint) {
                try db.transaction {
                    try Account.create(["email": "b@x"])
                    try Account.create(["email": "a@x"])
                }
            }
            #expect(try Account.all().map(\.email) == ["a@x"])
        }
    }
}

/// Issue 31, point 4: same-looking code keeps its meaning whatever it is assigned to.
@Suite("Transactions: the outcome form and the value form")
struct TransactionFormTests {
    /// Before: `var inner: TransactionOutcome?` picked the generic value form, whose Rollback
    /// escaped the savepoint and rolled back the OUTER transaction whole.
    @Test(arguments: TestEngine.all) func aRollbackAssignedToAnOptionalOutcomeRollsBackOnlyTheSavepoint(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            var inner: TransactionOutcome?
            let outer = try db.transaction {
                try Item.create(["title": "outer"])
                inner = try db.transaction {
                    try Item.create(["title": "inner"])
                    throw Rollback()
                }
                try Item.create(["title": "after"])
            }
            #expect(outer == .committed)
            #expect(inner == .rolledBack)
            #expect(try Item.query().order(by: "id").pluck(\.title) == ["outer", "after"])
            // Assigned to a non-optional outcome, or not assigned at all: the same.
            let typed: TransactionOutcome = try db.transaction { try Item.create(["title": "gone"]); throw Rollback() }
            #expect(typed == .rolledBack)
            #expect(try Item.count() == 2)
        }
    }

    @Test(arguments: TestEngine.all) func withTransactionReturnsTheValueAndARollbackGoesOn(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let outcome = try db.transaction {
                let item = try db.withTransaction { try Item.create(["title": "kept"]) }
                #expect(item.id != nil)
                // In a savepoint: the Rollback has no value to give, so it reaches the caller,
                // which catches it here: only the savepoint is undone.
                #expect(throws: Rollback.self) {
                    _ = try db.withTransaction { () throws -> Item in
                        _ = try Item.create(["title": "undone"])
                        throw Rollback()
                    }
                }
            }
            #expect(outcome == .committed)
            #expect(try Item.all().map(\.title) == ["kept"])
            #expect(!db.isInTransaction)
            try db.transaction { #expect(db.isInTransaction) }
        }
    }
}
