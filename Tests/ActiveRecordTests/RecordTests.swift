@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

final class User: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @Column var avatar: Data? = nil
    var scratch = 0  // not a column
}

@Suite("Records: create, read, update, destroy")
struct RecordTests {
    @Test(arguments: TestEngine.all) func createsTheTableOnFirstUseAndSavesAndFetches(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let user = User()
            user.name = "Alex"
            user.scratch = 7
            #expect(user.isNewRecord && user.id == nil)
            try user.save()
            #expect(user.id == 1 && !user.isNewRecord)
            #expect(try db.tableNames() == ["User"])
            #expect(try columnNames(db, "User") == ["id", "createdAt", "updatedAt", "name", "age", "avatar"])
            let users = try User.all()
            #expect(users.count == 1)
            #expect(users[0].name == "Alex" && users[0].age == 0 && users[0].avatar == nil)
            #expect(users[0].scratch == 0)  // not stored
            #expect(users[0].createdAt != nil && users[0].createdAt == users[0].updatedAt)
        }
    }

    @Test(arguments: TestEngine.all) func updateWritesOnlyChangedColumnsAndNothingWhenUnchanged(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let recorder = SQLRecorder(db)
            try User.create(["name": "Alex", "age": 30])
            let user = try #require(try User.all().first)
            user.name = "John"
            let sql = try recorder.during { try user.save() }
            #expect(sql == [#"UPDATE "User" SET "name" = ?, "updatedAt" = ? WHERE "id" = ?"#])
            #expect(try recorder.during { try user.save() } == [])
            user.age = 30  // same value: not a change
            #expect(try recorder.during { try user.save() } == [])
            #expect(try User.find(user.id!)?.name == "John")
        }
    }

    @Test(arguments: TestEngine.all) func changesToBytesAndLongTextAreSeenAndEqualValuesAreNot(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let recorder = SQLRecorder(db)
            let long = String(repeating: "Alex ", count: 20)  // held out of line, as the avatar
            try User.create(["name": long, "avatar": Data(repeating: 7, count: 100)])
            let user = try #require(try User.all().first)
            // Equal values in other storage: no change.
            user.name = String(repeating: "Alex ", count: 20)
            user.avatar = Data(repeating: 7, count: 100)
            #expect(try recorder.during { try user.save() } == [])
            // One byte changed in place (the record's copy, not the original's).
            user.avatar![99] = 8
            #expect(try recorder.during { try user.save() } == [#"UPDATE "User" SET "avatar" = ?, "updatedAt" = ? WHERE "id" = ?"#])
            user.name += "!"
            #expect(try recorder.during { try user.save() } == [#"UPDATE "User" SET "name" = ?, "updatedAt" = ? WHERE "id" = ?"#])
            let found = try #require(try User.find(user.id!))
            #expect(found.avatar?.last == 8 && found.avatar?.count == 100 && found.name == long + "!")
        }
    }

    @Test(arguments: TestEngine.all) func updatedAtMovesOnlyOnChangingUpdates(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let user = try User.create(["name": "Alex"])
            let created = try #require(user.createdAt)
            try user.save()
            #expect(user.updatedAt == created)
            Thread.sleep(forTimeInterval: 0.002)
            user.age = 5
            try user.save()
            let reloaded = try #require(try User.find(user.id!))
            #expect(reloaded.createdAt == created)
            #expect(try #require(reloaded.updatedAt) > created)
        }
    }

    @Test(arguments: TestEngine.all) func reloadDiscardsUnsavedChangesAndSeesOtherWriters(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let user = try User.create(["name": "Alex"])
            try db.execute(#"UPDATE "User" SET "age" = 44 WHERE "id" = ?"#, [.integer(user.id!)])
            user.name = "unsaved"
            try user.reload()
            #expect(user.name == "Alex" && user.age == 44 && !user.hasChanges)
        }
    }

    @Test(arguments: TestEngine.all) func destroyDeletesTheRowAndMarksTheRecord(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let alex = try User.create(["name": "Alex"])
            let maria = try User.create(["name": "Maria"])
            let recorder = SQLRecorder(db)
            let sql = try recorder.during { try alex.destroy() }
            #expect(sql == [#"DELETE FROM "User" WHERE "id" = ?"#])
            #expect(alex.isDestroyed && alex.recordState == .destroyed)
            #expect(try User.all().map(\.name) == ["Maria"])
            expectError(.misuse) { try alex.destroy() }
            expectError(.misuse) { try alex.save() }
            expectError(.misuse) { try User().destroy() }
            try db.execute(#"DELETE FROM "User""#)
            expectError(.notFound) { try maria.destroy() }
            expectError(.notFound) { try maria.reload() }
        }
    }

    @Test(arguments: TestEngine.all) func updatingARowDeletedElsewhereIsNotFound(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let user = try User.create(["name": "Alex"])
            try db.execute(#"DELETE FROM "User""#)
            user.name = "John"
            let error = expectError(.notFound) { try user.save() }
            #expect(error?.message.contains("no longer exists") == true)
        }
    }

    @Test(arguments: TestEngine.all) func findersAnswerWithConcreteRecords(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            #expect(try User.count() == 0)
            #expect(try User.first() == nil && User.last() == nil)
            #expect(try User.exists() == false)
            for (name, age) in [("Alex", 30), ("Maria", 25), ("Alex", 41)] {
                try User.create(["name": name, "age": age])
            }
            #expect(try User.count() == 3)
            #expect(try User.exists() && User.exists(id: 2) && !User.exists(id: 9))
            #expect(try User.find(2)?.name == "Maria")
            #expect(try User.find(99) == nil)
            #expect(try User.first()?.age == 30)
            #expect(try User.last()?.age == 41)
            #expect(try User.first(where: "name", equals: "Alex")?.age == 30)
            #expect(try User.all(where: "name", equals: "Alex").map(\.age) == [30, 41])
            #expect(try User.all(where: "avatar", equals: nil).count == 3)
            #expect(try User.first(where: "name", equals: "Nobody") == nil)
            let error = expectError(.unknownColumn) { _ = try User.first(where: "nmae", equals: "Alex") }
            #expect(error?.message == "User has no column 'nmae'; its columns are: id, createdAt, updatedAt, name, age, avatar")
        }
    }

    @Test(arguments: TestEngine.all) func findOrBuildFindsOrMakesAnUnsavedRecord(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try User.create(["name": "Alex", "age": 30])
            let found = try User.findOrBuild(["name": "Alex"])
            #expect(!found.isNewRecord && found.age == 30)
            let built = try User.findOrBuild(["name": "Zoe", "age": 3])
            #expect(built.isNewRecord && built.name == "Zoe" && built.age == 3)
            #expect(try User.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func newFromDictionaryRejectsUnknownKeysAndWrongTypes(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let user = try User(["name": "Alex", "age": 30, "avatar": Data([1, 2])])
            #expect(user.name == "Alex" && user.age == 30 && user.avatar == Data([1, 2]))
            let unknown = expectError(.unknownColumn) { _ = try User(["name": "Alex", "email": "a@b"]) }
            #expect(unknown?.message.contains("'email'") == true)
            let wrong = expectError(.typeMismatch) { _ = try User(["age": "thirty"]) }
            #expect(wrong?.message.contains("User.age") == true)
            // A failed set leaves the record as it was.
            let kept = try User(["name": "Kept", "age": 1])
            expectError(.typeMismatch) { try kept.set(["name": "Changed", "age": "x"]) }
            #expect(kept.name == "Kept" && kept.age == 1)
            #expect(try User.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func destroyAllAndClear(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            for name in ["a", "b", "c"] { try User.create(["name": name]) }
            try Item.create(["title": "x"])
            #expect(try User.destroyAll() == 3)
            #expect(try User.count() == 0 && Item.count() == 1)
            try User.create(["name": "d"])
            try db.clear()
            #expect(try User.count() == 0 && Item.count() == 0)
            #expect(try db.tableNames() == ["Item", "User"])
        }
    }

    @Test(arguments: TestEngine.all) func stateChangesAndRevert(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let user = User()
            #expect(user.recordState == .new && !user.hasChanges)
            user.name = "Alex"
            #expect(user.changes == [ColumnChange(column: "name", old: .text(""), new: .text("Alex"))])
            try user.save()
            #expect(user.recordState == .persisted && user.changes.isEmpty)
            user.name = "John"
            user.age = 7
            #expect(user.recordState == .changed)
            #expect(user.changes == [
                ColumnChange(column: "name", old: .text("Alex"), new: .text("John")),
                ColumnChange(column: "age", old: .integer(0), new: .integer(7)),
            ])
            user.revertChanges()
            #expect(user.name == "Alex" && user.age == 0 && user.recordState == .persisted)
            user.name = "Alex"  // set to the same value: no change
            #expect(!user.hasChanges)
        }
    }

    /// The seeds' `Animal.state`: a common column name the base class leaves free
    /// (the record's own state is `recordState`).
    @Test(arguments: TestEngine.all) func aModelMayHaveAColumnNamedState(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let animal = Creature()
            animal.name = "cat"
            animal.state = "sleeping"
            #expect(animal.recordState == .new)
            try animal.save()
            let found = try #require(try Creature.find(animal.id!))
            #expect(found.state == "sleeping" && found.recordState == .persisted)
            found.state = "hungry"
            #expect(found.recordState == .changed)
            try found.save()
            #expect(try storedValue(db, #"SELECT "state" FROM "Creature""#) == .text("hungry"))
            #expect(try Creature.first(where: "state", equals: "hungry")?.name == "cat")
            try found.destroy()
            #expect(found.recordState == .destroyed && found.isDestroyed)
        }
    }

    @Test(arguments: TestEngine.all) func valueOfColumnByName(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let user = try User.create(["name": "Alex"])
            #expect(try user.value(of: "name") == .text("Alex"))
            #expect(try user.value(of: "id") == .integer(user.id!))
            #expect(try user.value(of: "avatar") == .null)
            expectError(.unknownColumn) { _ = try user.value(of: "nope") }
        }
    }
}

final class Item: Model {
    @Column var title: String = ""
}

/// The seeds' `Animal`, with its `state` column.
final class Creature: Model {
    @Column var name: String = ""
    @Column var state: String = ""
}
