import ActiveRecord
import Foundation
import Testing

/// Issue 36, point 2: `@HasOne`, Rails' `has_one`: the child holds the owner's id; read lazily,
/// assigned and linked at the owner's save, with dependencies and eager loading.
@Suite("Relations: has-one")
struct HasOneTests {
    final class OneUser: Model {
        @Column var name: String = ""
        @HasOne var profile: OneProfile?
    }

    final class OneProfile: Model {
        @Column var bio: String = ""
        @BelongsTo var oneUser: OneUser?
    }

    /// The same shapes with `.destroy`.
    final class OneAccount: Model {
        @Column var name: String = ""
        @HasOne(dependency: .destroy) var card: OneCard?
    }

    final class OneCard: Model {
        @Column var number: String = ""
        @BelongsTo var oneAccount: OneAccount?
    }

    /// With `.nullify`, and a key column named in the declaration.
    final class OneDesk: Model {
        @Column var room: String = ""
        @HasOne(key: "deskId", dependency: .nullify) var lamp: OneLamp?
    }

    final class OneLamp: Model {
        @Column var watts: Int = 0
        @BelongsTo(key: "deskId") var desk: OneDesk?
    }

    /// A has-one whose child has no key column.
    final class OneOrphanOwner: Model {
        @Column var name: String = ""
        @HasOne var note: OneNote?
    }

    final class OneNote: Model {
        @Column var text: String = ""
    }

    /// The SELECTs among `statements` (the trace shows transactions' statements too).
    private func selects(_ statements: [String]) -> [String] { statements.filter { $0.hasPrefix("SELECT") } }

    @Test(arguments: TestEngine.all) func assignedChildIsLinkedAtTheOwnersSaveAndReadLazily(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let john = try OneUser.create(["name": "john"])
            #expect(john.profile == nil)
            let profile = OneProfile()
            profile.bio = "swift"
            john.profile = profile
            #expect(profile.id == nil)  // nothing written before the owner's save
            try john.save()
            #expect(profile.id != nil)
            #expect(profile.oneUser?.name == "john")
            #expect(try storedValue(db, #"SELECT "oneUserId" FROM "OneProfile""#) == .integer(john.id!))

            // A fresh owner: one query on first read, none after.
            let fetched = try #require(try OneUser.find(john.id!))
            let recorder = SQLRecorder(db)
            let first = recorder.during { #expect(fetched.profile?.bio == "swift") }
            #expect(selects(first).count == 1)
            let second = recorder.during { #expect(fetched.profile?.id == profile.id) }
            #expect(second.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func anUnsavedOwnerSavesItsChildInTheSameTransaction(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let alex = OneUser()
            alex.name = "alex"
            let profile = OneProfile()
            profile.bio = "rust"
            alex.profile = profile
            #expect(alex.profile === profile)  // the assigned child, before any save
            try alex.save()
            #expect(try OneProfile.query().where(\.$oneUser.id == alex.id).fetch().map(\.bio) == ["rust"])
        }
    }

    @Test(arguments: TestEngine.all) func aSecondChildRowReadsTheFirstAndAnAssignmentLetsTheOthersGo(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let john = try OneUser.create(["name": "john"])
            let older = try OneProfile.create(["bio": "older", "oneUserId": john.id])
            let newer = try OneProfile.create(["bio": "newer", "oneUserId": john.id])
            // Two rows for one owner (no unique index): the getter reads the lowest id.
            #expect(try OneUser.find(john.id!)?.profile?.id == older.id)

            // Assigning another child clears the key of both (no dependency: nullify).
            let replacement = try OneProfile.create(["bio": "replacement"])
            let owner = try #require(try OneUser.find(john.id!))
            owner.profile = replacement
            try owner.save()
            #expect(try OneProfile.query().where(\.$oneUser.id == john.id).fetch().map(\.bio) == ["replacement"])
            #expect(try OneProfile.count() == 3)
            #expect(try storedValue(db, #"SELECT "oneUserId" FROM "OneProfile" WHERE "id" = ?"#, [.integer(newer.id!)]) == .null)
            #expect(try OneUser.find(john.id!)?.profile?.bio == "replacement")

            // Assigning nil lets the last one go too.
            owner.profile = nil
            try owner.save()
            #expect(try OneProfile.query().where(\.$oneUser.id == john.id).count() == 0)
            #expect(try OneUser.find(john.id!)?.profile == nil)
        }
    }

    @Test(arguments: TestEngine.all) func replacingWithDestroyDestroysTheOldChild(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let account = try OneAccount.create(["name": "main"])
            let old = try OneCard.create(["number": "1111", "oneAccountId": account.id])
            account.card = try OneCard.create(["number": "2222"])
            try account.save()
            #expect(try OneCard.query().pluck(\.number) == ["2222"])
            #expect(try OneCard.find(old.id!) == nil)
            // Re-assigning the same child changes nothing.
            account.card = account.card
            try account.save()
            #expect(try OneCard.query().pluck(\.number) == ["2222"])
        }
    }

    @Test(arguments: TestEngine.all) func destroyingTheOwnerAppliesTheDependency(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            // .destroy: the card goes with the account.
            let account = try OneAccount.create(["name": "main"])
            try OneCard.create(["number": "1111", "oneAccountId": account.id])
            try OneCard.create(["number": "3333"])  // another account's (none)
            try account.destroy()
            #expect(try OneCard.query().pluck(\.number) == ["3333"])

            // .nullify: the lamp stays, its key cleared.
            let desk = try OneDesk.create(["room": "b12"])
            let lamp = try OneLamp.create(["watts": 40, "deskId": desk.id])
            #expect(desk.lamp?.id == lamp.id)
            try desk.destroy()
            #expect(try OneLamp.count() == 1)
            #expect(try storedValue(db, #"SELECT "deskId" FROM "OneLamp""#) == .null)

            // None (the default): the profile's foreign key refuses the owner's DELETE, and nothing is destroyed.
            let john = try OneUser.create(["name": "john"])
            try OneProfile.create(["bio": "x", "oneUserId": john.id])
            let error = expectError(.constraint) { try john.destroy() }
            #expect(error?.isForeignKeyViolation == true)
            #expect(try OneUser.count() == 1)
            #expect(try OneProfile.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func eagerLoadingReadsEveryOwnersChildInOneQuery(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            var profiles: [Int64: String] = [:]
            for n in 0..<5 {
                let user = try OneUser.create(["name": "u\(n)"])
                if n % 2 == 0 { profiles[user.id!] = try OneProfile.create(["bio": "b\(n)", "oneUserId": user.id]).bio }
            }
            // A second row for u0: the first (lowest id) is its child, as the getter reads it.
            try OneProfile.create(["bio": "b0-second", "oneUserId": try OneUser.first(where: "name", equals: "u0")?.id])
            let recorder = SQLRecorder(db)
            var users: [OneUser] = []
            let loading = try recorder.during { users = try OneUser.query().includes(\.profile).fetch() }
            #expect(selects(loading).count == 2)
            let walking = recorder.during {
                #expect(users.map { $0.profile?.bio } == ["b0", nil, "b2", nil, "b4"])
            }
            #expect(walking.isEmpty)  // a user without a profile is known to have none
            // The profile's belongs-to still loads through includes too (the other direction).
            let loaded = try OneProfile.query().includes(\.oneUser).order(by: "id").fetch()
            #expect(loaded.map { $0.oneUser?.name } == ["u0", "u2", "u4", "u0"])
        }
    }

    @Test(arguments: TestEngine.all) func aChildWithoutTheKeyColumnFailsTheSaveAndWritesNothing(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let owner = OneOrphanOwner()
            owner.name = "alone"
            owner.note = OneNote()
            let error = expectError(.unknownColumn) { try owner.save() }
            #expect(error?.message.contains("oneOrphanOwnerId") == true)
            #expect(owner.id == nil)
            #expect(try OneOrphanOwner.count() == 0)
            #expect(try OneNote.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func aFailedChildSaveRollsBackTheOwnersAndKeepsTheAssignment(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let account = try OneAccount.create(["name": "main"])
            let old = try OneCard.create(["number": "1111", "oneAccountId": account.id])
            // A card whose table refuses it: a unique number already taken (by a card of no account).
            try OneCard.create(["number": "9999"])
            try db.execute(#"CREATE UNIQUE INDEX "card_number" ON "OneCard" ("number")"#)
            let duplicate = OneCard()
            duplicate.number = "9999"
            account.card = duplicate
            expectError(.constraint) { try account.save() }
            // The old card was not destroyed (the transaction rolled back), and the owner still
            // has the change to make.
            #expect(try OneCard.find(old.id!) != nil)
            duplicate.number = "2222"
            try account.save()
            #expect(try OneCard.query().order(by: "number").pluck(\.number) == ["2222", "9999"])
            #expect(try OneCard.find(old.id!) == nil)
        }
    }

    @Test(arguments: TestEngine.all) func ownersByTheirChildInOneStatement(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let names = ["ann", "bo", "cy"]
            for (index, name) in names.enumerated() {
                let user = try OneUser.create(["name": name])
                if index != 1 { try OneProfile.create(["bio": name, "oneUserId": user.id]) }
            }
            let statements = try SQLRecorder(db).during { () throws in
                #expect(try OneUser.query().whereExists(\.profile).fetch().map(\.name) == ["ann", "cy"])
            }
            #expect(statements.count == 1)
            #expect(try OneUser.query().whereNotExists(\.profile).fetch().map(\.name) == ["bo"])
            #expect(try OneUser.query().whereExists(\.profile).where(\.name != "ann").count() == 1)
            // A belongs-to is not a has-one: a specific error, at the terminal call.
            let error = expectError(.misuse) { _ = try OneProfile.query().whereExists(\.oneUser).fetch() }
            #expect(error?.message.contains("@HasOne") == true)
        }
    }
}
