@_spi(Engines) import ARCore
import ARConformance
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Testing

/// A poet, whose poems belong to it (the compiler tests' joined model).
final class Poet: Model {
    @Column var name: String = ""
}

/// The compiler tests' queried model: a column of each storage class, an optional one, a unique
/// one and a belongs-to key by the naming convention (`poetId`).
final class Poem: Model {
    @Column var title: String = ""
    @Column var subtitle: String? = nil
    @Column var pages: Int = 0
    @Column var price: Double = 0
    @Column(index: .unique) var isbn: String? = nil
    @Column var poetId: Int64? = nil
}

/// A dialect the compiler writes SQL in: where the tests name the engines' dialects.
enum CompiledDialect: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    var dialect: any SQLDialect {
        switch self {
        case .sqlite: SQLiteDialect()
        case .postgres: postgreSQLDialect
        }
    }
}

/// Issue 32, point 4: the SQL each query form compiles to, on each dialect, checked as text
/// without a database (GRDB's `assertEqualSQL`, Fluent's dummy database): the calls run on
/// ARConformance's `RecordingEngine`, which runs nothing, and its trace is compared.
@Suite("The SQL compiler, as text")
struct SQLCompilerTests {
    /// `"Poem"."id", …, "Poem"."poetId"`: what a record query selects.
    static let poem = #""Poem"."id", "Poem"."createdAt", "Poem"."updatedAt", "Poem"."title", "Poem"."subtitle", "Poem"."pages", "Poem"."price", "Poem"."isbn", "Poem"."poetId""#
    /// The same, unqualified (finders).
    static let poemColumns = #""id", "createdAt", "updatedAt", "title", "subtitle", "pages", "price", "isbn", "poetId""#
    static let insertColumns = #"("createdAt", "updatedAt", "title", "subtitle", "pages", "price", "isbn", "poetId") VALUES (?, ?, ?, ?, ?, ?, ?, ?)"#
    static let ascii = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'"

    /// The statements `body` runs on a database of `dialect` that runs nothing, once the models'
    /// tables are made; with `transactions: false`, without `BEGIN`, `COMMIT`, savepoints and
    /// rollbacks. `body`'s error is ignored: the engine returns no rows, which some calls refuse
    /// after their SQL ran.
    static func recordedSQL(_ dialect: CompiledDialect, transactions: Bool = false, _ body: () throws -> Void) throws -> [String] {
        let database = try Database(RecordingEngine.location(dialect.dialect))
        database.logger = nil
        let recorder = SQLRecorder(database)
        return try database.use {
            _ = try Poet.query().fetch()
            _ = try Poem.query().fetch()
            recorder.reset()
            _ = try? body()
            let verbs = ["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"]
            return recorder.all.filter { sql in transactions || !verbs.contains { sql.hasPrefix($0) } }
        }
    }

    /// Expects `body` to run `sqlite` on SQLite's dialect and `postgres` (the same when `nil`) on PostgreSQL's.
    static func expectSQL(
        _ sqlite: [String], postgres: [String]? = nil, transactions: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) throws {
        for dialect in CompiledDialect.allCases {
            let expected = dialect == .sqlite ? sqlite : postgres ?? sqlite
            let recorded = try recordedSQL(dialect, transactions: transactions, body)
            #expect(recorded == expected, "on \(dialect.rawValue)", sourceLocation: sourceLocation)
        }
    }

    /// ``expectSQL(_:postgres:transactions:sourceLocation:_:)`` for one statement.
    static func expectSQL(
        _ sqlite: String, postgres: String? = nil, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) throws {
        try expectSQL([sqlite], postgres: postgres.map { [$0] }, sourceLocation: sourceLocation, body)
    }

    /// `SELECT <poem> FROM "Poem" <rest>`.
    static func select(_ rest: String) -> String { "SELECT \(poem) FROM \"Poem\" \(rest)" }

    // MARK: Finders and conditions

    @Test func findAndAll() throws {
        try Self.expectSQL(#"SELECT \#(Self.poemColumns) FROM "Poem" WHERE "id" = ?"#) { _ = try Poem.find(1) }
        try Self.expectSQL(#"SELECT \#(Self.poemColumns) FROM "Poem" ORDER BY "id""#) { _ = try Poem.all() }
        try Self.expectSQL(Self.select(#"ORDER BY "Poem"."id" ASC"#)) { _ = try Poem.query().fetch() }
    }

    @Test func comparisonsAndLists() throws {
        try Self.expectSQL(Self.select(#"WHERE ("Poem"."title" = ?) ORDER BY "Poem"."id" ASC"#)) {
            _ = try Poem.query().where("title = %@", "x").fetch()
        }
        try Self.expectSQL(Self.select(#"WHERE ("Poem"."id" IN (?, ?, ?)) ORDER BY "Poem"."id" ASC"#)) {
            _ = try Poem.query().where("id IN %@", [1, 2, 3]).fetch()
        }
        try Self.expectSQL(Self.select(#"WHERE ("Poem"."title" IN (?, ?)) ORDER BY "Poem"."id" ASC"#)) {
            _ = try Poem.query().where("title", .in(["a", "b"])).fetch()
        }
        // Two conditions are ANDed, each in parentheses.
        try Self.expectSQL(Self.select(#"WHERE ("Poem"."pages" >= ?) AND ("Poem"."price" < ?) ORDER BY "Poem"."id" ASC"#)) {
            _ = try Poem.query().where("pages >= %@", 1).where("price", .lessThan(2.5)).fetch()
        }
    }

    @Test func like() throws {
        let lowered = { (text: String) in "translate(CAST(\(text) AS TEXT), \(Self.ascii))" }
        try Self.expectSQL(
            Self.select(#"WHERE ("Poem"."title" LIKE ?) ORDER BY "Poem"."id" ASC"#),
            postgres: Self.select(#"WHERE (\#(lowered(#""Poem"."title""#)) LIKE \#(lowered("?")) ESCAPE '') ORDER BY "Poem"."id" ASC"#)
        ) { _ = try Poem.query().where("title LIKE %@", "a%").fetch() }
        try Self.expectSQL(
            Self.select(#"WHERE ("Poem"."title" NOT LIKE ?) ORDER BY "Poem"."id" ASC"#),
            postgres: Self.select(#"WHERE (\#(lowered(#""Poem"."title""#)) NOT LIKE \#(lowered("?")) ESCAPE '') ORDER BY "Poem"."id" ASC"#)
        ) { _ = try Poem.query().where("title NOT LIKE %@", "a%").fetch() }
    }

    @Test func null() throws {
        let isNull = Self.select(#"WHERE ("Poem"."subtitle" IS NULL) ORDER BY "Poem"."id" ASC"#)
        try Self.expectSQL(isNull) { _ = try Poem.query().where("subtitle = %@", nil).fetch() }
        try Self.expectSQL(isNull) { _ = try Poem.query().where("subtitle", .isNull).fetch() }
        try Self.expectSQL(isNull) { _ = try Poem.query().where("subtitle IS NULL").fetch() }
        try Self.expectSQL(Self.select(#"WHERE ("Poem"."subtitle" IS NOT NULL) ORDER BY "Poem"."id" ASC"#)) {
            _ = try Poem.query().where("subtitle != %@", nil).fetch()
        }
    }

    @Test func andOrNot() throws {
        try Self.expectSQL(
            Self.select(#"WHERE (("Poem"."pages" > ? AND "Poem"."pages" <= ?) OR NOT ("Poem"."title" = ?)) ORDER BY "Poem"."id" ASC"#)
        ) { _ = try Poem.query().where("(pages > %@ AND pages <= %@) OR NOT title = %@", 1, 2, "x").fetch() }
    }

    @Test func keyPathConditions() throws {
        try Self.expectSQL(Self.select(#"WHERE ("Poem"."pages" > ? AND "Poem"."title" = ?) ORDER BY "Poem"."id" ASC"#)) {
            _ = try Poem.query().where(\.pages > 3 && \.title == "x").fetch()
        }
        try Self.expectSQL(Self.select(#"WHERE ("Poem"."pages" < ? OR "Poem"."price" >= ?) ORDER BY "Poem"."id" ASC"#)) {
            _ = try Poem.query().where(\.pages < 3 || \.price >= 1.5).fetch()
        }
        try Self.expectSQL(Self.select(#"WHERE ("Poem"."subtitle" IS NULL) ORDER BY "Poem"."subtitle" DESC"#),
                           postgres: Self.select(#"WHERE ("Poem"."subtitle" IS NULL) ORDER BY "Poem"."subtitle" DESC NULLS LAST"#)) {
            _ = try Poem.query().where(\.subtitle, .isNull).order(by: \.subtitle, ascending: false).fetch()
        }
    }

    // MARK: Order, limit, offset

    @Test func orderPlacesNullsAsSQLiteDoes() throws {
        try Self.expectSQL(
            Self.select(#"ORDER BY "Poem"."subtitle" ASC, "Poem"."pages" DESC"#),
            postgres: Self.select(#"ORDER BY "Poem"."subtitle" ASC NULLS FIRST, "Poem"."pages" DESC NULLS LAST"#)
        ) { _ = try Poem.query().order(by: "subtitle").order(by: "pages", ascending: false).fetch() }
        try Self.expectSQL(Self.select("ORDER BY random()")) { _ = try Poem.query().orderRandomly().fetch() }
    }

    @Test func limitAndOffset() throws {
        let limited = Self.select(#"ORDER BY "Poem"."id" ASC LIMIT ? OFFSET ?"#)
        try Self.expectSQL(limited) { _ = try Poem.query().limit(10).offset(20).fetch() }
        try Self.expectSQL(limited) { _ = try Poem.query().offset(20).fetch() }
        try Self.expectSQL(limited) { _ = try Poem.query().first() }
        try Self.expectSQL(Self.select(#"ORDER BY "Poem"."id" DESC LIMIT ? OFFSET ?"#),
                           postgres: Self.select(#"ORDER BY "Poem"."id" DESC NULLS LAST LIMIT ? OFFSET ?"#)) {
            _ = try Poem.query().last()
        }
    }

    // MARK: Joins, distinct, groups

    @Test func joins() throws {
        try Self.expectSQL(Self.select(#"JOIN "Poet" ON "Poem"."poetId" = "Poet"."id" WHERE ("Poet"."name" = ?) ORDER BY "Poem"."id" ASC"#)) {
            _ = try Poem.query().join(Poet.self).where("Poet.name = %@", "Ann").fetch()
        }
        let poet = #""Poet"."id", "Poet"."createdAt", "Poet"."updatedAt", "Poet"."name""#
        try Self.expectSQL(#"SELECT \#(Self.poem), \#(poet) FROM "Poem" LEFT JOIN "Poet" ON "Poem"."poetId" = "Poet"."id" ORDER BY "Poem"."id" ASC"#) {
            _ = try Poem.query().join(Poet.self, .left, on: "poetId", "id").fetchJoined()
        }
    }

    @Test func distinct() throws {
        try Self.expectSQL(#"SELECT DISTINCT "Poem"."id", "Poem"."createdAt", "Poem"."updatedAt", "Poem"."title" FROM "Poem" ORDER BY "Poem"."id" ASC"#) {
            _ = try Poem.query().distinct().only("title").fetch()
        }
        try Self.expectSQL(#"SELECT count(*) FROM (SELECT DISTINCT \#(Self.poem) FROM "Poem") AS activerecord_rows"#) {
            _ = try Poem.query().distinct().count()
        }
    }

    @Test func groupAndHaving() throws {
        try Self.expectSQL(#"SELECT "Poem"."poetId", count(*) FROM "Poem" GROUP BY "Poem"."poetId" HAVING (count(*) > ?)"#) {
            _ = try Poem.query().group(by: "poetId").having("count(*) > %@", 1).values("poetId, count(*)")
        }
        try Self.expectSQL(#"SELECT count(*) FROM (SELECT 1 FROM "Poem" GROUP BY "Poem"."poetId") AS activerecord_rows"#) {
            _ = try Poem.query().group(by: "poetId").count()
        }
    }

    // MARK: Aggregates and plucks

    @Test func aggregates() throws {
        try Self.expectSQL(#"SELECT count(*) FROM "Poem" WHERE ("Poem"."pages" > ?)"#) { _ = try Poem.query().where("pages > %@", 1).count() }
        try Self.expectSQL(#"SELECT EXISTS (SELECT \#(Self.poem) FROM "Poem")"#) { _ = try Poem.query().exists() }
        try Self.expectSQL(#"SELECT sum("Poem"."pages") FROM "Poem""#) { _ = try Poem.query().sum(\.pages) }
        try Self.expectSQL(#"SELECT total("Poem"."pages") FROM "Poem""#,
                           postgres: #"SELECT CAST(coalesce(sum("Poem"."pages"), 0) AS DOUBLE PRECISION) FROM "Poem""#) {
            _ = try Poem.query().sum("pages")
        }
        try Self.expectSQL(#"SELECT avg("Poem"."price") FROM "Poem""#,
                           postgres: #"SELECT CAST(avg("Poem"."price") AS DOUBLE PRECISION) FROM "Poem""#) {
            _ = try Poem.query().average(\.price)
        }
        try Self.expectSQL(#"SELECT min("Poem"."price") FROM "Poem""#) { _ = try Poem.query().min(\.price) }
        try Self.expectSQL(#"SELECT max("Poem"."title") FROM "Poem""#) { _ = try Poem.query().max("title") }
        // Over a limit: the aggregate runs over the query as a subquery.
        try Self.expectSQL(#"SELECT sum(value) FROM (SELECT "Poem"."pages" AS value FROM "Poem" LIMIT ? OFFSET ?) AS activerecord_rows"#) {
            _ = try Poem.query().limit(5).sum(\.pages)
        }
    }

    @Test func pluck() throws {
        try Self.expectSQL(#"SELECT "Poem"."title", "Poem"."pages" FROM "Poem" WHERE ("Poem"."pages" > ?) ORDER BY "Poem"."id" ASC"#) {
            _ = try Poem.query().where("pages > %@", 1).pluck(\.title, \.pages)
        }
    }

    // MARK: Writes

    @Test func updateAllAndDeleteAll() throws {
        let matching = #"WHERE "id" IN (SELECT "Poem"."id" FROM "Poem" WHERE ("Poem"."pages" > ?))"#
        try Self.expectSQL(#"UPDATE "Poem" SET "pages" = ?, "title" = ?, "updatedAt" = ? \#(matching)"#) {
            _ = try Poem.query().where("pages > %@", 1).updateAll(["title": "x", "pages": 2])
        }
        try Self.expectSQL(#"DELETE FROM "Poem" \#(matching)"#) { _ = try Poem.query().where("pages > %@", 1).deleteAll() }
    }

    @Test func insertUpdateAndDeleteOfARecord() throws {
        let insert = #"INSERT INTO "Poem" \#(Self.insertColumns)"#
        try Self.expectSQL([insert, #"UPDATE "Poem" SET "pages" = ?, "updatedAt" = ? WHERE "id" = ?"#, #"DELETE FROM "Poem" WHERE "id" = ?"#],
                           postgres: [insert + #" RETURNING "id""#, #"UPDATE "Poem" SET "pages" = ?, "updatedAt" = ? WHERE "id" = ?"#,
                                      #"DELETE FROM "Poem" WHERE "id" = ?"#]) {
            let poem = try Poem(["title": "x"])
            try poem.save()
            poem.pages = 3
            try poem.save()
            try poem.destroy()
        }
    }

    @Test func upsert() throws {
        let upsert = #"INSERT INTO "Poem" \#(Self.insertColumns) ON CONFLICT ("isbn") DO UPDATE SET "title" = excluded."title", "subtitle" = excluded."subtitle", "pages" = excluded."pages", "price" = excluded."price", "poetId" = excluded."poetId", "updatedAt" = excluded."updatedAt" RETURNING \#(Self.poemColumns)"#
        try Self.expectSQL(upsert, postgres: upsert + ", (xmax = 0)") {
            _ = try Poem(["title": "x", "isbn": "1"]).upsert(onConflict: ["isbn"])
        }
    }

    // MARK: Transactions and locks

    @Test func rowLockAndTransactions() throws {
        try Self.expectSQL(
            ["BEGIN IMMEDIATE", Self.select(#"WHERE ("Poem"."id" = ?) ORDER BY "Poem"."id" ASC"#), "SAVEPOINT activerecord_1",
             "ROLLBACK TO activerecord_1", "RELEASE activerecord_1", "SAVEPOINT activerecord_1", "RELEASE activerecord_1", "COMMIT"],
            postgres: ["BEGIN", Self.select(#"WHERE ("Poem"."id" = ?) ORDER BY "Poem"."id" ASC FOR UPDATE OF "Poem""#),
                       "SAVEPOINT activerecord_1", "ROLLBACK TO activerecord_1", "RELEASE activerecord_1", "SAVEPOINT activerecord_1",
                       "RELEASE activerecord_1", "COMMIT"],
            transactions: true
        ) {
            try Database.current.transaction {
                _ = try Poem.query().where("id = %@", 1).lock().fetch()
                try Database.current.transaction { throw Rollback() }
                try Database.current.transaction {}
            }
        }
        try Self.expectSQL(["BEGIN IMMEDIATE", Self.select(#"ORDER BY "Poem"."id" ASC LIMIT ? OFFSET ?"#), "COMMIT"],
                           postgres: ["BEGIN ISOLATION LEVEL SERIALIZABLE",
                                      Self.select(#"ORDER BY "Poem"."id" ASC LIMIT ? OFFSET ? FOR UPDATE OF "Poem" SKIP LOCKED"#), "COMMIT"],
                           transactions: true) {
            try Database.current.transaction(isolation: .serializable) { _ = try Poem.query().limit(1).lock(.skipLocked).fetch() }
        }
    }

    // MARK: The dialect's DDL

    @Test(arguments: CompiledDialect.allCases) func createTable(dialect: CompiledDialect) throws {
        let database = try Database(RecordingEngine.location(dialect.dialect))
        database.logger = nil
        let recorder = SQLRecorder(database)
        try database.use { _ = try Poem.query().fetch() }
        let ddl = recorder.all.filter { $0.hasPrefix("CREATE") }
        switch dialect {
        case .sqlite:
            #expect(ddl == [
                #"CREATE TABLE IF NOT EXISTS "Poem" ("id" INTEGER PRIMARY KEY, "createdAt" REAL, "updatedAt" REAL, "title" TEXT NOT NULL DEFAULT '', "subtitle" TEXT, "pages" INTEGER NOT NULL DEFAULT 0, "price" REAL NOT NULL DEFAULT 0.0, "isbn" TEXT, "poetId" INTEGER)"#,
                #"CREATE UNIQUE INDEX IF NOT EXISTS "Poem_isbn_unique" ON "Poem" ("isbn")"#,
            ])
        case .postgres:
            #expect(ddl == [
                #"CREATE TABLE IF NOT EXISTS "Poem" ("id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "createdAt" DOUBLE PRECISION, "updatedAt" DOUBLE PRECISION, "title" TEXT NOT NULL DEFAULT '', "subtitle" TEXT, "pages" BIGINT NOT NULL DEFAULT 0, "price" DOUBLE PRECISION NOT NULL DEFAULT 0.0, "isbn" TEXT, "poetId" BIGINT)"#,
                #"CREATE UNIQUE INDEX IF NOT EXISTS "Poem_isbn_unique" ON "Poem" ("isbn")"#,
            ])
        }
        // The whole migration of a new table runs in one transaction (PostgreSQL's under the schema lock).
        let expectedStart = dialect == .sqlite ? ["BEGIN IMMEDIATE"] : ["BEGIN", "SELECT pg_advisory_xact_lock(1095914307)"]
        #expect(Array(recorder.all.prefix(expectedStart.count)) == expectedStart)
    }

    @Test(arguments: CompiledDialect.allCases) func addColumn(dialect: CompiledDialect) throws {
        let database = try Database(RecordingEngine.location(dialect.dialect), automaticMigrations: false)
        database.logger = nil
        let recorder = SQLRecorder(database)
        let schema = try TableSchema(name: "Poem", columns: [
            ColumnSchema(name: "rating", type: .real, isNullable: true),
            ColumnSchema(name: "flag", type: .integer, kind: .boolean, defaultValue: .integer(1), references: nil),
            ColumnSchema(name: "poetId", type: .integer, isNullable: true, index: .index, references: "Poet"),
        ])
        let drift = TableDrift(
            table: "Poem", tableIsMissing: false, missingColumns: ["rating", "flag", "poetId"], missingIndexes: ["Poem_poetId_index"],
            extraColumns: [], typeMismatches: [], missingForeignKeys: [])
        try database.withConnection { try schema.applyAdditions(drift, in: $0) }
        let (real, boolean, integer, yes) = dialect == .sqlite
            ? ("REAL", "INTEGER", "INTEGER", "1") : ("DOUBLE PRECISION", "BOOLEAN", "BIGINT", "TRUE")
        #expect(recorder.all == [
            #"ALTER TABLE "Poem" ADD COLUMN "rating" \#(real)"#,
            #"ALTER TABLE "Poem" ADD COLUMN "flag" \#(boolean) NOT NULL DEFAULT \#(yes)"#,
            #"ALTER TABLE "Poem" ADD COLUMN "poetId" \#(integer) REFERENCES "Poet"("id") DEFERRABLE INITIALLY DEFERRED"#,
            #"CREATE INDEX IF NOT EXISTS "Poem_poetId_index" ON "Poem" ("poetId")"#,
        ])
    }
}
