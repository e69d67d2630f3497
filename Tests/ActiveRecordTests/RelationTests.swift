@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

@Suite("Relations: the seeds' scenarios")
struct RelationTests {
    typealias Group = Keeping.Group
    typealias User = Keeping.User
    typealias Project = Keeping.Project

    @Test func belongsToDeclaresItsKeyColumn() throws {
        #expect(try Keeping.User.schema().columns.map(\.name) == ["name", "groupId"])
        #expect(try Keeping.User.schema().columns[1].index == .index)
        #expect(try Keeping.UserProject.schema().columns.map(\.name) == ["userId", "projectId"])
        final class Owned: Model { @BelongsTo(key: "ownerId") var owner: Keeping.ContentManager? }
        #expect(try Owned.schema().columns.map(\.name) == ["ownerId"])
        final class Managed: Model { @BelongsTo var manager: Keeping.ContentManager? }
        #expect(try Managed.schema().columns.map(\.name) == ["contentManagerId"])
    }

    @Test(arguments: TestEngine.all) func aGroupWithTwoUsers(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let students = try Group.create(["title": "students"])
            let john = try User.create(["name": "john"])
            let alex = try User.create(["name": "alex"])
            try students.users.add(john)
            try students.users.add(alex)
            #expect(try students.users.count() == 2)
            #expect(try students.users.fetch().map(\.name) == ["john", "alex"])
            #expect(try Group.find(students.id!)!.users.order(by: "name").fetch().map(\.name) == ["alex", "john"])
            // john.group.title == "students", from a fresh fetch.
            let fetched = try #require(try User.first(where: "name", equals: "john"))
            #expect(fetched.group?.title == "students")
            // More conditions are ANDed with the relation's own filter.
            try User.create(["name": "jane"])  // not in the group
            #expect(try students.users.where("name LIKE 'j%'").fetch().map(\.name) == ["john"])
            #expect(try students.users.where("name = %@ OR name = %@", "jane", "alex").fetch().map(\.name) == ["alex"])
        }
    }

    @Test(arguments: TestEngine.all) func removingAUserFromAGroupClearsUserGroup(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let students = try Group.create(["title": "students"])
            let john = try User.create(["name": "john"])
            try students.users.add(john)
            #expect(john.group?.title == "students")
            try students.users.remove(john)
            #expect(john.group == nil)
            #expect(try User.find(john.id!)!.group == nil)
            #expect(try storedValue(db, #"SELECT "groupId" FROM "User""#) == .null)
            #expect(try students.users.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func settingBelongsToNilEmptiesGroupUsers(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let students = try Group.create(["title": "students"])
            let john = User()
            john.name = "john"
            john.group = students
            try john.save()
            #expect(try students.users.fetch().map(\.name) == ["john"])
            john.group = nil
            #expect(john.changes.map(\.column) == ["groupId"])
            try john.save()
            #expect(try students.users.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func theSameUserAddedTwiceToAProjectCountsOnce(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let project = try Project.create(["name": "swift"])
            let john = try User.create(["name": "john"])
            try project.users.add(john)
            try project.users.add(john)
            try john.projects.add(project)
            #expect(try project.users.count() == 1)
            #expect(try john.projects.count() == 1)
            #expect(try Keeping.UserProject.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func aUserInTwoProjectsAndAProjectWithTwoUsers(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let swift = try Project.create(["name": "swift"])
            let rust = try Project.create(["name": "rust"])
            let john = try User.create(["name": "john"])
            let alex = try User.create(["name": "alex"])
            try john.projects.add(swift)
            try john.projects.add(rust)
            try swift.users.add(alex)
            #expect(try john.projects.order(by: "name").fetch().map(\.name) == ["rust", "swift"])
            #expect(try swift.users.fetch().map(\.name) == ["john", "alex"])
            #expect(try rust.users.fetch().map(\.name) == ["john"])
            #expect(try alex.projects.fetch().map(\.name) == ["swift"])
            #expect(try john.projects.where("name = %@", "swift").count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func removeDeletesTheJoinRow(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let swift = try Project.create(["name": "swift"])
            let john = try User.create(["name": "john"])
            try john.projects.add(swift)
            #expect(try Keeping.UserProject.count() == 1)
            try john.projects.remove(swift)
            #expect(try Keeping.UserProject.count() == 0)
            #expect(try john.projects.count() == 0 && swift.users.count() == 0)
            #expect(try Project.count() == 1 && User.count() == 1)  // only the join row goes
        }
    }

    @Test(arguments: TestEngine.all) func nullifyKeepsTheGroupAndClearsKeys(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let students = try Group.create(["title": "students"])
            for name in ["john", "alex"] { try students.users.add(try User.create(["name": name])) }
            let swift = try Project.create(["name": "swift"])
            let john = try #require(try User.first(where: "name", equals: "john"))
            try john.projects.add(swift)
            try students.destroy()
            #expect(try User.count() == 2)
            #expect(try User.all().allSatisfy { $0.group == nil })
            try john.destroy()  // nullify through: join rows go, the project stays
            #expect(try Project.count() == 1 && Keeping.UserProject.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func everythingUnsavedIsQueuedAndSavedWithTheOwner(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let students = Group()
            students.title = "students"
            let john = User()
            john.name = "john"
            let alex = User()
            alex.name = "alex"
            try students.users.add(john)
            try students.users.add(alex)
            try students.users.add(john)
            // Before saving, the relation answers from what was added.
            #expect(try students.users.count() == 2)
            #expect(try students.users.fetch().map(\.name) == ["john", "alex"])
            #expect(try students.users.first()?.name == "john" && students.users.last()?.name == "alex")
            let recorder = SQLRecorder(db)
            #expect(recorder.all.isEmpty)
            let sql = try recorder.during { try students.save() }
            #expect(sql.first == db.dialect.beginTransactionSQL(isolation: nil) && sql.last == "COMMIT")
            #expect(students.id != nil && john.id != nil && alex.id != nil)
            #expect(try User.all().map { $0.group?.title } == ["students", "students"])
            // A belongs-to set to an unsaved parent saves the parent first.
            let admins = Group()
            admins.title = "admins"
            let root = User()
            root.name = "root"
            root.group = admins
            try root.save()
            #expect(admins.id != nil)
            #expect(try User.find(root.id!)!.group?.title == "admins")
            // Through, unsaved on both sides.
            let swift = Project()
            swift.name = "swift"
            let jane = User()
            jane.name = "jane"
            try swift.users.add(jane)
            #expect(try swift.users.count() == 1)
            try swift.save()
            #expect(try jane.projects.fetch().map(\.name) == ["swift"])
        }
    }

    @Test(arguments: TestEngine.all) func aChildThatFailsToSaveFailsTheOwnerAndLeavesTheDatabaseAsItWas(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try User.create(["name": "taken"])
            let swift = Project()
            swift.name = "swift"
            let ok = User()
            ok.name = "fresh"
            let duplicate = User()
            duplicate.name = "taken"  // the unique index refuses it
            try swift.users.add(ok)
            try swift.users.add(duplicate)
            expectError(.constraint) { try swift.save() }
            #expect(try Project.count() == 0 && User.count() == 1 && Keeping.UserProject.count() == 0)
            // The same for has-many.
            let group = Group()
            try group.users.add(duplicate)
            expectError(.constraint) { try group.save() }
            #expect(try Group.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func customKeysAndTheContentManagerConvention(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let manager = try Keeping.ContentManager.create(["name": "boss"])
            let error = expectError(.unknownColumn) { try manager.ownedGroups.add(try Group.create(["title": "x"])) }
            #expect(error?.message.contains("Group has no column 'ownerId'") == true)
            expectError(.misuse) { try Group.query().add(Group()) }
        }
    }
}
