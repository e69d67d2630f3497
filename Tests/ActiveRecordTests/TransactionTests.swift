import ActiveRecord
import Foundation
import Testing

struct Boom: Error {}

@Suite("Transactions")
struct TransactionTests {
    @Test func commitsWhenTheBlockReturns() throws {
        try withMemoryDatabase { db throws in
            let outcome = try db.transaction {
                try Item.create(["title": "a"])
                try Item.create(["title": "b"])
            }
            #expect(outcome == .committed)
            #expect(try Item.count() == 2)
        }
    }

    @Test func rollsBackAndRethrowsWhenTheBlockThrows() throws {
        try withMemoryDatabase { db throws in
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

    @Test func theRollbackErrorRollsBackSilently() throws {
        try withMemoryDatabase { _ throws in
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

    @Test func nestedTransactionsAreSavepointsThatRollBackAlone() throws {
        try withMemoryDatabase { db throws in
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

    @Test func aConstraintFailureInsideRollsEverythingBack() throws {
        try withMemoryDatabase { db throws in
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
