@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Dispatch
import Foundation
import Synchronization
import Testing

/// The bank of the lost-update tests (the stress child declares the same classes).
final class BankAccount: Model {
    @Column var balance: Int = 0
}

/// The same, locked optimistically (a `lockVersion` column).
final class VersionedAccount: Model {
    @Column var balance: Int = 0
    @Column var lockVersion: Int = 0
}

/// Optimistic locking on another column name, named by its property.
final class Ticket: Model {
    @Column var seats: Int = 0
    @Column("row_version") var revision: Int = 0
    override class var lockingColumn: String? { "revision" }
}

/// A column named lockVersion with locking turned off.
final class Counter: Model {
    @Column var n: Int = 0
    @Column var lockVersion: Int = 0
    override class var lockingColumn: String? { nil }
}

/// Issue 31, point 2: no lost updates without the user knowing how to prevent them.
@Suite("Locking: optimistic, pessimistic, isolation levels")
struct LockingTests {
    // MARK: The bank

    /// Interleaving: 4 processes each make 40 transfers between 2 of 6 accounts at once, each
    /// transfer one transaction that loads both accounts, changes both balances and saves both
    /// — the read-modify-write that loses updates under READ COMMITTED. With each tool the
    /// total stays 6,000 exactly: every transfer lands once (retried when the engine or the
    /// lock version says so). On SQLite the write transaction already serializes them.
    @Test(arguments: TestEngine.all, ["optimistic", "lock", "reload-lock", "serializable"])
    func theBankConservesItsTotal(engine: TestEngine, tool: String) throws {
        try withDatabaseLocation(engine) { place in
            let database = try Database(place.location)
            try database.use {
                for _ in 0..<6 {
                    if tool == "optimistic" { try VersionedAccount.create(["balance": 1_000]) } else {
                        try BankAccount.create(["balance": 1_000])
                    }
                }
            }
            let start = String(Date().timeIntervalSince1970 + 1.5)
            let results = try runStressChildren((0..<4).map { ["bank", place.argument, tool, "40", String(17 + $0), start] })
            for result in results {
                #expect(result.status == 0, "\(result.output)")
                #expect(result.output.hasPrefix("done 40 retries "), "\(result.output)")
            }
            try database.use {
                let balances = tool == "optimistic"
                    ? try VersionedAccount.all().map(\.balance) : try BankAccount.all().map(\.balance)
                #expect(balances.reduce(0, +) == 6_000, "balances \(balances)")
                #expect(balances != Array(repeating: 1_000, count: 6))  // the transfers ran
                if tool == "optimistic" {
                    // Every saved change bumped the version: two saves per transfer, 160 transfers.
                    #expect(try VersionedAccount.all().map(\.lockVersion).reduce(0, +) == 320)
                }
            }
        }
    }

    // MARK: Optimistic locking

    /// Two connections load the same row; the first save wins, the second finds it stale.
    @Test(arguments: TestEngine.all) func aSecondSaveOfTheSameVersionIsStale(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            let first = try Database(place.location), second = try Database(place.location)
            let id = try first.use { try VersionedAccount.create(["balance": 100]).id! }
            let mine = try first.use { try VersionedAccount.find(id)! }
            let theirs = try second.use { try VersionedAccount.find(id)! }
            #expect(mine.lockVersion == 0 && theirs.lockVersion == 0)

            let recorder = SQLRecorder(first)
            mine.balance = 150
            try first.use { try mine.save() }
            #expect(mine.lockVersion == 1 && !mine.hasChanges)
            #expect(recorder.all.contains { $0.hasPrefix(#"UPDATE "VersionedAccount" SET "balance" = ?, "lockVersion" = ?, "updatedAt" = ? WHERE "id" = ? AND "lockVersion" = ?"#) })

            theirs.balance = 90
            let error = second.use { expectError(.staleRecord) { try theirs.save() } }
            #expect(error?.isRetryable == true)
            #expect(error?.message.contains("VersionedAccount with id \(id) was changed by another transaction") == true)
            // Nothing written, and the record is as it was: still changed, still version 0.
            #expect(try first.use { try VersionedAccount.find(id)!.balance } == 150)
            #expect(theirs.balance == 90 && theirs.lockVersion == 0 && theirs.hasChanges)
            // Destroying the stale record is refused too, and leaves it alive.
            second.use { _ = expectError(.staleRecord) { try theirs.destroy() } }
            #expect(!theirs.isDestroyed)
            // Reloaded, the change applies.
            try second.use {
                try theirs.reload()
                #expect(theirs.balance == 150 && theirs.lockVersion == 1)
                theirs.balance += 5
                try theirs.save()
                #expect(theirs.lockVersion == 2)
                try theirs.destroy()
            }
            // A row deleted elsewhere is still `.notFound`, not stale.
            mine.balance = 1
            first.use { _ = expectError(.notFound) { try mine.save() } }
        }
    }

    /// A rolled-back transaction puts the version back, so the next save is not stale.
    @Test(arguments: TestEngine.all) func aRollbackRestoresTheVersion(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let account = try VersionedAccount.create(["balance": 10])
            try db.transaction {
                account.balance = 20
                try account.save()
                #expect(account.lockVersion == 1)
                throw Rollback()
            }
            #expect(account.lockVersion == 0 && account.balance == 20 && account.hasChanges)
            try account.save()
            #expect(account.lockVersion == 1)
            #expect(try VersionedAccount.find(account.id!)!.balance == 20)
            // A version sent back by a client is the one checked: an old one is stale.
            let edit = try VersionedAccount.find(account.id!)!
            edit.lockVersion = 0
            edit.balance = 99
            _ = expectError(.staleRecord) { try edit.save() }
            #expect(try VersionedAccount.find(account.id!)!.balance == 20)
        }
    }

    @Test(arguments: TestEngine.all) func theLockingColumnCanBeNamedOrTurnedOff(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            #expect(try Ticket.schema().lockingColumn == "row_version")
            #expect(try Counter.schema().lockingColumn == nil)
            #expect(try BankAccount.schema().lockingColumn == nil)
            let ticket = try Ticket.create(["seats": 2])
            let copy = try Ticket.find(ticket.id!)!
            ticket.seats = 3
            try ticket.save()
            #expect(ticket.revision == 1)
            copy.seats = 4
            _ = expectError(.staleRecord) { try copy.save() }
            // Without locking, a column named lockVersion is a plain column: last save wins.
            let counter = try Counter.create(["n": 1])
            let other = try Counter.find(counter.id!)!
            counter.n = 2
            try counter.save()
            other.n = 3
            try other.save()
            #expect(try Counter.find(counter.id!)!.n == 3 && counter.lockVersion == 0)
        }
    }

    @Test func aLockingColumnMustBeANonOptionalInteger() {
        let error = expectError(.invalidModel) {
            _ = try TableSchema(name: "T", columns: [ColumnSchema(name: "lockVersion", type: .text)])
        }
        #expect(error?.message.contains("must be a non-optional integer column") == true)
        _ = expectError(.invalidModel) {
            _ = try TableSchema(name: "T", columns: [ColumnSchema(name: "n", type: .integer)], lockingColumn: "version")
        }
        // A run-time (C) model with an integer lockVersion is locked too.
        let schema = try? TableSchema(name: "T", columns: [ColumnSchema(name: "lockVersion", type: .integer)])
        #expect(schema?.lockingColumn == "lockVersion")
    }

    // MARK: Pessimistic locking

    @Test(arguments: TestEngine.all) func lockAddsForUpdateOnPostgreSQLAndNeedsATransaction(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let account = try BankAccount.create(["balance": 5])
            let misuse = expectError(.misuse) { _ = try BankAccount.query().lock().fetch() }
            #expect(misuse?.message.contains("there is no transaction") == true)
            _ = expectError(.misuse) { try account.reload(lock: true) }
            _ = expectError(.misuse) { try db.transaction { _ = try BankAccount.query().lock().distinct().fetch() } }
            let recorder = SQLRecorder(db)
            try db.transaction {
                #expect(try BankAccount.query().where("balance > %@", 1).lock().fetch().map(\.id) == [account.id])
                #expect(try BankAccount.query().lock(.skipLocked).first()?.id == account.id)
                try account.reload(lock: true)
            }
            let selects = recorder.all.filter { $0.hasPrefix("SELECT") }
            #expect(selects.count == 3)
            if engine == .postgres {
                #expect(selects[0].hasSuffix(#"ORDER BY "BankAccount"."id" ASC FOR UPDATE OF "BankAccount""#))
                #expect(selects[1].hasSuffix(#"LIMIT ? OFFSET ? FOR UPDATE OF "BankAccount" SKIP LOCKED"#))
                #expect(selects[2].hasSuffix(#"WHERE "id" = ? FOR UPDATE OF "BankAccount""#))
            } else {
                // SQLite: BEGIN IMMEDIATE holds the write lock; the SQL is the plain query's.
                #expect(selects.allSatisfy { !$0.contains("FOR UPDATE") })
            }
        }
    }

    /// Interleaving (PostgreSQL): thread A locks a row and waits; meanwhile B's `NOWAIT` lock
    /// fails at once with `.busy`, its `SKIP LOCKED` query skips the row, and its plain lock
    /// waits until A commits, then reads A's committed balance.
    @Test func anotherTransactionWaitsForTheLockedRow() throws {
        guard TestEngine.all.contains(.postgres) else { return }
        try withDatabase(.postgres) { db throws in
            let locked = try BankAccount.create(["balance": 1]).id!, free = try BankAccount.create(["balance": 2]).id!
            let aHoldsTheLock = DispatchSemaphore(value: 0), bTried = DispatchSemaphore(value: 0)
            let seen = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { thread in
                do {
                    try db.use {
                        if thread == 0 {
                            try db.transaction {
                                let row = try BankAccount.query().where("id = %@", locked).lock().first()!
                                aHoldsTheLock.signal()
                                _ = bTried.wait(timeout: .now() + 20)
                                row.balance = 100
                                try row.save()
                                usleep(200_000)
                            }
                        } else {
                            _ = aHoldsTheLock.wait(timeout: .now() + 20)
                            // The failed statement aborts its transaction on PostgreSQL: the error ends it.
                            let error = expectError(.busy) {
                                try db.transaction { _ = try BankAccount.query().where("id = %@", locked).lock(.noWait).first() }
                            }
                            seen.withLock { $0.append("noWait: \(error?.isRetryable == true)") }
                            try db.transaction {
                                let ids = try BankAccount.query().lock(.skipLocked).fetch().map(\.id)
                                seen.withLock { $0.append("skipLocked: \(ids == [free])") }
                            }
                            bTried.signal()
                            try db.transaction {
                                let row = try BankAccount.query().where("id = %@", locked).lock().first()!
                                seen.withLock { $0.append("waited: \(row.balance)") }
                            }
                        }
                    }
                } catch {
                    if thread == 1 { bTried.signal() }
                    seen.withLock { $0.append("thread \(thread): \(error)") }
                }
            }
            #expect(seen.withLock { $0 } == ["noWait: true", "skipLocked: true", "waited: 100"])
        }
    }

    // MARK: Isolation levels

    @Test(arguments: TestEngine.all) func theIsolationLevelIsTheOutermostTransactions(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let recorder = SQLRecorder(db)
            try db.transaction(isolation: .serializable) {
                try BankAccount.create(["balance": 1])
                try db.transaction(isolation: .repeatableRead) { try BankAccount.create(["balance": 2]) }  // weaker: fine
            }
            #expect(recorder.all.first == (engine == .postgres ? "BEGIN ISOLATION LEVEL SERIALIZABLE" : "BEGIN IMMEDIATE"))
            let value = try db.withTransaction(isolation: .repeatableRead) { try BankAccount.count() }
            #expect(value == 2)
            // A savepoint cannot make its transaction stronger: said, not ignored (SQLite's
            // transactions are serializable already, so any level is granted there).
            try db.transaction {
                if engine == .postgres {
                    let error = expectError(.misuse) { try db.transaction(isolation: .serializable) {} }
                    #expect(error?.message.contains("runs at READ COMMITTED") == true)
                } else {
                    try db.transaction(isolation: .serializable) { try BankAccount.create(["balance": 3]) }
                }
            }
            #expect(!db.isInTransaction)
        }
    }

    /// Interleaving (PostgreSQL): two SERIALIZABLE transactions read the same row, then each
    /// writes it; the second to commit fails with a retryable `.transactionConflict`.
    @Test func aSerializableConflictIsRetryable() throws {
        guard TestEngine.all.contains(.postgres) else { return }
        try withDatabase(.postgres) { db throws in
            let id = try BankAccount.create(["balance": 10]).id!
            let bothRead = DispatchSemaphore(value: 0), firstCommitted = DispatchSemaphore(value: 0)
            let outcomes = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { thread in
                do {
                    try db.use {
                        try db.transaction(isolation: .serializable) {
                            let account = try BankAccount.find(id)!
                            if thread == 0 {
                                _ = bothRead.wait(timeout: .now() + 20)
                            } else {
                                bothRead.signal()
                                _ = firstCommitted.wait(timeout: .now() + 20)
                            }
                            account.balance += 1
                            try account.save()
                        }
                        if thread == 0 { firstCommitted.signal() }
                    }
                    outcomes.withLock { $0.append("committed") }
                } catch let error as ActiveRecordError {
                    if thread == 0 { firstCommitted.signal() }
                    outcomes.withLock { $0.append("\(error.code) retryable: \(error.isRetryable)") }
                } catch {
                    outcomes.withLock { $0.append("\(error)") }
                }
            }
            #expect(outcomes.withLock { $0 }.sorted() == ["committed", "transactionConflict retryable: true"])
            #expect(try BankAccount.find(id)!.balance == 11)
        }
    }
}
