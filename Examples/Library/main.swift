// The seeds' library scenario in Swift (the twin of Examples/c/library.c): groups, users and
// projects with belongs-to, has-many and has-many-through relations, dependencies that
// destroy or nullify, eager loading, a predicate query and a rolled-back savepoint.
//
//     swift run ActiveRecordExampleLibrary [path]     the database; in memory by default
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

final class Group: Model {
    @Column var title: String = ""
    @HasMany(dependency: .destroy) var users: Query<User>          // destroying a group destroys its users
}

final class User: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @BelongsTo var group: Group?                                     // the column "groupId"
    @HasManyThrough(UserProject.self, dependency: .nullify) var projects: Query<Project>
}

final class UserProject: Model {                                     // the join model: userId, projectId
    @BelongsTo var user: User?
    @BelongsTo var project: Project?
}

final class Project: Model {
    @Column var name: String = ""
    @HasManyThrough(UserProject.self) var users: Query<User>
}

func names(_ users: [User]) -> String { users.map(\.name).joined(separator: ", ") }

do {
    let path = CommandLine.arguments.dropFirst().first
    let database = try Database(path.map { .file($0) } ?? .inMemory)
    try database.use {
        let (students, teachers) = try Database.withTransaction { () throws -> (Group, Group) in
            let students = try Group.create(["title": "students"])
            let teachers = try Group.create(["title": "teachers"])
            for (name, age) in [("Alex", 19), ("Maria", 22), ("John", 20)] {
                try students.users.add(try User.create(["name": name, "age": age]))
            }
            try teachers.users.add(try User.create(["name": "Ada", "age": 45]))
            return (students, teachers)
        }
        print("groups: \(try Group.count()), users: \(try User.count())")

        let swift = try Project.create(["name": "Swift"])
        let sqlite = try Project.create(["name": "SQLite"])
        let alex = try require(try User.query().where("name = %@", "Alex").first())
        let ada = try require(try teachers.users.first())
        try alex.projects.add(swift)
        try alex.projects.add(sqlite)
        try alex.projects.add(swift)                                 // already there: one join row
        try ada.projects.add(swift)
        print("Alex works on: \(try alex.projects.order(by: "name").fetch().map(\.name).joined(separator: ", "))")
        print("Swift has: \(names(try swift.users.order(by: "name").fetch()))")
        print("Alex's group: \(alex.group?.title ?? "none")")

        // Eager loading: the groups and all their users in two queries; each group's users
        // are then answered from memory (a changed query, say with an order, would run SQL).
        for group in try Group.query().order(by: "title").includes(\.users).fetch() {
            print("  \(group.title): \(try group.users.fetch().map(\.name).sorted().joined(separator: ", "))")
        }
        print("students aged 20 or more: \(names(try students.users.where("age >= %@", 20).order(by: "name").fetch()))")

        // A savepoint rolled back: Maria's move to the teachers is undone, the rest kept.
        let maria = try require(try students.users.where("name = %@", "Maria").first())
        try Database.transaction {
            try User.create(["name": "Grace", "age": 37, "groupId": teachers.id!])
            try Database.transaction {
                maria.group = teachers
                try maria.save()
                throw Rollback()
            }
        }
        print("after the savepoint: teachers \(names(try teachers.users.order(by: "name").fetch())), "
              + "Maria in \(try User.find(maria.id!)!.group?.title ?? "none")")

        // Dependencies: a user leaving nullifies its join rows; a group destroyed takes its users.
        try alex.destroy()
        print("Alex destroyed: Swift has \(names(try swift.users.fetch())), join rows left: \(try UserProject.count())")
        try students.destroy()
        print("students destroyed: users left \(names(try User.query().order(by: "name").fetch()))")
    }
} catch {
    print("error: \(error)")
    exit(1)
}

/// Unwraps or stops with a message (examples keep error handling short).
func require<T>(_ value: T?, _ what: String = "a record") throws -> T {
    guard let value else { throw ActiveRecordError(.notFound, "\(what) is missing") }
    return value
}
