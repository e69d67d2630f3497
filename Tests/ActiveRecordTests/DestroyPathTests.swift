@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A model without callbacks or relations: its destroy goes straight to the table.
final class DestroyPathPlain: Model {
    @Column var title: String = ""
}

/// A model with destroy callbacks, which log what they saw.
final class DestroyPathNoted: Model, Callbacks {
    @Column var title: String = ""
    var log: [String] = []
    var failIn: String?

    private func note(_ name: String) throws {
        log.append("\(name):\(isDestroyed)")
        if failIn == name { throw CallbackAbort("\(name) refused") }
    }

    func beforeDestroy() throws { try note("beforeDestroy") }
    func afterDestroy() throws { try note("afterDestroy") }
}

/// Issue 35, point 5: the destroy of a loaded record inside a transaction (the benchmark's
/// "destroy loaded records (1 tx)"), made cheaper, keeps every behaviour: the plain path,
/// callbacks, dependencies, rollback of the row and of the record's state, and the errors
/// for a new, an already destroyed and a vanished record.
@Suite("Destroy path")
struct DestroyPathTests {
    @Test(arguments: TestEngine.all) func destroyingPlainRecordsInATransactionDeletesEachRowAndMarksEachRecord(
        engine: TestEngine
    ) throws {
        try withDatabase(engine) { db throws in
            for title in ["a", "b", "c"] { try DestroyPathPlain.create(["title": title]) }
            let records = try DestroyPathPlain.all()
            #expect(records.count == 3)
            #expect(try db.transaction { for record in records { try record.destroy() } } == .committed)
            let destroyed = records.filter(\.isDestroyed).count
            let withIDs = records.filter { $0.id != nil }.count  // the id stays
            #expect(destroyed == 3 && withIDs == 3)
            #expect(try DestroyPathPlain.count() == 0)
            // Outside a transaction too.
            let lone = try DestroyPathPlain.create(["title": "lone"])
            try lone.destroy()
            #expect(lone.isDestroyed)
            #expect(try DestroyPathPlain.exists(id: lone.id!) == false)
        }
    }

    @Test(arguments: TestEngine.all) func aRolledBackDestroyRestoresTheRowAndTheRecordsState(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let kept = try DestroyPathPlain.create(["title": "kept"])
            let gone = try DestroyPathPlain.create(["title": "gone"])
            let outcome = try db.transaction {
                try kept.destroy()
                #expect(kept.isDestroyed)
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            #expect(!kept.isDestroyed)
            #expect(try DestroyPathPlain.find(kept.id!)?.title == "kept")
            // Restored, it saves and destroys again as any loaded record.
            kept.title = "kept again"
            try kept.save()
            #expect(try DestroyPathPlain.find(kept.id!)?.title == "kept again")
            // A savepoint's rollback undoes its destroys only; the outer level's stay.
            try db.transaction {
                try gone.destroy()
                let inner = try db.transaction {
                    try kept.destroy()
                    throw Rollback()
                }
                #expect(inner == .rolledBack)
                #expect(!kept.isDestroyed && gone.isDestroyed)
            }
            #expect(gone.isDestroyed && !kept.isDestroyed)
            #expect(try DestroyPathPlain.all().map(\.title) == ["kept again"])
            // A failure that rolls the whole transaction back: the same.
            #expect(throws: CallbackAbort.self) {
                try db.transaction {
                    try kept.destroy()
                    throw CallbackAbort("stop")
                }
            }
            #expect(!kept.isDestroyed)
            #expect(try DestroyPathPlain.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func destroyingANewADestroyedOrAVanishedRecordGivesTodaysErrors(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let new = DestroyPathPlain()
            let neverSaved = expectError(.misuse) { try new.destroy() }
            #expect(neverSaved?.message.contains("never saved") == true)
            #expect(!new.isDestroyed)

            let record = try DestroyPathPlain.create(["title": "once"])
            try record.destroy()
            let twice = expectError(.misuse) { try record.destroy() }
            #expect(twice?.message.contains("with id \(record.id!) was already destroyed") == true)
            // The same inside a transaction, which the error does not roll back by itself.
            let other = try DestroyPathPlain.create(["title": "other"])
            try db.transaction {
                try other.destroy()
                _ = expectError(.misuse) { try other.destroy() }
            }
            #expect(other.isDestroyed)

            // Deleted elsewhere: notFound, and the record counts as destroyed.
            let vanished = try DestroyPathPlain.create(["title": "vanished"])
            #expect(try DestroyPathPlain.delete(id: vanished.id!))
            let notFound = expectError(.notFound) { try vanished.destroy() }
            #expect(notFound?.message.contains("with id \(vanished.id!) no longer exists") == true)
            #expect(vanished.isDestroyed)
            // A callback model reports the same errors.
            let newNoted = DestroyPathNoted()
            _ = expectError(.misuse) { try newNoted.destroy() }
            #expect(newNoted.log.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func callbacksRunAroundTheDeleteAndAFailingOneDeletesNothing(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let noted = try DestroyPathNoted.create(["title": "noted"])
            try noted.destroy()
            #expect(noted.log == ["beforeDestroy:false", "afterDestroy:true"])
            #expect(try DestroyPathNoted.count() == 0)

            let refusing = try DestroyPathNoted.create(["title": "refusing"])
            refusing.failIn = "afterDestroy"
            #expect(throws: CallbackAbort.self) { try refusing.destroy() }
            #expect(!refusing.isDestroyed)  // its savepoint rolled back
            #expect(try DestroyPathNoted.find(refusing.id!) != nil)

            // In a transaction that rolls back: the row and the state come back.
            refusing.failIn = nil
            refusing.log = []
            let outcome = try db.transaction {
                try refusing.destroy()
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            #expect(refusing.log == ["beforeDestroy:false", "afterDestroy:true"])
            #expect(!refusing.isDestroyed)
            #expect(try DestroyPathNoted.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func dependenciesStillRunAndRollBackWithTheDestroy(engine: TestEngine) throws {
        typealias Group = Destroying.Group
        typealias User = Destroying.User
        try withDatabase(engine) { db throws in
            let admins = try Group.create(["title": "admins"])
            let root = try User.create(["name": "root"])
            try admins.users.add(root)
            // A rolled back cascade: every row and every record's state come back.
            let outcome = try db.transaction {
                try admins.destroy()
                #expect(admins.isDestroyed)
                #expect(try User.count() == 0)
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            #expect(!admins.isDestroyed)
            #expect(try Group.count() == 1 && User.count() == 1)
            // Committed: the group's users (dependent: destroy) go with it.
            try db.transaction { try admins.destroy() }
            #expect(admins.isDestroyed)
            #expect(try Group.count() == 0 && User.count() == 0)
        }
    }

    /// A `DynamicRecord` (the C API's records) shares the destroyed records' log with models:
    /// a rollback brings it back too, beside a model destroyed in the same transaction.
    @Test(arguments: TestEngine.all) func aRolledBackDestroyOfADynamicRecordRestoresIt(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let model = DynamicModel(try TableSchema(name: "DestroyPathRow", columns: [ColumnSchema(name: "n", type: .integer)]))
            let record = model.makeRecord()
            try record.set("n", .integer(7))
            try record.save()
            let plain = try DestroyPathPlain.create(["title": "beside"])
            let outcome = try db.transaction {
                try record.destroy()
                try plain.destroy()
                #expect(record.isDestroyed && plain.isDestroyed)
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            #expect(!record.isDestroyed && !plain.isDestroyed)
            #expect(try model.all().count == 1)
            try db.transaction { try record.destroy() }
            #expect(record.isDestroyed)
            #expect(try model.all().isEmpty)
        }
    }

    /// A record locked optimistically: destroyed while it holds the row's version, refused
    /// (`.staleRecord`, nothing deleted, the record not destroyed) once another write moved it.
    @Test(arguments: TestEngine.all) func aLockedRecordIsDestroyedOnlyAtItsVersion(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let account = try VersionedAccount.create(["balance": 10])
            let stale = try #require(try VersionedAccount.find(account.id!))
            account.balance = 20
            try account.save()
            _ = expectError(.staleRecord) { try stale.destroy() }
            #expect(!stale.isDestroyed)
            #expect(try VersionedAccount.count() == 1)
            try account.destroy()
            #expect(account.isDestroyed)
            #expect(try VersionedAccount.count() == 0)
        }
    }
}
