import ActiveRecord
import ARMigrations
import Foundation
import Testing

final class JoinTeam: Model {
    @Column var title: String = ""
}

final class JoinMember: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @BelongsTo var team: JoinTeam?
}

/// Raw SQL after review: a join's columns of one name are never guessed between, and a string
/// literal given an arguments array is still an `SQL`, its interpolated values bound.
@Suite("Raw SQL: joins and arguments arrays")
struct SQLArgumentsAndJoinsTests {
    /// Three teams and one member of the third: the member's id (1) is not its team's (3).
    static func seed() throws -> (team: JoinTeam, member: JoinMember) {
        _ = try JoinTeam.create(["title": "A"])
        _ = try JoinTeam.create(["title": "B"])
        let team = try JoinTeam.create(["title": "C"])
        let member = JoinMember()
        member.name = "Kim"
        member.age = 28
        member.team = team
        try member.save()
        #expect(member.id == 1 && team.id == 3)
        return (team, member)
    }

    // MARK: Point 1: a column of the model twice in the result

    @Test(arguments: TestEngine.all) func aJoinsSecondIdIsAnErrorNotTheRecordsId(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let (_, member) = try Self.seed()
            let error = expectError(.misuse) {
                _ = try JoinMember.fetch(sql: #"SELECT * FROM "JoinTeam" JOIN "JoinMember" ON "JoinMember"."joinTeamId" = "JoinTeam"."id""#)
            }
            #expect(error?.message.contains(#"JoinMember.fetch(sql:): the query's result has 2 columns named "id""#) == true)
            #expect(error?.message.contains(#"SELECT "JoinMember".*"#) == true)
            // The team's timestamps too, when the ids are told apart.
            let timestamps = expectError(.misuse) {
                _ = try JoinMember.fetch(sql: #"SELECT "JoinMember".*, "JoinTeam"."createdAt" FROM "JoinTeam" JOIN "JoinMember" ON "JoinMember"."joinTeamId" = "JoinTeam"."id""#)
            }
            #expect(timestamps?.message.contains(#"2 columns named "createdAt""#) == true)
            // The way the message gives: the model's columns by its table, the others renamed.
            let fetched = try JoinMember.fetch(
                sql: #"SELECT "JoinMember".*, "JoinTeam"."id" AS "teamId" FROM "JoinTeam" JOIN "JoinMember" ON "JoinMember"."joinTeamId" = "JoinTeam"."id""#)
            let kim = try #require(fetched.first)
            #expect(kim.id == member.id)
            kim.age = 29
            try kim.save()
            #expect(try JoinMember.find(1)?.age == 29)
            #expect(try JoinTeam.find(3)?.title == "C")
        }
    }

    @Test(arguments: TestEngine.all) func namesDifferingOnlyInCaseAreTheSameName(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            _ = try Self.seed()
            // SQLite's names are case-insensitive, and the portable naming rule folds them: "ID"
            // is "id" there, so that the same query means the same on both engines.
            let error = expectError(.misuse) { _ = try JoinMember.fetch(sql: #"SELECT "JoinMember".*, 7 AS "ID" FROM "JoinMember""#) }
            #expect(error?.message.contains(#"#1 "id""#) == true)
            #expect(error?.message.contains(#""ID""#) == true)
            // One column of the name, in another case, is the column (an engine's folded alias).
            let folded = try JoinMember.fetch(
                sql: #"SELECT "id", "createdAt" AS createdat, "updatedAt", "name", "age", "joinTeamId" FROM "JoinMember""#)
            #expect(folded.map(\.name) == ["Kim"])
        }
    }

    // MARK: Point 2: a literal with an arguments array is an SQL

    @Test(arguments: TestEngine.all) func aLiteralWithArgumentsNeverSplices(_ engine: TestEngine) throws {
        try withDatabase(engine) { db in
            _ = try Self.seed()
            let evil = "x' OR '1'='1"
            // Values interpolated and an arguments array: the SQL form, which refuses the mix
            // (the String form ran it, with `evil` spliced in, and returned every row).
            let rows = expectError(.misuse) {
                _ = try db.rows("SELECT \"name\" FROM \"JoinMember\" WHERE \"name\" = '\(evil)' AND \"age\" > ?", [.integer(0)])
            }
            #expect(rows?.message.contains("Database.rows: the SQL interpolates 1 value(s)") == true)
            #expect(rows?.sql?.contains("OR '1'='1") == false)
            let execute = expectError(.misuse) {
                try db.execute("UPDATE \"JoinMember\" SET \"age\" = 0 WHERE \"name\" = \(evil) AND \"age\" > ?", [.integer(0)])
            }
            #expect(execute?.message.contains("Database.execute:") == true)
            let fetch = expectError(.misuse) {
                _ = try JoinMember.fetch(sql: "SELECT * FROM \"JoinMember\" WHERE \"name\" = \(evil) OR \"age\" > ?", arguments: [.integer(0)])
            }
            #expect(fetch?.message.contains("JoinMember.fetch(sql:arguments:)") == true)
            // An arguments array in a variable: the same.
            let arguments: [DatabaseValue] = [.integer(0)]
            _ = expectError(.misuse) { _ = try db.rows("SELECT \"name\" FROM \"JoinMember\" WHERE \"name\" = '\(evil)' AND \"age\" > ?", arguments) }
            _ = expectError(.misuse) { try db.execute("DELETE FROM \"JoinMember\" WHERE \"name\" = \(evil) OR \"age\" > ?", arguments) }
            _ = expectError(.misuse) { _ = try JoinMember.fetch(sql: "SELECT * FROM \"JoinMember\" WHERE \"name\" = \(evil) OR \"age\" > ?", arguments: arguments) }
            #expect(try JoinMember.find(1)?.age == 28)
            // With an empty arguments array, the interpolated value is bound.
            #expect(try JoinMember.fetch(sql: "SELECT * FROM \"JoinMember\" WHERE \"name\" = \(evil)", arguments: []).isEmpty)
            #expect(try JoinMember.fetch(sql: "SELECT * FROM \"JoinMember\" WHERE \"name\" = \("Kim")", arguments: []).map(\.age) == [28])
            #expect(try db.rows("SELECT \"name\" FROM \"JoinMember\" WHERE \"name\" = \(evil)", []).isEmpty)
            try db.execute("UPDATE \"JoinMember\" SET \"age\" = 0 WHERE \"name\" = \(evil)", [])
            #expect(try JoinMember.find(1)?.age == 28)
        }
    }

    @Test(arguments: TestEngine.all) func placeholdersTakeTheArgumentsWhenNoValueIsInterpolated(_ engine: TestEngine) throws {
        try withDatabase(engine) { db in
            _ = try Self.seed()
            _ = try JoinMember.create(["name": "Sam", "age": 41])
            // `\(ident:)` writes no placeholder: the array binds the `?`s (traced as written;
            // PostgreSQL's engine numbers them $1, $2, and the rows show it bound them in order).
            let statements = try SQLRecorder(db).during {
                let rows = try db.rows(
                    "SELECT \(ident: "name") FROM \(ident: "JoinMember") WHERE \"age\" > ? AND \"name\" <> ? ORDER BY \"name\"",
                    [.integer(20), .text("Kim")])
                #expect(rows == [[.text("Sam")]])
            }
            db.trace(nil)
            #expect(statements.contains { $0.contains(#"SELECT "name" FROM "JoinMember" WHERE "age" > ? AND "name" <> ?"#) })
            try db.execute("UPDATE \(ident: "JoinMember") SET \"age\" = ? WHERE \"name\" = ?", [.integer(42), .text("Sam")])
            #expect(try JoinMember.fetch(sql: "SELECT * FROM \(ident: "JoinMember") WHERE \"age\" = ?", arguments: [.integer(42)]).map(\.name) == ["Sam"])
            // A String variable with arguments: the String form, as before.
            let text: String = #"SELECT "name" FROM "JoinMember" WHERE "age" = ?"#
            #expect(try db.rows(text, [.integer(42)]) == [[.text("Sam")]])
            #expect(try JoinMember.fetch(sql: text.replacingOccurrences(of: #""name""#, with: "*"), arguments: [.integer(42)]).map(\.name) == ["Sam"])
            try db.execute(#"UPDATE "JoinMember" SET "age" = ? WHERE "name" = ?"# as String, [.integer(43), .text("Sam")])
            #expect(try JoinMember.find(2)?.age == 43)
        }
    }

    @Test(arguments: TestEngine.all) func aMigrationsLiteralWithArgumentsIsAnSQL(_ engine: TestEngine) throws {
        try withMigratedDatabase(engine) { db in
            try db.execute(SQL(sql: "CREATE TABLE \"Tally\" (\(engine.idColumn), \"name\" TEXT, \"count\" INTEGER)"))
            try db.execute(#"INSERT INTO "Tally" ("name", "count") VALUES ('a', 1), ('b', 2)"#)
            let evil = "a' OR '1'='1"
            var migrator = Migrator()
            #expect(throws: ActiveRecordError.self) {
                try applyStep(db, &migrator, "mixed") { migration in
                    try migration.execute("UPDATE \"Tally\" SET \"count\" = 0 WHERE \"name\" = '\(evil)' OR \"count\" > ?", [.integer(5)])
                }
            }
            #expect(try db.rows(#"SELECT "count" FROM "Tally" ORDER BY "name""#) == [[.integer(1)], [.integer(2)]])
            try applyStep(db, &migrator, "placeholders") { migration in
                try migration.execute("UPDATE \(ident: "Tally") SET \"count\" = ? WHERE \"name\" = ?", [.integer(9), .text("b")])
                try migration.execute("UPDATE \"Tally\" SET \"count\" = \(7) WHERE \"name\" = \(evil)", [])
            }
            #expect(try db.rows(#"SELECT "count" FROM "Tally" ORDER BY "name""#) == [[.integer(1)], [.integer(9)]])
        }
    }
}
