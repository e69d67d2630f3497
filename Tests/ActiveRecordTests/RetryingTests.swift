@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Synchronization
import Testing

final class RetriedTransfer: Model {
    @Column var account: String = ""
    @Column var amount: Int = 0
}

/// A retryable failure of the work itself, as a lost conflict makes it.
private let conflict = ActiveRecordError(.transactionConflict, "lost a conflict (thrown by the test)")

@Suite struct RetryingTests {
    @Test(arguments: TestEngine.all)
    func retriesTheWholeTransactionOnARetryableError(engine: TestEngine) throws {
        try withDatabase(engine) { (db: Database) throws -> Void in
            var runs = 0
            let id = try db.retrying(attempts: 5) { () throws -> Int64 in
                runs += 1
                let transfer = try RetriedTransfer.create(["account": "a", "amount": runs])
                if runs < 3 { throw conflict }
                return transfer.id!
            }
            #expect(runs == 3)
            // The failed attempts were rolled back whole: one row, the third attempt's.
            let rows = try RetriedTransfer.all()
            #expect(rows.map(\.amount) == [3])
            #expect(rows.first?.id == id)
        }
    }

    @Test(arguments: TestEngine.all)
    func doesNotRetryOtherErrors(engine: TestEngine) throws {
        try withDatabase(engine) { (db: Database) throws -> Void in
            var runs = 0
            let failure = expectError(.validationFailed) {
                try db.retrying { () throws -> Void in
                    runs += 1
                    try RetriedTransfer.create(["account": "b", "amount": 1])
                    throw ActiveRecordError.validationFailed("RetriedTransfer", [])
                }
            }
            #expect(failure?.code == .validationFailed)
            #expect(runs == 1)
            #expect(try RetriedTransfer.count() == 0)
            // A Swift error of the program's own is not retried either.
            struct Mine: Error {}
            #expect(throws: Mine.self) { try db.retrying { () throws -> Void in runs += 1; throw Mine() } }
            #expect(runs == 2)
        }
    }

    @Test(arguments: TestEngine.all)
    func givesUpAfterItsAttempts(engine: TestEngine) throws {
        try withDatabase(engine) { (db: Database) throws -> Void in
            var runs = 0
            let started = ContinuousClock.now
            let failure = expectError(.transactionConflict) {
                try db.retrying(attempts: 3) { () throws -> Void in
                    runs += 1
                    try RetriedTransfer.create(["account": "c", "amount": runs])
                    throw conflict
                }
            }
            #expect(failure?.isRetryable == true)
            #expect(runs == 3)
            #expect(try RetriedTransfer.count() == 0)
            // Two backoffs: at least 25 + 50 ms (half of 50 ms and of 100 ms, the jitter's floor).
            #expect(ContinuousClock.now - started >= .milliseconds(75))
        }
    }

    @Test(arguments: TestEngine.all)
    func refusesToRunInsideATransactionOrWithoutAttempts(engine: TestEngine) throws {
        try withDatabase(engine) { (db: Database) throws -> Void in
            try db.transaction {
                let failure = expectError(.misuse) { try db.retrying { () throws -> Void in try RetriedTransfer.create(["account": "d"]) } }
                #expect(failure?.message.contains("outside any transaction") == true)
            }
            _ = expectError(.misuse) { try db.retrying(attempts: 0) {} }
            #expect(try RetriedTransfer.count() == 0)
        }
    }

    /// A COMMIT whose acknowledgement was lost after the server committed: the next attempt
    /// finds the token, and the body does not run again (PostgreSQL: exactly once).
    @Test(arguments: TestEngine.all)
    func aLostCommitThatCommittedIsNotAppliedTwice(engine: TestEngine) throws {
        try withDatabase(engine) { (db: Database) throws -> Void in
            var runs = 0
            db.loseCommits(1, committed: true)
            switch engine {
            case .postgres:
                let amount = try db.retrying { () throws -> Int in
                    runs += 1
                    try RetriedTransfer.create(["account": "e", "amount": 10 * runs])
                    return 10 * runs
                }
                #expect(runs == 1)
                #expect(amount == 10)
                #expect(try RetriedTransfer.all().map(\.amount) == [10])
                let tokens = try db.rows(#"SELECT count(*) FROM "activerecord_commits""#)
                #expect(tokens.first?.first == .integer(1))
                // The library's table is its own: clear() keeps it, as it keeps the migrations'.
                try db.clear()
                #expect(try db.rows(#"SELECT count(*) FROM "activerecord_commits""#).first?.first == .integer(1))
            case .sqlite:
                // An embedded engine's COMMIT cannot be lost in flight: no token, and the error
                // (made up here) is not retried.
                _ = expectError(.commitOutcomeUnknown) {
                    try db.retrying { () throws -> Void in runs += 1; try RetriedTransfer.create(["account": "e", "amount": 10]) }
                }
                #expect(runs == 1)
                #expect(try !db.tableNames().contains("activerecord_commits"))
            }
        }
    }

    /// A COMMIT lost before the server committed: the next attempt's token is new, and the
    /// body runs again, once more.
    @Test(arguments: TestEngine.all.filter { $0 == .postgres })
    func aLostCommitThatDidNotCommitRunsAgain(engine: TestEngine) throws {
        try withDatabase(engine) { (db: Database) throws -> Void in
            var runs = 0
            db.loseCommits(2, committed: false)
            let amount = try db.retrying { () throws -> Int in
                runs += 1
                try RetriedTransfer.create(["account": "f", "amount": runs])
                return runs
            }
            #expect(runs == 3)
            #expect(amount == 3)
            #expect(try RetriedTransfer.all().map(\.amount) == [3])
        }
    }

    /// A real lost connection: the first attempt's server process is terminated under it
    /// (SQLSTATE 57P01, then the connection is gone): retryable, and the pool opens a new one.
    @Test(arguments: TestEngine.all.filter { $0 == .postgres })
    func aTerminatedConnectionIsRetryable(engine: TestEngine) throws {
        try withDatabase(engine) { (db: Database) throws -> Void in
            try RetriedTransfer.create(["account": "warm-up"])
            var runs = 0
            var pids: [DatabaseValue] = []
            let saved = try db.retrying { () throws -> Int in
                runs += 1
                try RetriedTransfer.create(["account": "g", "amount": runs])
                pids.append(try db.rows("SELECT pg_backend_pid()")[0][0])
                if runs == 1 { try PostgresAdmin.database.execute("SELECT pg_terminate_backend(?)", [pids[0]]) }
                return runs
            }
            #expect(saved == 2)
            #expect(runs == 2)
            #expect(pids.count == 2 && pids[0] != pids[1])
            #expect(try RetriedTransfer.query().where("account = %@", "g").fetch().map(\.amount) == [2])
            // Without retrying, the same failure is a transient error.
            let failure = expectError(.cannotOpen) {
                try db.transaction {
                    let pid = try db.rows("SELECT pg_backend_pid()")[0][0]
                    try PostgresAdmin.database.execute("SELECT pg_terminate_backend(?)", [pid])
                    try RetriedTransfer.create(["account": "h"])
                }
            }
            #expect(failure?.isTransient == true)
            #expect(failure?.isRetryable == true)
        }
    }

    @Test(arguments: TestEngine.all)
    func retriesFromAsyncCode(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let runs = Atomic<Int>(0)
        let id = try await db.retrying(attempts: 4) { () throws -> Int64 in
            let run = runs.add(1, ordering: .relaxed).newValue
            let transfer = try RetriedTransfer.create(["account": "i", "amount": run])
            if run < 2 { throw conflict }
            return transfer.id!
        }
        #expect(runs.load(ordering: .relaxed) == 2)
        let found = try await RetriedTransfer.find(id, on: db)
        #expect(found?.amount == 2)
        #expect(try await RetriedTransfer.count(on: db) == 1)
        // Cancelled while backing off: it stops at once, with nothing written.
        let task = Task {
            try await db.retrying(attempts: 50) { () throws -> Void in
                try RetriedTransfer.create(["account": "j"])
                throw conflict
            }
        }
        try await Task.sleep(for: .milliseconds(150))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(try await RetriedTransfer.query().where("account = %@", "j").count(on: db) == 0)
    }
}
