@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// Records every callback it runs, and can be told to fail in one.
final class Diary: Model, Validating, Callbacks {
    @Column var title: String = ""
    var log: [String] = []
    var failIn: String?

    static let validations = Validations(for: Diary.self) { $0.presence(\.title) }

    private func note(_ name: String) throws {
        log.append(name)
        if failIn == name { throw CallbackAbort("\(name) refused") }
    }

    func beforeValidation() throws { try note("beforeValidation") }
    func afterValidation() throws { try note("afterValidation") }
    func beforeSave() throws { try note("beforeSave") }
    func afterSave() throws { try note("afterSave") }
    func beforeCreate() throws { try note("beforeCreate") }
    func afterCreate() throws { try note("afterCreate") }
    func beforeUpdate() throws { try note("beforeUpdate") }
    func afterUpdate() throws { try note("afterUpdate") }
    func beforeDestroy() throws { try note("beforeDestroy") }
    func afterDestroy() throws { try note("afterDestroy") }
}

/// A callback that changes a column before it is written.
final class Slugged: Model, Callbacks {
    @Column var title: String = ""
    @Column var slug: String = ""
    func beforeSave() throws { slug = title.lowercased().replacingOccurrences(of: " ", with: "-") }
}

/// Counts the records its callbacks saw being destroyed (one test uses it).
final class Tallied: Model, Callbacks {
    @Column var n: Int = 0
    static let destroyed = Mutex<[Int]>([])
    func beforeDestroy() throws { if n == 13 { throw CallbackAbort("13 stays") } }
    func afterDestroy() throws { Self.destroyed.withLock { $0.append(n) } }
}

@Suite("Callbacks")
struct CallbackTests {
    /// `destroyAll()` destroys each record with its callbacks, in one transaction: a
    /// callback that refuses keeps every record.
    @Test(.serialized, arguments: TestEngine.all) func destroyAllRunsEachRecordsCallbacks(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            Tallied.destroyed.withLock { $0 = [] }
            for n in [1, 2, 3] { try Tallied.create(["n": n]) }
            #expect(try Tallied.destroyAll() == 3)
            #expect(Tallied.destroyed.withLock { $0 } == [1, 2, 3])
            #expect(try Tallied.count() == 0)
            for n in [4, 13, 5] { try Tallied.create(["n": n]) }
            #expect(throws: CallbackAbort.self) { try Tallied.destroyAll() }
            #expect(try Tallied.count() == 3)
        }
    }

    @Test(arguments: TestEngine.all) func callbacksRunInRailsOrder(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let diary = Diary()
            diary.title = "day one"
            try diary.save()
            #expect(diary.log == [
                "beforeValidation", "afterValidation", "beforeSave", "beforeCreate", "afterCreate", "afterSave",
            ])
            diary.log = []
            diary.title = "day two"
            try diary.save()
            #expect(diary.log == [
                "beforeValidation", "afterValidation", "beforeSave", "beforeUpdate", "afterUpdate", "afterSave",
            ])
            diary.log = []
            try diary.save()  // nothing changed: nothing runs
            #expect(diary.log == [])
            try diary.destroy()
            #expect(diary.log == ["beforeDestroy", "afterDestroy"])
        }
    }

    @Test(arguments: TestEngine.all) func anInvalidRecordStopsAfterValidation(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let diary = Diary()
            expectError(.validationFailed) { try diary.save() }
            #expect(diary.log == ["beforeValidation"])
            #expect(try Diary.count() == 0)
        }
    }

    @Test("a before-callback aborts and nothing is written", arguments: TestEngine.all, ["beforeValidation", "afterValidation", "beforeSave", "beforeCreate"])
    func abortOnCreate(_ engine: TestEngine, _ callback: String) throws {
        try withDatabase(engine) { _ throws in
            let diary = Diary()
            diary.title = "x"
            diary.failIn = callback
            #expect(throws: CallbackAbort.self) { try diary.save() }
            #expect(diary.isNewRecord && diary.id == nil)
            #expect(try Diary.count() == 0)
        }
    }

    @Test("a throwing after-callback rolls the write back", arguments: TestEngine.all, ["afterCreate", "afterSave"])
    func rollbackOnCreate(_ engine: TestEngine, _ callback: String) throws {
        try withDatabase(engine) { _ throws in
            let diary = Diary()
            diary.title = "x"
            diary.failIn = callback
            #expect(throws: CallbackAbort.self) { try diary.save() }
            #expect(try Diary.count() == 0)
            // The record is as before the save: new, so a retry inserts it.
            #expect(diary.isNewRecord && diary.createdAt == nil)
            diary.failIn = nil
            try diary.save()
            #expect(try Diary.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func aThrowingAfterUpdateKeepsTheChangeUnsaved(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let diary = try Diary.create(["title": "old"])
            diary.title = "new"
            diary.failIn = "afterUpdate"
            #expect(throws: CallbackAbort.self) { try diary.save() }
            #expect(try Diary.find(diary.id!)?.title == "old")
            #expect(diary.hasChanges && diary.changes.first?.old == .text("old"))  // still to be saved
            diary.failIn = nil
            try diary.save()
            #expect(try Diary.find(diary.id!)?.title == "new")
        }
    }

    @Test(arguments: TestEngine.all) func beforeDestroyAbortsTheDestroy(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let diary = try Diary.create(["title": "keep"])
            diary.failIn = "beforeDestroy"
            #expect(throws: CallbackAbort.self) { try diary.destroy() }
            #expect(try !diary.isDestroyed && Diary.count() == 1)
            diary.failIn = "afterDestroy"
            #expect(throws: CallbackAbort.self) { try diary.destroy() }
            #expect(try !diary.isDestroyed && Diary.count() == 1)  // rolled back
        }
    }

    @Test(arguments: TestEngine.all) func aCallbackCanSetColumnsBeforeTheWrite(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let post = Slugged()
            post.title = "Hello World"
            try post.save()
            #expect(try Slugged.find(post.id!)?.slug == "hello-world")
        }
    }
}

@Suite("Rollback restores records in memory")
struct RollbackStateTests {
    @Test(arguments: TestEngine.all) func recordsSavedInARolledBackTransactionAreNewAgain(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let kept = try Item.create(["title": "kept"])
            let fresh = Item()
            fresh.title = "fresh"
            try db.transaction {
                try fresh.save()
                kept.title = "changed"
                try kept.save()
                try kept.destroy()
                throw Rollback()
            }
            #expect(fresh.isNewRecord && fresh.id == nil)
            #expect(!kept.isDestroyed && kept.title == "changed" && kept.hasChanges)
            try kept.save()
            #expect(try Item.find(kept.id!)?.title == "changed")
            try fresh.save()
            #expect(try Item.count() == 2)
        }
    }

    @Test(arguments: TestEngine.all) func anInnerSavepointRollbackUndoesOnlyItsRecords(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let outer = Item()
            let inner = Item()
            try db.transaction {
                try outer.save()
                try db.transaction {
                    try inner.save()
                    throw Rollback()
                }
            }
            #expect(!outer.isNewRecord && inner.isNewRecord)
            #expect(try Item.count() == 1)
        }
    }
}

/// A child that fails validation fails its owner's save, with the child's errors on the owner.
enum Guarded {
    final class Team: Model {
        @Column var name: String = ""
        @HasMany var players: Query<Player>
        @HasManyThrough(Membership.self) var clubs: Query<Club>
    }

    final class Membership: Model {
        @BelongsTo var team: Team?
        @BelongsTo var club: Club?
    }

    final class Club: Model, Validating {
        @Column var title: String = ""
        static let validations = Validations(for: Club.self) { $0.length(\.title, min: 3) }
    }

    final class Player: Model, Validating {
        @Column var name: String = ""
        @BelongsTo var team: Team?
        static let validations = Validations(for: Player.self) { $0.presence(\.name) }
    }
}

@Suite("Relations and validations")
struct RelationValidationTests {
    @Test(arguments: TestEngine.all) func aChildFailingValidationFailsTheOwnerAndLeavesTheDatabaseAsItWas(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let team = Guarded.Team()
            team.name = "reds"
            let good = Guarded.Player()
            good.name = "ok"
            let bad = Guarded.Player()  // blank name
            try team.players.add(good)
            try team.players.add(bad)
            let error = expectError(.validationFailed) { try team.save() }
            #expect(error?.validationFailures == [ValidationFailure(model: "Player", property: "name", key: "cant_be_blank", message: "can't be blank")])
            #expect(team.errors == error?.validationFailures)
            #expect(try Guarded.Team.count() == 0 && Guarded.Player.count() == 0)
            #expect(team.isNewRecord && good.isNewRecord)
            // The queue survives: fix the child and save again.
            #expect(try team.players.count() == 2)
            bad.name = "fixed"
            try team.save()
            #expect(try Guarded.Player.query().where("teamId = %@", team.id!).count() == 2)
        }
    }

    @Test(arguments: TestEngine.all) func aThroughChildFailingValidationFailsTheOwner(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let team = Guarded.Team()
            team.name = "blues"
            let chess = Guarded.Club()
            chess.title = "chess"
            let go = Guarded.Club()
            go.title = "go"  // too short
            try team.clubs.add(chess)
            try team.clubs.add(go)
            let error = expectError(.validationFailed) { try team.save() }
            #expect(team.errors.map(\.key) == ["too_short"] && team.errors.first?.model == "Club")
            #expect(error?.message == "Team is invalid: title is too short (minimum is 3 characters)")
            #expect(try Guarded.Team.count() == 0 && Guarded.Club.count() == 0 && Guarded.Membership.count() == 0)
            go.title = "go club"
            try team.save()
            #expect(try team.clubs.order(by: "title").fetch().map(\.title) == ["chess", "go club"])
            // Added to a saved owner, an invalid child fails at once with its own error.
            let bad = Guarded.Club()
            expectError(.validationFailed) { try team.clubs.add(bad) }
            #expect(try Guarded.Membership.count() == 2)
        }
    }
}
