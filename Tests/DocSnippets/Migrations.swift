// snippet-imports: Logging
// What Migrations.md's blocks take as given.

let db = try! Database(.inMemory)
let path = "app.sqlite"
final class User: Model { @Column var name: String = "" }
final class Group: Model { @Column var title: String = "" }
final class Project: Model { @Column var name: String = "" }
let migrator = Migrator()
