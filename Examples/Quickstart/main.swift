// The iActiveRecord README scenario in Swift: create, save, list, update, destroy.
// `make run` runs it on the default database (a file in the data directory);
// set ACTIVERECORD_DATABASE to a path to use another file.
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

final class User: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @Column var avatar: Data? = nil
    var scratch = 0  // not a column: not stored
}

do {
    let database: Database
    if let path = ProcessInfo.processInfo.environment["ACTIVERECORD_DATABASE"], !path.isEmpty {
        database = try Database.configure(.file(path))
    } else {
        database = try Database.current  // nothing configured: the default file
    }
    print("database: \(database.path)")
    try User.destroyAll()  // start each run from an empty table

    let user = User()
    user.name = "Alex"
    user.age = 31
    try user.save()
    print("created: User #\(user.id!) name=\(user.name) age=\(user.age)")

    try User.create(["name": "Maria", "age": 27])
    let users = try User.all()
    print("listed: \(users.count) users: \(users.map(\.name).joined(separator: ", "))")

    users[0].name = "John"
    print("changed: \(users[0].changes.map(\.description).joined(separator: "; "))")
    try users[0].save()
    print("updated: User #\(users[0].id!) is now \(try User.find(users[0].id!)!.name)")

    try users[0].destroy()
    print("destroyed: User #\(users[0].id!); \(try User.count()) left: \(try User.all().map(\.name).joined(separator: ", "))")
} catch {
    print("error: \(error)")
    exit(1)
}
