@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A model whose table a migration creates (`createTable(StepAuthor.self)`).
final class StepAuthor: Model {
    @Column(index: .unique) var name: String = ""
    @Column var rating: Int = 0
}

/// The book table's description, as a migration writes it.
func stepBookSchema() throws -> TableSchema {
    try TableSchema(name: "StepBook", columns: [
        ColumnSchema(name: "title", type: .text, defaultValue: .text("untitled")),
        ColumnSchema(name: "pages", type: .integer, isNullable: true),
        ColumnSchema(name: "authorId", type: .integer, isNullable: true),
    ])
}

/// A database that is not new (a migrator on a new database records its steps without
/// running them): it has a table made with raw SQL.
func withMigratedDatabase(_ engine: TestEngine, _ body: (Database) throws -> Void) throws {
    try withDatabase(engine) { db in
        try db.execute(SQL(sql: "CREATE TABLE \"Seed\" (\(engine.idColumn))"))
        try body(db)
    }
}

/// Applies one migration to `db`, after those `migrator` has; `migrator` keeps it only when
/// it applied (so that a test goes on after a step that fails on purpose).
@discardableResult
func applyStep(
    _ db: Database, _ migrator: inout Migrator, _ name: String, _ step: @escaping @Sendable (MigrationContext) throws -> Void
) throws -> [String] {
    var attempt = migrator
    attempt.register(name, step)
    let ran = try attempt.apply(to: db)
    migrator = attempt
    return ran
}

@Suite("Schema steps of versioned migrations")
struct SchemaStepTests {
    @Test(arguments: TestEngine.all) func createTableFromAModelAndFromADescription(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "tables") { context in
                try context.createTable(StepAuthor.self)
                try context.createTable(stepBookSchema())
            }
            #expect(try columnNames(db, "StepAuthor") == ["id", "createdAt", "updatedAt", "name", "rating"])
            #expect(try indexNames(db, "StepAuthor") == ["StepAuthor_name_unique"])
            #expect(try columnNames(db, "StepBook") == ["id", "createdAt", "updatedAt", "title", "pages", "authorId"])
            // Defaults and nullability as described.
            try db.execute(#"INSERT INTO "StepBook" ("pages") VALUES (NULL)"#)
            #expect(try storedValue(db, #"SELECT "title" FROM "StepBook""#) == .text("untitled"))
            // The model uses the table the migration made.
            let author = try StepAuthor.create(["name": "Le Guin", "rating": 5])
            #expect(try StepAuthor.find(try #require(author.id))?.name == "Le Guin")
            // A table that exists: a clear error, nothing of the step applied.
            let error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "again") { context in
                    try context.createTable("Other", columns: [ColumnSchema(name: "x", type: .integer)])
                    try context.createTable(StepAuthor.self)
                }
            }
            #expect(error?.message.contains("cannot create the table StepAuthor: there is one already") == true)
            #expect(try !db.tableNames().contains("Other"))
        }
    }

    /// Names are quoted, never spliced: a hostile table, column or index name is just a name.
    @Test(arguments: TestEngine.all) func hostileNamesAreNames(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            let table = #"x"); DROP TABLE "Seed"; --"#
            let column = #"c" TEXT); DROP TABLE "Seed"; --"#
            try applyStep(db, &migrator, "hostile") { context in
                try context.createTable(table, columns: [ColumnSchema(name: column, type: .text)])
                try context.addIndex(on: table, columns: [column], name: #"i"; DROP TABLE "Seed"; --"#)
            }
            #expect(try db.tableNames().contains("Seed"))
            #expect(try db.tableNames().contains(table))
            #expect(try columnNames(db, table).last == column)
            #expect(try indexNames(db, table) == [#"i"; DROP TABLE "Seed"; --"#])
        }
    }

    @Test(arguments: TestEngine.all) func dropTable(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "create") { try $0.createTable(stepBookSchema()) }
            try applyStep(db, &migrator, "drop") { try $0.dropTable("StepBook") }
            #expect(try !db.tableNames().contains("StepBook"))
            let error = expectError(.migrationFailed) { try applyStep(db, &migrator, "drop missing") { try $0.dropTable("Nope") } }
            #expect(error?.message.contains("there is no table Nope") == true)
        }
    }

    @Test(arguments: TestEngine.all) func indexesUniqueMultiColumnAndNamed(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "book") { try $0.createTable(stepBookSchema()) }
            try applyStep(db, &migrator, "indexes") { context in
                try context.addIndex(on: "StepBook", columns: ["authorId", "title"], unique: true)
                try context.addIndex(on: "StepBook", columns: ["pages"], name: "by_pages")
            }
            #expect(try indexNames(db, "StepBook") == ["StepBook_authorId_title_unique", "by_pages"])
            let unique = try #require(try db.withSchema { try $1.indexes(of: "StepBook", $0) }.first { $0.name == "StepBook_authorId_title_unique" })
            #expect(unique.isUnique && unique.columns == ["authorId", "title"])
            try db.execute(#"INSERT INTO "StepBook" ("title", "authorId") VALUES ('A', 1)"#)
            let duplicate = expectError(.constraint) { try db.execute(#"INSERT INTO "StepBook" ("title", "authorId") VALUES ('A', 1)"#) }
            #expect(duplicate?.isUniqueViolation == true)

            // A duplicate name (index names are one namespace per database): a clear error.
            var error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "same name") { try $0.addIndex(on: "Seed", columns: ["id"], name: "by_pages") }
            }
            #expect(error?.message.contains("StepBook has an index of that name already") == true)
            // Unknown table, unknown column, unknown index.
            error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "no table") { try $0.addIndex(on: "Nope", columns: ["x"]) }
            }
            #expect(error?.message.contains("there is no table Nope") == true)
            error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "no column") { try $0.addIndex(on: "StepBook", columns: ["title", "isbn"]) }
            }
            #expect(error?.message.contains("StepBook has no column 'isbn'") == true)
            error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "no index") { try $0.dropIndex("by_isbn", on: "StepBook") }
            }
            #expect(error?.message.contains("StepBook has no index 'by_isbn'") == true)

            // A unique index over rows that repeat values: nothing of the step applied.
            try db.execute(#"INSERT INTO "StepBook" ("title", "pages") VALUES ('B', 10), ('C', 10)"#)
            error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "unique pages") { context in
                    try context.dropIndex("by_pages", on: "StepBook")
                    try context.addIndex(on: "StepBook", columns: ["pages"], unique: true)
                }
            }
            #expect(error?.isUniqueViolation == true)
            #expect(error?.message.contains("rows of StepBook already repeat values of (pages)") == true)
            #expect(try indexNames(db, "StepBook") == ["StepBook_authorId_title_unique", "by_pages"])
            #expect(try !migrator.appliedMigrations(in: db).contains("unique pages"))

            try applyStep(db, &migrator, "drop index") { try $0.dropIndex(on: "StepBook", columns: ["authorId", "title"], unique: true) }
            #expect(try indexNames(db, "StepBook") == ["by_pages"])
        }
    }

    @Test(arguments: TestEngine.all) func foreignKeysWithTheirDeleteActions(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "tables") { context in
                try context.createTable(StepAuthor.self)
                try context.createTable(stepBookSchema())
                try context.createTable("StepReview", columns: [
                    ColumnSchema(name: "bookId", type: .integer, isNullable: true),
                    ColumnSchema(name: "authorId", type: .integer, isNullable: true),
                ])
                try context.addIndex(on: "StepBook", columns: ["title"])
            }
            try applyStep(db, &migrator, "keys") { context in
                try context.addForeignKey("authorId", in: "StepBook", references: "StepAuthor", onDelete: .cascade)
                try context.addForeignKey("bookId", in: "StepReview", references: "StepBook", onDelete: .setNull)
                try context.addForeignKey("authorId", in: "StepReview", references: "StepAuthor", onDelete: .restrict)
            }
            // SQLite rebuilt StepBook: its index is still there.
            #expect(try indexNames(db, "StepBook") == ["StepBook_title_index"])
            try db.execute(#"INSERT INTO "StepAuthor" ("id", "name") VALUES (1, 'A'), (2, 'B')"#)
            try db.execute(#"INSERT INTO "StepBook" ("id", "title", "authorId") VALUES (1, 'one', 1), (2, 'two', 2)"#)
            try db.execute(#"INSERT INTO "StepReview" ("bookId", "authorId") VALUES (1, 2)"#)
            // CASCADE: deleting author 1 deletes book 1; SET NULL: the review loses its book.
            try db.execute(#"DELETE FROM "StepAuthor" WHERE "id" = 1"#)
            #expect(try storedValue(db, #"SELECT count(*) FROM "StepBook""#) == .integer(1))
            #expect(try storedValue(db, #"SELECT "bookId" FROM "StepReview""#) == .null)
            // RESTRICT: author 2 has a review.
            let restricted = expectError(.constraint) { try db.execute(#"DELETE FROM "StepAuthor" WHERE "id" = 2"#) }
            // SQLite runs RESTRICT as a trigger: it reports SQLITE_CONSTRAINT_TRIGGER (1811), not a foreign-key code.
            #expect(restricted?.isForeignKeyViolation == (engine == .postgres), "\(String(describing: restricted))")
            #expect(restricted?.message.contains(engine == .sqlite ? "FOREIGN KEY constraint failed" : "StepReview") == true)
            // A reference to no row fails (at commit: the key is deferred).
            let dangling = expectError(.constraint) {
                try db.transaction { try db.execute(#"INSERT INTO "StepBook" ("id", "title", "authorId") VALUES (9, 'x', 99)"#) }
            }
            #expect(dangling?.isForeignKeyViolation == true)

            // A foreign key over rows that break it: a specific error, the table as it was.
            try db.execute(#"INSERT INTO "StepReview" ("bookId") VALUES (NULL)"#)
            try applyStep(db, &migrator, "loose") { context in
                try context.createTable("StepNote", columns: [ColumnSchema(name: "bookId", type: .integer, isNullable: true)])
            }
            try db.execute(#"INSERT INTO "StepNote" ("bookId") VALUES (2), (42), (43), (NULL)"#)
            let before = try db.schemaSQL()
            let error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "note key") { try $0.addForeignKey("bookId", in: "StepNote", references: "StepBook") }
            }
            #expect(error?.isForeignKeyViolation == true)
            #expect(error?.message.contains("2 row(s) of StepNote hold a bookId that no row of StepBook has") == true)
            #expect(try db.schemaSQL() == before)
            #expect(try storedValue(db, #"SELECT count(*) FROM "StepNote""#) == .integer(4))

            // A second key on the same column; a key on an unknown column; dropping one that is not there.
            var other = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "twice") { try $0.addForeignKey("authorId", in: "StepBook", references: "StepAuthor") }
            }
            #expect(other?.message.contains("StepBook.authorId has a foreign key already (to StepAuthor)") == true)
            other = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "no column") { try $0.addForeignKey("writerId", in: "StepBook", references: "StepAuthor") }
            }
            #expect(other?.message.contains("StepBook has no column 'writerId'") == true)
            other = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "no key") { try $0.dropForeignKey("bookId", in: "StepNote") }
            }
            #expect(other?.message.contains("StepNote.bookId has no foreign key to drop") == true)

            // Dropping one: the reference is free again.
            try applyStep(db, &migrator, "drop key") { try $0.dropForeignKey("authorId", in: "StepBook") }
            try db.execute(#"INSERT INTO "StepBook" ("id", "title", "authorId") VALUES (10, 'free', 77)"#)
            #expect(try db.withSchema { try $1.foreignKeys(of: "StepBook", $0) }.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func checkConstraints(engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            var migrator = Migrator()
            try applyStep(db, &migrator, "tables") { context in
                try context.createTable(StepAuthor.self)
                try context.createTable(stepBookSchema())
            }
            try applyStep(db, &migrator, "checks") { context in
                try context.addCheck("StepBook_pages_positive", on: "StepBook", "pages >= 1")
                try context.addCheck("StepAuthor_rating_range", on: "StepAuthor", "rating BETWEEN 0 AND 5")
            }
            try db.execute(#"INSERT INTO "StepBook" ("title", "pages") VALUES ('ok', 10), ('unknown', NULL)"#)
            let violation = expectError(.constraint) { try db.execute(#"INSERT INTO "StepBook" ("pages") VALUES (0)"#) }
            #expect(violation?.isCheckViolation == true)
            let model = expectError(.constraint) { try StepAuthor.create(["name": "X", "rating": 9]) }
            #expect(model?.isCheckViolation == true)

            // Later rebuilds (SQLite) keep the check: a foreign key added, a column dropped.
            try applyStep(db, &migrator, "later") { context in
                try context.addForeignKey("authorId", in: "StepBook", references: "StepAuthor")
                try context.dropColumn("title", from: "StepBook")
            }
            let kept = expectError(.constraint) { try db.execute(#"INSERT INTO "StepBook" ("pages") VALUES (-3)"#) }
            #expect(kept?.isCheckViolation == true)
            let names = try MigrationContextProbe.checkNames(db, "StepBook")
            #expect(names == ["StepBook_pages_positive"])

            // Existing rows that fail it: how many, and nothing of the step applied.
            try db.execute(#"INSERT INTO "StepBook" ("pages") VALUES (5), (6), (7)"#)
            let before = try db.schemaSQL()
            var error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "thin books") { context in
                    try context.addCheck("StepBook_thin", on: "StepBook", "pages < 6")
                }
            }
            #expect(error?.isCheckViolation == true)
            #expect(error?.message.contains("3 row(s) fail it") == true)
            #expect(try db.schemaSQL() == before)

            // The name is checked; the expression must be one expression (it is spliced as written).
            error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "bad name") { try $0.addCheck("no spaces please", on: "StepBook", "pages > 0") }
            }
            #expect(error?.message.contains("must be ASCII letters, digits and _") == true)
            for hostile in ["1); DROP TABLE \"Seed\"; --", "pages > 0) OR (1", "pages > 0 -- ", ""] {
                error = expectError(.migrationFailed) {
                    try applyStep(db, &migrator, "hostile \(hostile)") { try $0.addCheck("StepBook_hostile", on: "StepBook", hostile) }
                }
                #expect(error?.message.contains("must be one SQL expression") == true)
            }
            #expect(try db.tableNames().contains("Seed"))
            error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "unknown column") { try $0.addCheck("StepBook_isbn", on: "StepBook", "isbn <> ''") }
            }
            #expect(error?.message.contains("the CHECK expression of StepBook_isbn is not valid SQL over StepBook") == true)
            error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "same check") { try $0.addCheck("StepBook_pages_positive", on: "StepBook", "pages > 2") }
            }
            #expect(error?.message.contains("StepBook has a CHECK constraint named StepBook_pages_positive already") == true)
            error = expectError(.migrationFailed) {
                try applyStep(db, &migrator, "no check") { try $0.dropCheck("StepBook_none", from: "StepBook") }
            }
            #expect(error?.message.contains("StepBook has no CHECK constraint named 'StepBook_none'") == true)

            // Dropping a column drops the checks that use it, on both engines (PostgreSQL's rule); the others stay.
            try applyStep(db, &migrator, "status") { context in
                try context.execute("ALTER TABLE \"StepBook\" ADD COLUMN \"status\" TEXT NOT NULL DEFAULT 'draft'")
                try context.addCheck("StepBook_status_known", on: "StepBook", "status IN ('draft', 'live', 'pages')")
                try context.addCheck("StepBook_status_short", on: "StepBook", "length(\"status\") < 10")
            }
            #expect(try MigrationContextProbe.checkNames(db, "StepBook") == ["StepBook_pages_positive", "StepBook_status_known", "StepBook_status_short"])
            try applyStep(db, &migrator, "no status") { try $0.dropColumn("status", from: "StepBook") }
            #expect(try MigrationContextProbe.checkNames(db, "StepBook") == ["StepBook_pages_positive"])

            try applyStep(db, &migrator, "drop check") { try $0.dropCheck("StepBook_pages_positive", from: "StepBook") }
            try db.execute(#"INSERT INTO "StepBook" ("pages") VALUES (-3)"#)
            #expect(try MigrationContextProbe.checkNames(db, "StepBook").isEmpty)
        }
    }
}

/// Reads what a migration step can read, outside a migrator.
enum MigrationContextProbe {
    static func checkNames(_ db: Database, _ table: String) throws -> [String] {
        try db.withSchema { connection, dialect in
            try (dialect as? any SchemaStepsDialect)?.checks(of: table, connection).compactMap(\.name).sorted() ?? []
        }
    }
}
