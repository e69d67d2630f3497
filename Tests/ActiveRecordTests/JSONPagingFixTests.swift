@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// An address stored as itself (its own `toSQL`), though the type is `Codable` (for an API).
struct FixEmail: ColumnValue, Codable, Equatable {
    var address: String
    static var sqlType: SQLType { .text }
    func toSQL() throws -> DatabaseValue { .text(address) }
    static func fromSQL(_ value: DatabaseValue) throws -> FixEmail {
        guard case .text(let text) = value else { throw ActiveRecordError(.typeMismatch, "expected TEXT for an email") }
        return FixEmail(address: text)
    }
}

/// A plain `Codable` struct: stored as JSON by the library.
struct FixPrefs: Codable, Equatable, ColumnValue {
    var theme = "light"
    var items: [String: String] = [:]
}

final class FixContact: Model {
    @Column var label: String = ""
    @Column var email: FixEmail = FixEmail(address: "")
    @Column var prefs: FixPrefs = FixPrefs()
    @Column var tags: [String] = []
    @Column var map: [String: String?] = [:]
}

final class FixTeam: Model {
    @Column var title: String = ""
    @HasMany var fixMembers: Query<FixMember>
}

final class FixMember: Model {
    @Column var name: String = ""
    @Column var score: Int = 0
    @BelongsTo var fixTeam: FixTeam?
}

/// The reviewer's findings on JSON columns and pagination (issue 36, fix round), each on both engines.
@Suite("JSON columns and pagination: the review's fixes")
struct JSONPagingFixTests {
    /// c1: email, prefs dark with items {"0": "x"}, tags [a, b], map {"0": "a", "k": "v"};
    /// c2: map {} (no key); c3: map {"k": null}.
    func seed() throws -> [FixContact] {
        let one = FixContact()
        one.label = "c1"
        one.email = FixEmail(address: "ann@example.com")
        one.prefs = FixPrefs(theme: "dark", items: ["0": "x"])
        one.tags = ["a", "b"]
        one.map = ["0": "a", "k": "v"]
        try one.save()
        let two = FixContact()
        two.label = "c2"
        two.tags = ["0"]
        try two.save()
        let three = FixContact()
        three.label = "c3"
        three.map = ["k": nil]
        try three.save()
        return [one, two, three]
    }

    func labels(_ query: Query<FixContact>) throws -> [String] { try query.order(by: "id").fetch().map(\.label) }

    // 1. A Codable type with its own toSQL keeps TEXT; a plain Codable struct is JSON.
    @Test(arguments: TestEngine.all) func aCodableTypeWithItsOwnToSQLKeepsText(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let kinds = Dictionary(uniqueKeysWithValues: try FixContact.schema().columns.map { ($0.name, $0.kind) })
            #expect(kinds["email"] == .plain)
            #expect(kinds["prefs"] == .json)
            #expect(kinds["tags"] == .json)
            #expect(kinds["map"] == .json)
            _ = try seed()  // on PostgreSQL, CREATE TABLE failed here (JSONB DEFAULT '')
            let types = try db.withSchema { connection, dialect in try dialect.columns(of: "FixContact", connection) }
            func type(_ name: String) -> String? { types.first { $0.name == name }?.type.lowercased() }
            #expect(type("email") == "text")
            #expect(type("prefs") == (engine == .sqlite ? "text" : "jsonb"))
            #expect(type("tags") == (engine == .sqlite ? "text" : "jsonb"))
            // Stored as itself, read back as itself.
            let stored = try db.rows(#"SELECT "email" FROM "FixContact" WHERE "label" = 'c1'"#).first?.first
            #expect(stored == .text("ann@example.com"))
            #expect(try FixContact.query().where(\.label == "c1").first()?.email == FixEmail(address: "ann@example.com"))
            // The plain Codable struct is queried by path.
            #expect(try labels(FixContact.query().where(\.prefs, "theme", .equal("dark"))) == ["c1"])
            #expect(try labels(FixContact.query().where("prefs->'theme' = 'light'")) == ["c2", "c3"])
            #expect(try db.drift(of: [FixContact.self]).allSatisfy(\.isEmpty))
        }
    }

    // 3. A key of digits names an object's member, never an array's element, on both engines.
    @Test(arguments: TestEngine.all) func aKeyOfDigitsIsAnObjectKeyOnBothEngines(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try seed()
            #expect(try labels(FixContact.query().where(\.tags, "0", .equal("a"))) == [])
            #expect(try labels(FixContact.query().where(\.tags, "0", .isNotNull)) == [])
            #expect(try labels(FixContact.query().where("tags->'1' = 'b'")) == [])
            #expect(try labels(FixContact.query().where(\.map, "0", .equal("a"))) == ["c1"])
            #expect(try labels(FixContact.query().where("map->'0' = 'a'")) == ["c1"])
            #expect(try labels(FixContact.query().where(\.prefs, "items.0", .equal("x"))) == ["c1"])
            #expect(try labels(FixContact.query().order(by: \.tags, "0").order(by: "id")) == ["c1", "c2", "c3"])
        }
    }

    // 4. NOT IN an empty list: the path exists and is not null, typed or in the predicate language.
    @Test(arguments: TestEngine.all) func notInAnEmptyListKeepsOnlyRowsWithAValue(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try seed()
            #expect(try labels(FixContact.query().where(\.map, "k", .notIn([String]()))) == ["c1"])
            #expect(try labels(FixContact.query().where("map->'k' NOT IN %@", [String]())) == ["c1"])
            #expect(try labels(FixContact.query().where("map->'k' IN %@", [String]())) == [])
            #expect(try labels(FixContact.query().where(\.map, "k", .in([String]()))) == [])
            #expect(try labels(FixContact.query().where("map->'k' NOT IN %@", ["x"])) == ["c1"])
        }
    }

    // 6. A path into a column that is not JSON is refused when the query compiles, the same on both engines.
    @Test(arguments: TestEngine.all) func aPathIntoAColumnThatIsNotJSONIsRefused(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try seed()
            let typed = expectError(.invalidPredicate) { _ = try FixContact.query().where(\.label, "x", .equal(1)).fetch() }
            #expect(typed?.message.contains("label is not a JSON column") == true, "\(typed?.message ?? "")")
            let own = expectError(.invalidPredicate) { _ = try FixContact.query().where(\.email, "x", .isNull).count() }
            #expect(own?.message.contains("email is not a JSON column") == true)
            let language = expectError(.invalidPredicate) { _ = try FixContact.query().where("label->'x' = 1").fetch() }
            #expect(language?.message.contains("label is not a JSON column") == true)
            _ = expectError(.invalidPredicate) { _ = try FixContact.query().where("id->'x' IS NULL").fetch() }
            _ = expectError(.invalidPredicate) { _ = try FixContact.query().order(by: \.label, "x").fetch() }
            #expect(try FixContact.query().count() == 3)
        }
    }

    /// Teams a (2 members), b (0), c (3), d (1), e (2).
    func fillTeams() throws {
        let counts = [("a", 2), ("b", 0), ("c", 3), ("d", 1), ("e", 2)]
        for (title, count) in counts {
            let team = try FixTeam.create(["title": title])
            for index in 0..<count { try FixMember.create(["name": "\(title)\(index)", "fixTeamId": team.id]) }
        }
    }

    // 2. Keyset pagination cannot continue an order by a count: refused; offsets page it stably.
    @Test(arguments: TestEngine.all) func pagingByACountIsRefusedForKeysetsAndStableForOffsets(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try fillTeams()
            let byCount = FixTeam.query().order(byCount: \.fixMembers)
            let keyset = expectError(.invalidPredicate) { _ = try byCount.page(size: 2) }
            #expect(keyset?.message.contains("cannot page by a count") == true, "\(keyset?.message ?? "")")
            #expect(keyset?.message.contains("page(number:size:)") == true)
            _ = expectError(.invalidPredicate) { _ = try byCount.after([0, 2]).fetch() }
            let first = try FixTeam.query().where(\.title == "b").first()!
            _ = expectError(.invalidPredicate) { _ = try byCount.after(first).fetch() }
            _ = expectError(.invalidPredicate) {
                _ = try FixTeam.query().order(by: \.title).order(bySum: \.fixMembers, \.score).page(size: 2)
            }
            // Offsets: the count first, the primary key after it, so ties come in one order.
            var titles: [String] = []
            for number in 1...3 { titles += try byCount.page(number: number, size: 2).map(\.title) }
            #expect(titles == ["b", "d", "a", "e", "c"])
            let descending = FixTeam.query().order(byCount: \.fixMembers, ascending: false).orderedStably()
            #expect(try descending.fetch().map(\.title) == ["c", "a", "e", "d", "b"])
            #expect(try descending.limit(2).offset(1).fetch().map(\.title) == ["a", "e"])
        }
    }

    // 5. A cursor goes to the client as a token and comes back as data, never as SQL.
    @Test(arguments: TestEngine.all) func aCursorTravelsAsATokenAndATamperedOneIsBoundOrRefused(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try seed()
            // Codable and the token keep every storage class as it was.
            let values: [DatabaseValue] = [
                .integer(30), .text("x'); DROP TABLE \"FixContact\"; --"), .real(1.5), .null, .blob(Data([0, 255])), .real(.infinity),
            ]
            let cursor = PageCursor(values: values)
            #expect(try JSONDecoder().decode(PageCursor.self, from: JSONEncoder().encode(cursor)) == cursor)
            #expect(try PageCursor(token: cursor.token) == cursor)
            #expect(!cursor.token.contains(where: { "+/=".contains($0) }))
            // The server's round trip: a page, its token to the client, the token back.
            let query = FixContact.query().order(by: \.label, ascending: false)
            let first = try query.page(size: 2)
            #expect(first.records.map(\.label) == ["c3", "c2"])
            let token = try #require(first.nextCursor?.token)
            let second = try query.page(size: 2, after: try PageCursor(token: token))
            #expect(second.records.map(\.label) == ["c1"])
            #expect(second.nextCursor == nil)
            // Malformed tokens: refused, saying what to pass.
            for bad in ["", "!!!", "W3siaSI6MzB9", Data(#"{"x":1}"#.utf8).base64EncodedString(), Data(#"[{"q":1}]"#.utf8).base64EncodedString()] {
                let error = expectError(.invalidValue) { _ = try PageCursor(token: bad) }
                #expect(error?.message.contains("page cursor token is malformed") == true, "\(bad)")
            }
            // A well-formed token with hostile values: bound like any value, the table untouched.
            let hostile = PageCursor(values: [.text("c2' OR 1=1; DROP TABLE \"FixContact\"; --"), .integer(99)])
            let after = try query.page(size: 5, after: try PageCursor(token: hostile.token))
            // Descending, the labels below that text: "c2" (a prefix of it) and "c1".
            #expect(after.records.map(\.label) == ["c2", "c1"])
            _ = expectError(.invalidValue) { _ = try query.page(size: 5, after: PageCursor(values: [.text("c2")])) }
            #expect(try FixContact.query().count() == 3)
        }
    }
}
