@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// The checked-in schema dumps, one per engine.
private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

@Suite("Schema dump")
struct SchemaDumpTests {
    /// A schema made by migration steps dumps to the checked-in text, byte for byte. To
    /// update the file after a deliberate change, run with AR_UPDATE_FIXTURES=1 and review the diff.
    @Test(arguments: TestEngine.all) func theDumpMatchesTheCheckedInFile(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "schema") { context in
                try context.createTable(StepAuthor.self)
                try context.createTable(stepBookSchema())
                try context.addIndex(on: "StepBook", columns: ["authorId", "title"], unique: true)
                try context.addIndex(on: "StepBook", columns: ["pages"], name: "by_pages")
                try context.addForeignKey("authorId", in: "StepBook", references: "StepAuthor", onDelete: .cascade)
                try context.addCheck("StepBook_pages_positive", on: "StepBook", "pages >= 1")
                try context.addCheck("StepBook_title_present", on: "StepBook", "length(title) > 0")
            }
            // Rows, ids handed out and sequences do not show.
            try StepAuthor.create(["name": "Le Guin", "rating": 5])
            let file = fixtures.appendingPathComponent("schema.\(engine.rawValue).sql")
            let dump = try db.schemaSQL()
            if ProcessInfo.processInfo.environment["AR_UPDATE_FIXTURES"] == "1" {
                try dump.write(to: file, atomically: true, encoding: .utf8)
            }
            let expected = try String(contentsOf: file, encoding: .utf8)
            #expect(dump == expected)
            // Deterministic: the same text again, and after a rebuild that changes nothing (SQLite).
            #expect(try db.schemaSQL() == dump)
        }
    }

    /// The library's own tables (applied migrations) are left out; the order is by name,
    /// whatever the order of creation.
    @Test(arguments: TestEngine.all) func sortedAndWithoutBookkeeping(engine: TestEngine) throws {
        try withDatabase(engine) { db in
            try db.execute(SQL(sql: "CREATE TABLE \"b\" (\(engine.idColumn))"))
            try db.execute(SQL(sql: "CREATE TABLE \"a\" (\(engine.idColumn), \"x\" \(engine.integer) NOT NULL DEFAULT 3)"))
            try db.execute("CREATE INDEX \"z_index\" ON \"a\" (\"x\")")
            try db.execute("CREATE INDEX \"y_index\" ON \"a\" (\"x\", \"id\")")
            try Migrator().apply(to: db)
            let dump = try db.schemaSQL()
            #expect(!dump.contains("activerecord_migrations"))
            let tables = dump.split(separator: "\n").filter { $0.hasPrefix("CREATE TABLE") }
            #expect(tables == [#"CREATE TABLE "a" ("#, #"CREATE TABLE "b" ("#])
            let indexes = dump.split(separator: "\n").filter { $0.hasPrefix("CREATE INDEX") }
            #expect(indexes == [#"CREATE INDEX "y_index" ON "a" ("x", "id");"#, #"CREATE INDEX "z_index" ON "a" ("x");"#])
            #expect(dump.contains(#""x" \#(engine == .sqlite ? "INTEGER" : "bigint") NOT NULL DEFAULT 3"#))
        }
    }
}
