import ActiveRecord
import Foundation
import Testing

final class Scorer: Model {
    @Column var name: String = ""
    @Column var score: Int = 0
}

/// SQL written with interpolation: values bound, identifiers quoted only by `\(ident:)`.
@Suite("SQL interpolation")
struct SQLInterpolationTests {
    @Test func valuesBecomePlaceholdersAndIdentifiersAreQuoted() throws {
        let minimum = 30
        let name = "Alex"
        let sql: SQL = "SELECT \(ident: "name") FROM \(ident: #"Us"er"#) WHERE score > \(minimum) AND name = \(name) AND note IS \(nil as String?)"
        #expect(sql.sql == #"SELECT "name" FROM "Us""er" WHERE score > ? AND name = ? AND note IS ?"#)
        #expect(sql.arguments == [.integer(30), .text("Alex"), .null])
    }

    @Test func fragmentsNestAndListsExpand() throws {
        let adults: SQL = "score >= \(18)"
        let ids: [Int64] = [4, 5]
        var sql: SQL = "SELECT * FROM t WHERE \(adults) AND id IN \(list: ids)"
        sql += " ORDER BY \(ident: "name") LIMIT \(2)"
        #expect(sql.sql == #"SELECT * FROM t WHERE score >= ? AND id IN (?, ?) ORDER BY "name" LIMIT ?"#)
        #expect(sql.arguments == [.integer(18), .integer(4), .integer(5), .integer(2)])
        let joined = SQL.joined(["a = \(1)", SQL(sql: "b = ?", arguments: [.integer(2)])], separator: " OR ")
        #expect(joined.sql == "a = ? OR b = ?")
        #expect(joined.arguments == [.integer(1), .integer(2)])
    }

    @Test(arguments: TestEngine.all) func aStringValueIsBoundNeverSpliced(_ engine: TestEngine) throws {
        try withDatabase(engine) { db in
            try Scorer.create(["name": "Alex", "score": 40])
            let hostile = #"x'; DROP TABLE "Scorer"; --"#
            // A literal alone is an SQL: the value is bound, so the injection is a name that matches nothing.
            #expect(try db.rows("SELECT \(ident: "name") FROM \(ident: "Scorer") WHERE \"name\" = \(hostile)").isEmpty)
            try db.execute("UPDATE \(ident: "Scorer") SET \"name\" = \(hostile) WHERE \"score\" = \(40)")
            #expect(try db.rows(#"SELECT "name" FROM "Scorer""#) == [[.text(hostile)]])
            #expect(try Scorer.count() == 1)
            // Without any marker too: the literal is an SQL, not a String.
            #expect(try db.rows("SELECT * FROM \"Scorer\" WHERE \"name\" = \(hostile)").count == 1)
            #expect(try db.rows("SELECT * FROM \"Scorer\" WHERE \"name\" = \("x' OR 'a'='a")").isEmpty)
            try db.execute("DELETE FROM \"Scorer\" WHERE \"name\" = \("x' OR 'a'='a")")
            #expect(try Scorer.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func rowsBindsInterpolatedValuesOnEitherEngine(_ engine: TestEngine) throws {
        try withDatabase(engine) { db in
            for (name, score) in [("Alex", 40), ("Sam", 20), ("Kim", 35)] { try Scorer.create(["name": name, "score": score]) }
            let minimum = 30
            let names = ["Alex", "Sam"]
            let rows = try db.rows("""
                SELECT \(ident: "name") FROM \(ident: "Scorer") WHERE \(ident: "score") > \(minimum) OR "name" IN \(list: names) ORDER BY "name"
                """)
            #expect(rows == [[.text("Alex")], [.text("Kim")], [.text("Sam")]])
        }
    }

    @Test(arguments: TestEngine.all) func theStringFormsKeepWorking(_ engine: TestEngine) throws {
        try withDatabase(engine) { db in
            try Scorer.create(["name": "Alex", "score": 40])
            // A literal with `?` and its arguments: the String form.
            #expect(try db.rows(#"SELECT "name" FROM "Scorer" WHERE "score" > ?"#, [.integer(30)]) == [[.text("Alex")]])
            // A String variable: the String form (its text as it is).
            let text = #"SELECT "score" FROM "Scorer""#
            #expect(try db.rows(text) == [[.integer(40)]])
            try db.execute(#"UPDATE "Scorer" SET "score" = ?"#, [.integer(41)])
            // A literal without interpolation: the same SQL either way.
            #expect(try db.rows(#"SELECT "score" FROM "Scorer""#) == [[.integer(41)]])
        }
    }

    @Test(arguments: TestEngine.all) func aBadIdentifierOrAnEmptyListIsAClearErrorAndRunsNothing(_ engine: TestEngine) throws {
        try withDatabase(engine) { db in
            try Scorer.create(["name": "Alex", "score": 40])
            let empty = expectError(.invalidValue) { _ = try db.rows("SELECT * FROM \(ident: "")") }
            #expect(empty?.message.contains("\\(ident:) is empty") == true)
            let nul = expectError(.invalidValue) { try db.execute("DELETE FROM \(ident: "Scorer\u{0}")") }
            #expect(nul?.message.contains("NUL") == true)
            let list = expectError(.invalidValue) { try db.execute("DELETE FROM \"Scorer\" WHERE \"id\" IN \(list: [Int64]())") }
            #expect(list?.message.contains("IN ()") == true)
            #expect(try Scorer.count() == 1)
        }
    }
}
