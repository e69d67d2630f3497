@_spi(Engines) import ARCore
import ActiveRecord
import Testing

extension EngineConformance {
    /// A table of each kind of column the library declares, an index of each kind, and a
    /// belongs-to key: made with the library's own DDL (``TableSchema``).
    static func makeBookTables(_ c: ConformanceContext) throws -> TableSchema {
        let author = try TableSchema(name: "Author", columns: [ColumnSchema(name: "name", type: .text)])
        let book = try TableSchema(name: "Book", columns: [
            ColumnSchema(name: "title", type: .text, index: .index),
            ColumnSchema(name: "isbn", type: .text, isNullable: true, index: .unique),
            ColumnSchema(name: "pages", type: .integer, defaultValue: .integer(100)),
            ColumnSchema(name: "price", type: .real, isNullable: true),
            ColumnSchema(name: "cover", type: .blob, isNullable: true),
            ColumnSchema(name: "inPrint", type: .integer, kind: .boolean),
            ColumnSchema(name: "weight", type: .text, kind: .decimal),
            ColumnSchema(name: "uuid", type: .text, kind: .uuid),
            ColumnSchema(name: "authorId", type: .integer, isNullable: true, references: "Author"),
        ])
        try c.withConnection { connection in
            for table in [author, book] {
                try connection.execute(try table.createTableSQL(c.dialect))
                for column in table.columns { if let index = table.createIndexSQL(for: column) { try connection.execute(index) } }
            }
        }
        return book
    }

    /// Reading the schema.
    static let schemaChecks: [Check] = [
        check("tableNames", "tableNames() lists the database's tables, sorted, and none of the engine's own") { c in
            c.expect(try c.database.withSchema { try $1.tableNames($0) }, [], "an empty database")
            _ = try makeBookTables(c)
            try c.createTable("aardvark", [("n", .integer, "")])
            c.expect(try c.database.withSchema { try $1.tableNames($0) }, ["Author", "Book", "aardvark"].sorted(), "three tables")
            c.expect(try c.database.tableNames(), ["Author", "Book", "aardvark"].sorted(), "Database.tableNames()")
        },
        check("columns", "columns(of:) reads each column's name in order, nullability, primary key and a type that the dialect matches to the declared one") { c in
            let book = try makeBookTables(c)
            let found = try c.database.withSchema { try $1.columns(of: "Book", $0) }
            c.expect(found.map(\.name), book.allColumnNames, "the names in order")
            c.expect(found.map(\.isPrimaryKey), found.indices.map { $0 == 0 }, "only id is the primary key")
            for (description, column) in zip(found.dropFirst(3), book.columns) {
                c.expect(description.isNullable, column.isNullable, "\(column.name) nullable")
                c.expect(c.dialect.typeMatches(description.type, column.type, column.kind), true,
                         "\(column.name): the declared type \(description.type) matches \(column.type) \(column.kind)")
                let (type, kind) = c.dialect.storage(ofDeclaredType: description.type)
                c.expect(type, column.type, "\(column.name): the storage of \(description.type)")
                c.expect(kind == column.kind || kind == .plain, true, "\(column.name): the kind of \(description.type) is \(kind)")
            }
            c.expect(found.first { $0.name == "pages" }?.defaultSQL != nil, true, "pages has a default")
            c.expect(found.first { $0.name == "price" }?.defaultSQL, nil, "price has no default")
            c.expect(try c.database.withSchema { try $1.columns(of: "Missing", $0) }, [], "no such table")
        },
        check("indexes", "indexes(of:) reads each index's name, uniqueness, columns and partiality, a UNIQUE constraint's too, not the primary key's") { c in
            _ = try makeBookTables(c)
            try c.execute(#"CREATE INDEX "Book_cheap" ON "Book" ("price", "pages") WHERE "price" < 10"#)
            let found = try c.database.withSchema { try $1.indexes(of: "Book", $0) }.sorted { $0.name < $1.name }
            c.expect(found, [
                IndexDescription(name: "Book_cheap", isUnique: false, columns: ["price", "pages"], isPartial: true),
                IndexDescription(name: "Book_isbn_unique", isUnique: true, columns: ["isbn"]),
                IndexDescription(name: "Book_title_index", isUnique: false, columns: ["title"]),
            ], "the indexes")
            try c.createTable("tags", [("name", .text, "UNIQUE")])
            let constraint = try c.database.withSchema { try $1.indexes(of: "tags", $0) }
            c.expect(constraint.map(\.columns), [["name"]], "a UNIQUE constraint's index")
            c.expect(constraint.map(\.isUnique), [true], "a UNIQUE constraint's index is unique")
            c.expect(try c.database.withSchema { try $1.indexes(of: "Missing", $0) }, [], "no such table")
        },
        check("foreignKeys", "foreignKeys(of:) reads each referencing column, the table and the column it references") { c in
            _ = try makeBookTables(c)
            let found = try c.database.withSchema { try $1.foreignKeys(of: "Book", $0) }
            c.expect(found, [ForeignKeyDescription(column: "authorId", table: "Author", referencedColumn: "id")], "Book's")
            c.expect(try c.database.withSchema { try $1.foreignKeys(of: "Author", $0) }, [], "Author's")
        },
    ]

    /// Runs `body` as a versioned migration step runs: around the engine's needs, in a transaction.
    static func migrationStep(_ c: ConformanceContext, _ body: (Connection, any SQLDialect) throws -> Void) throws {
        try c.database.aroundMigrationStep {
            try c.database.transaction {
                try c.database.withSchema { connection, dialect in
                    for statement in dialect.schemaLockSQL() { try connection.execute(statement) }
                    try body(connection, dialect)
                }
            }
        }
    }

    /// Changing the schema (versioned migrations' steps).
    static let migrationChecks: [Check] = [
        check("renameIndex", "renameIndex() leaves an index of the same columns and uniqueness under the new name") { c in
            _ = try makeBookTables(c)
            let old = try #require(try c.database.withSchema { try $1.indexes(of: "Book", $0) }.first { $0.name == "Book_isbn_unique" })
            try migrationStep(c) { try $1.renameIndex(old, to: "Book_isbn_renamed", on: "Book", columns: ["isbn"], $0) }
            let found = try c.database.withSchema { try $1.indexes(of: "Book", $0) }.sorted { $0.name < $1.name }
            c.expect(found.map(\.name), ["Book_isbn_renamed", "Book_title_index"], "the index names")
            c.expect(found.first?.isUnique, true, "still unique")
            c.expect(found.first?.columns, ["isbn"], "the same columns")
        },
        check("dropColumn", "dropColumn() removes the column and keeps every row, the other columns' values, indexes and foreign keys") { c in
            let book = try makeBookTables(c)
            let author = try c.insert(into: "Author", ["name": .text("Ann")])
            try c.insert(into: "Book", ["title": .text("A"), "price": .real(9.5), "authorId": .integer(author), "isbn": .text("1")])
            try c.insert(into: "Book", ["title": .text("B"), "price": .null])
            try migrationStep(c) { try $1.dropColumn("price", from: "Book", $0) }
            let columns = try c.database.withSchema { try $1.columns(of: "Book", $0) }.map(\.name)
            c.expect(columns, book.allColumnNames.filter { $0 != "price" }, "the columns")
            c.expect(try c.rows(#"SELECT "id", "title", "authorId" FROM "Book" ORDER BY "id""#),
                     [[.integer(1), .text("A"), .integer(author)], [.integer(2), .text("B"), .null]], "the rows")
            c.expect(try c.database.withSchema { try $1.indexes(of: "Book", $0) }.map(\.name).sorted(),
                     ["Book_isbn_unique", "Book_title_index"], "the indexes")
            c.expect(try c.database.withSchema { try $1.foreignKeys(of: "Book", $0) }.map(\.column), ["authorId"], "the foreign keys")
            c.expect(try c.insert(into: "Book", ["title": .text("C")]), 3, "the next id")
        },
        check("changeColumnType", "changeColumnType() gives the column the new type and converts its values: integers to text and back") { c in
            try c.createTable("measures", [("n", .integer, ""), ("t", .text, "")])
            try c.insert(into: "measures", ["n": .integer(42), "t": .text("7")])
            try c.insert(into: "measures", ["n": .null, "t": .null])
            try migrationStep(c) { connection, dialect in
                try dialect.changeColumnType("n", in: "measures", to: .text, .plain, connection)
                try dialect.changeColumnType("t", in: "measures", to: .integer, .plain, connection)
            }
            let columns = try c.database.withSchema { try $1.columns(of: "measures", $0) }
            c.expect(columns.map(\.name), ["id", "n", "t"], "the columns keep their order")
            c.expect(columns.dropFirst().map { c.dialect.storage(ofDeclaredType: $0.type).0 }, [.text, .integer], "the new types")
            c.expect(try c.rows(#"SELECT "n", "t" FROM "measures" ORDER BY "id""#),
                     [[.text("42"), .integer(7)], [.null, .null]], "the converted values")
        },
        check("clearRestartsIds", "clear() deletes every row of the tables, related by foreign keys too, and the next row of each gets id 1") { c in
            _ = try makeBookTables(c)
            let author = try c.insert(into: "Author", ["name": .text("Ann")])
            for title in ["A", "B"] { try c.insert(into: "Book", ["title": .text(title), "authorId": .integer(author)]) }
            try c.database.transaction { try c.database.withSchema { try $1.clear(["Book", "Author"], $0) } }
            c.expect(try c.scalar(#"SELECT count(*) FROM "Book""#), .integer(0), "Book's rows")
            c.expect(try c.insert(into: "Author", ["name": .text("Bo")]), 1, "Author's next id")
            c.expect(try c.insert(into: "Book", ["title": .text("C")]), 1, "Book's next id")
            try c.database.transaction {
                try c.database.withSchema { try $1.clear(["Book"], $0) }
                throw Rollback()
            }
            c.expect(try c.scalar(#"SELECT count(*) FROM "Book""#), .integer(1), "a clear rolled back")
        },
        check("migrationsTable", "migrationsTableSQL() makes a table whose rows migrationsOrder returns in the order they were recorded") { c in
            try c.execute(c.dialect.migrationsTableSQL("schema_log"))
            try c.execute(c.dialect.migrationsTableSQL("schema_log"))
            for name in ["b", "a", "c"] {
                try c.execute(#"INSERT INTO "schema_log" ("name", "appliedAt") VALUES (?, ?)"#, [.text(name), .real(1)])
            }
            c.expect(try c.rows(#"SELECT "name" FROM "schema_log" ORDER BY "# + c.dialect.migrationsOrder).map { $0[0] },
                     [.text("b"), .text("a"), .text("c")], "the order")
            c.expectError("a name recorded twice", matching: \.isUniqueViolation) {
                try c.execute(#"INSERT INTO "schema_log" ("name", "appliedAt") VALUES (?, ?)"#, [.text("a"), .real(2)])
            }
        },
    ]
}
