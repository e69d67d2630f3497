@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

@Suite("Relations: destroy dependencies")
struct DependencyTests {
    typealias Group = Destroying.Group
    typealias User = Destroying.User
    typealias Project = Destroying.Project
    typealias Issue = Destroying.Issue

    /// students: john, alex; admins: root. john in swift (2 issues), alex in swift and rust.
    func seed() throws -> (students: Group, admins: Group, john: User, alex: User, swift: Project, rust: Project) {
        let students = try Group.create(["title": "students"])
        let admins = try Group.create(["title": "admins"])
        let john = try User.create(["name": "john"])
        let alex = try User.create(["name": "alex"])
        let root = try User.create(["name": "root"])
        try students.users.add(john)
        try students.users.add(alex)
        try admins.users.add(root)
        let swift = try Project.create(["name": "swift"])
        let rust = try Project.create(["name": "rust"])
        try john.projects.add(swift)
        try alex.projects.add(swift)
        try alex.projects.add(rust)
        for title in ["crash", "typo"] { try swift.issues.add(try Issue.create(["title": title])) }
        try rust.issues.add(try Issue.create(["title": "borrow"]))
        return (students, admins, john, alex, swift, rust)
    }

    /// `destroyAll()` destroys each record as `destroy()` does: dependencies included.
    @Test(arguments: TestEngine.all) func destroyAllRunsEveryRecordsDependencies(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try seed()
            #expect(try Group.destroyAll() == 2)
            #expect(try Group.count() == 0 && User.count() == 0 && Project.count() == 0 && Issue.count() == 0)
            #expect(try Destroying.UserProject.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func destroyingAGroupWithDestroyDestroysItsUsers(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let world = try seed()
            try world.admins.destroy()
            #expect(try Group.all().map(\.title) == ["students"])
            #expect(try User.all().map(\.name) == ["john", "alex"])
        }
    }

    @Test(arguments: TestEngine.all) func destroyingAUserWhoseBelongsToIsDestroyDestroysTheGroupAndItsOtherUsers(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let world = try seed()
            try world.john.destroy()
            #expect(world.john.isDestroyed)
            #expect(try Group.all().map(\.title) == ["admins"])
            #expect(try User.all().map(\.name) == ["root"])
            // john and alex destroyed their projects (through, destroy), and the projects their issues.
            #expect(try Project.count() == 0 && Issue.count() == 0 && Destroying.UserProject.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func destroyingAUserWithThroughDestroyDestroysTheProjects(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let world = try seed()
            let loner = try User.create(["name": "loner"])  // no group: nothing else goes
            let go = try Project.create(["name": "go"])
            try loner.projects.add(go)
            try loner.destroy()
            #expect(try Project.all().map(\.name) == ["swift", "rust"])
            #expect(try Destroying.UserProject.query().where("projectId = %@", go.id!).count() == 0)
            _ = world
        }
    }

    @Test(arguments: TestEngine.all) func destroyingAProjectDestroysItsIssuesButNotAnUnrelatedOne(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let world = try seed()
            let unrelated = try Issue.create(["title": "unrelated"])
            try world.swift.destroy()
            #expect(try Issue.all().map(\.title) == ["borrow", "unrelated"])
            #expect(try Issue.find(unrelated.id!) != nil)
            #expect(try User.count() == 3)  // Project.users nullifies: the users stay
            #expect(try Destroying.UserProject.count() == 1)  // alex–rust; the swift rows went
        }
    }

    @Test(arguments: TestEngine.all) func aFailingCascadeDestroysNothing(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let world = try seed()
            // An issue row that cannot be deleted: a trigger refuses it.
            switch engine {
            case .sqlite:
                try db.execute(#"CREATE TRIGGER keep BEFORE DELETE ON "Issue" WHEN OLD."title" = 'typo' BEGIN SELECT RAISE(ABORT, 'kept'); END"#)
            case .postgres:
                try db.execute(#"""
                    CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                    IF OLD."title" = 'typo' THEN RAISE EXCEPTION 'kept' USING ERRCODE = '23000'; END IF; RETURN OLD; END $$
                    """#)
                try db.execute(#"CREATE TRIGGER keep BEFORE DELETE ON "Issue" FOR EACH ROW EXECUTE FUNCTION keep()"#)
            }
            expectError(.constraint) { try world.john.destroy() }
            #expect(try User.find(world.john.id!) != nil)
            #expect(try Group.count() == 2 && User.count() == 3 && Project.count() == 2 && Issue.count() == 3)
            #expect(try Destroying.UserProject.count() == 3)
        }
    }

    @Test(arguments: TestEngine.all) func eagerLoadingRunsOneQueryPerRelation(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let world = try seed()
            let recorder = SQLRecorder(db)
            let groups = try Group.query().includes(\.users).fetch()
            #expect(recorder.all.count == 2)
            #expect(groups.map { try! $0.users.fetch().map(\.name) } == [["john", "alex"], ["root"]])
            #expect(groups.map { try! $0.users.count() } == [2, 1])
            #expect(recorder.all.count == 2)  // walking them ran nothing
            recorder.reset()
            let users = try User.query().includes(\.group).includes(\.projects).fetch()
            #expect(recorder.all.count == 3, "\(recorder.all)")
            #expect(users.map { $0.group?.title } == ["students", "students", "admins"])
            #expect(users.map { try! $0.projects.fetch().map(\.name) } == [["swift"], ["swift", "rust"], []])
            #expect(recorder.all.count == 3)
            // Further conditions run SQL again.
            #expect(try users[1].projects.where("name = 'rust'").count() == 1)
            #expect(recorder.all.count == 4)
            _ = world
        }
    }
}
