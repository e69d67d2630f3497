// What the "Schema steps", "Reverting" and "Dumping the schema" blocks of Migrations.md take as given.

let db = try! Database(.inMemory)
final class Author: Model {
    @Column(index: .unique) var name: String = ""
}
