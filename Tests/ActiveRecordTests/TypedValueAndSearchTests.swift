@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A bookmark, as the bookmarks app of issue 14 has them.
final class Favorite: Model {
    @Column var title: String = ""
    @Column var url: String = ""
    @Column var visits: Int = 0
    @Column var starred: Bool = false
}

/// Four bookmarks, ids 1…4, with titles a search for `%`, `_` or `\` must not over-match.
private func seedFavorites() throws {
    for (title, visits) in [("100% Swift", 3), ("1000 tips", 10), ("snake_case names", 1), (#"C:\temp notes"#, 7)] {
        try Favorite.create(["title": title, "url": "https://example.com/\(visits)", "visits": visits])
    }
}

/// A named query, as the Queries article shows them.
extension Query where Record == Favorite {
    /// Visited at least five times, the most visited first.
    var popular: Query<Favorite> { self.where("visits >= %@", 5).order(by: "visits", ascending: false) }
    /// Whose title holds `text`, as typed.
    func titled(_ text: String) -> Query<Favorite> { self.where("title", .contains(text)) }
}

@Suite("Typed values: pluck, DatabaseValue's accessors, transactions that return a value")
struct TypedValueTests {
    @Test(arguments: TestEngine.all) func pluckReadsColumnsAsTheirTypes(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedFavorites()
            #expect(try Favorite.query().order(by: "visits").pluck(\.title) == ["snake_case names", "100% Swift", #"C:\temp notes"#, "1000 tips"])
            let pairs = try Favorite.query().where("visits > %@", 5).pluck(\.title, \.visits)
            #expect(pairs.map(\.0) == ["1000 tips", #"C:\temp notes"#] && pairs.map(\.1) == [10, 7])
            #expect(try Favorite.query().where("visits > %@", 5).pluck("id", as: Int64.self) == [2, 4])
            let named = try Favorite.query().order(by: "id", ascending: false).limit(2).pluck(["id", "starred"], as: Int64.self, Bool.self)
            #expect(named.map(\.0) == [4, 3] && named.map(\.1) == [false, false])
            #expect(try Favorite.query().where("visits > %@", 100).pluck(\.title).isEmpty)
            // A wrong type is a mismatch, not a conversion; an unknown name says which columns there are.
            _ = expectError(.typeMismatch) { _ = try Favorite.query().pluck("title", as: Int.self) }
            let unknown = expectError(.unknownColumn) { _ = try Favorite.query().pluck("titel", as: String.self) }
            #expect(unknown?.message.contains("title") == true)
            _ = expectError(.misuse) { _ = try Favorite.query().pluck(["id", "title"], as: Int64.self) }
        }
    }

    @Test(arguments: TestEngine.all) func namedQueriesCompose(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedFavorites()
            #expect(try Favorite.query().popular.pluck(\.title) == ["1000 tips", #"C:\temp notes"#])
            #expect(try Favorite.query().popular.titled("tips").count() == 1)
            #expect(try Favorite.query().titled("%").pluck(\.visits) == [3])
            #expect(try Favorite.query().titled("%").popular.pluck(\.visits).isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func databaseValuesHaveTypedAccessors(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedFavorites()
            let rows = try Favorite.query().group(by: "starred").values("starred, count(*), sum(visits), max(title)")
            #expect(rows.count == 1)
            #expect(rows[0][1].integerValue == 4)
            #expect(rows[0][2].realValue == 21)
            #expect(rows[0][3].textValue == "snake_case names")
            #expect(try rows[0][0].decode(as: Bool.self) == false)
            #expect(DatabaseValue.integer(7).textValue == nil && DatabaseValue.text("7").integerValue == nil)
            #expect(DatabaseValue.blob(Data([1, 2])).blobValue == Data([1, 2]) && DatabaseValue.null.realValue == nil)
            let note: String? = try DatabaseValue.null.decode()
            #expect(note == nil)
            _ = expectError(.typeMismatch) { _ = try DatabaseValue.text("x").decode(as: Int.self) }
        }
    }

    @Test(arguments: TestEngine.all) func aTransactionReturnsItsBlocksValue(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let bookmark = try db.withTransaction { try Favorite.create(["title": "kept", "visits": 1]) }
            #expect(bookmark.id != nil && !bookmark.isNewRecord)
            let count = try Database.withTransaction { try Favorite.count() }
            #expect(count == 1)
            // A block that returns nothing still answers how the transaction ended.
            let outcome = try db.transaction { _ = try Favorite.create(["title": "undone"]); throw Rollback() }
            #expect(outcome == .rolledBack)
            // Rollback in a block that returns a value: rolled back, and rethrown (no value to give).
            #expect(throws: Rollback.self) {
                _ = try db.withTransaction { () throws -> Favorite in
                    let made = try Favorite.create(["title": "also undone"])
                    if made.title.hasPrefix("also") { throw Rollback() }
                    return made
                }
            }
            #expect(try Favorite.all().map(\.title) == ["kept"])
        }
    }
}

@Suite("Searching user input: LIKE … ESCAPE, contains/hasPrefix/hasSuffix, the seeds' quoting mistake")
struct SearchTests {
    private func titles(_ query: Query<Favorite>) throws -> [String] { try query.order(by: "id").pluck(\.title) }

    @Test(arguments: TestEngine.all) func fieldConditionsMatchUserInputAsItIs(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedFavorites()
            // Before: `%` and `_` were wildcards, so a search for "_" matched every row.
            #expect(try titles(Favorite.query().where("title", .contains("_"))) == ["snake_case names"])
            #expect(try titles(Favorite.query().where("title", .contains("0%"))) == ["100% Swift"])
            #expect(try titles(Favorite.query().where("title", .contains(#"\"#))) == [#"C:\temp notes"#])
            #expect(try titles(Favorite.query().where("title", .hasPrefix("100"))) == ["100% Swift", "1000 tips"])
            #expect(try titles(Favorite.query().where("title", .hasPrefix("100%"))) == ["100% Swift"])
            #expect(try titles(Favorite.query().where(\.title, .hasSuffix("NAMES"))) == ["snake_case names"])  // ASCII case folded
            #expect(try titles(Favorite.query().where("title", .contains("%_%"))) == [])
            // like(_:) keeps its wildcards.
            #expect(try titles(Favorite.query().where("title", .like("%_%"))).count == 4)
        }
    }

    @Test(arguments: TestEngine.all) func likeTakesAnEscapeCharacter(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedFavorites()
            #expect(try titles(Favorite.query().where("title LIKE %@ ESCAPE %@", "%!_%", "!")) == ["snake_case names"])
            #expect(try titles(Favorite.query().where("title not like '100!%%' escape '!'")) == ["1000 tips", "snake_case names", #"C:\temp notes"#])
            #expect(try titles(Favorite.query().where("title LIKE %@ ESCAPE %@", "%" + escapingLikeWildcards("0%") + "%", #"\"#)) == ["100% Swift"])
            // A column may still be called escape; ESCAPE is a word only after a LIKE pattern.
            _ = expectError(.invalidPredicate) { _ = try Favorite.query().where("title LIKE %@ ESCAPE", "x").fetch() }
            // An escape that is not one character is the engine's error, with nothing matched.
            #expect(throws: ActiveRecordError.self) { _ = try Favorite.query().where("title LIKE %@ ESCAPE %@", "x", "ab").fetch() }
        }
    }

    @Test(arguments: TestEngine.all) func aStringSpellingAColumnIsTheSeedsMistake(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedFavorites()
            // VinylRecord's README: where("'name' = %@ or 'id' in %@", …) compares two values.
            let error = expectError(.invalidPredicate) { _ = try Favorite.query().where("'title' = %@ or 'id' in %@", "1000 tips", [1, 2]).fetch() }
            #expect(error?.message.hasPrefix(#"'title' is a string here, not the column: write title or "title" for the column"#) == true)
            #expect(error?.message.contains("at position 1") == true)
            for format in ["visits > 1 and 'url' LIKE %@", "'starred' IS NULL", "'visits' BETWEEN 1 AND %@"] {
                _ = expectError(.invalidPredicate) { _ = try Favorite.query().where(format, 5).count() }
            }
            // The fixes work; the seeds' qualified form is a column; other strings stay strings.
            #expect(try titles(Favorite.query().where("title = %@ or id in %@", "1000 tips", [1])) == ["100% Swift", "1000 tips"])
            #expect(try titles(Favorite.query().where("'Favorite'.'title' = %@", "1000 tips")) == ["1000 tips"])
            #expect(try titles(Favorite.query().where("'1000 tips' = title")) == ["1000 tips"])
            #expect(try Favorite.query().where("'nothing' = %@", "nothing").count() == 4)
        }
    }
}
