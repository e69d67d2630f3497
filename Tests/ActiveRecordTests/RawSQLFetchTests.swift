import ActiveRecord
import Foundation
import Testing

final class RawMember: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @Column("nick_name") var nickname: String? = nil
}

/// Records decoded from a raw query, by column name.
@Suite("Models from raw SQL")
struct RawSQLFetchTests {
    static func seed() throws {
        for (name, age) in [("Alex", 31), ("Sam", 25), ("Kim", 44)] { try RawMember.create(["name": name, "age": age]) }
    }

    @Test(arguments: TestEngine.all) func fetchDecodesByNameAndRecordsAreSavedOnes(_ engine: TestEngine) throws {
        try withDatabase(engine) { db in
            try Self.seed()
            // Columns in another order than the table's, an extra one ignored.
            let older = try RawMember.fetch(
                sql: #"SELECT "age", 1 AS "extra", "nick_name", "name", "updatedAt", "createdAt", "id" FROM "RawMember" WHERE "age" > ? ORDER BY "age""#,
                arguments: [.integer(30)])
            #expect(older.map(\.name) == ["Alex", "Kim"])
            #expect(older.map(\.age) == [31, 44])
            let alex = try #require(older.first)
            let alexID = try #require(alex.id)
            let stored = try #require(try RawMember.find(alexID))
            #expect(alex.createdAt == stored.createdAt)
            #expect(!alex.hasChanges)
            alex.age = 32
            let statements = try SQLRecorder(db).during { try alex.save() }
            db.trace(nil)
            #expect(statements.contains { $0.hasPrefix("UPDATE") && $0.contains(#""age""#) && !$0.contains(#""name""#) })
            #expect(try RawMember.find(alexID)?.age == 32)
        }
    }

    @Test(arguments: TestEngine.all) func fetchWithInterpolationBindsItsValues(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            try Self.seed()
            let minimum = 30
            let hostile = "Alex' OR '1'='1"
            #expect(try RawMember.fetch(sql: "SELECT * FROM \(ident: "RawMember") WHERE \"age\" > \(minimum) ORDER BY \"age\"").map(\.name) == ["Alex", "Kim"])
            #expect(try RawMember.fetch(sql: "SELECT * FROM \"RawMember\" WHERE \"name\" = \(hostile)").isEmpty)
            // A literal without interpolation: the SQL form, the same text.
            #expect(try RawMember.fetch(sql: #"SELECT * FROM "RawMember" WHERE "age" < 30"#).map(\.name) == ["Sam"])
        }
    }

    @Test(arguments: TestEngine.all) func aMissingColumnIsNamed(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            try Self.seed()
            let age = expectError(.unknownColumn) {
                _ = try RawMember.fetch(sql: #"SELECT "id", "createdAt", "updatedAt", "name", "nick_name" FROM "RawMember""#)
            }
            #expect(age?.message.contains(#"RawMember.fetch(sql:): the query's result has no column "age""#) == true)
            #expect(age?.message.contains("SELECT *") == true)
            let id = expectError(.unknownColumn) { _ = try RawMember.fetch(sql: #"SELECT "name", "age" FROM "RawMember""#) }
            #expect(id?.message.contains(#"no column "id""#) == true)
            let renamed = expectError(.unknownColumn) {
                _ = try RawMember.fetch(sql: #"SELECT "id", "createdAt", "updatedAt", "name", "age" FROM "RawMember""#)
            }
            #expect(renamed?.message.contains(#""nick_name" (property nickname)"#) == true)
        }
    }

    @Test(arguments: TestEngine.all) func aMistypedColumnIsNamed(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            try Self.seed()
            let error = expectError(.typeMismatch) {
                _ = try RawMember.fetch(sql: #"SELECT "id", "createdAt", "updatedAt", "name", 'old' AS "age", "nick_name" FROM "RawMember""#)
            }
            #expect(error?.message.contains(#"RawMember.fetch(sql:): column "age""#) == true)
            #expect(error?.message.contains("CAST") == true)
            let id = expectError(.typeMismatch) {
                _ = try RawMember.fetch(sql: #"SELECT 'x' AS "id", "createdAt", "updatedAt", "name", "age", "nick_name" FROM "RawMember""#)
            }
            #expect(id?.message.contains(#"column "id""#) == true)
        }
    }

    @Test(arguments: TestEngine.all) func aJoinSelectsOneModelsColumns(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            try Self.seed()
            try Scorer.create(["name": "Kim", "score": 9])
            let scored = try RawMember.fetch(sql: #"SELECT "RawMember".* FROM "RawMember" JOIN "Scorer" ON "Scorer"."name" = "RawMember"."name""#)
            #expect(scored.map(\.name) == ["Kim"])
        }
    }
}
