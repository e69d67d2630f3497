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
