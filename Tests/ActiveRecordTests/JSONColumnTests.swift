@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Any JSON value, for documents of mixed shapes.
indirect enum AnyJSON: Codable, Equatable {
    case string(String), int(Int64), double(Double), bool(Bool), null, object([String: AnyJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let bool = try? container.decode(Bool.self) { self = .bool(bool) }
        else if let int = try? container.decode(Int64.self) { self = .int(int) }
        else if let double = try? container.decode(Double.self) { self = .double(double) }
        else if let string = try? container.decode(String.self) { self = .string(string) }
        else { self = .object(try container.decode([String: AnyJSON].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .null: try container.encodeNil()
        case .object(let value): try container.encode(value)
        }
    }
}

final class JSONDoc: Model {
    @Column var data: [String: AnyJSON] = [:]
    @Column var label: String = ""
}

struct DocSettings: Codable, Equatable, ColumnValue {
    var theme = "light"
    var rank = 0
}

final class JSONSettingsUser: Model {
    @Column var name: String = ""
    @Column var settings: DocSettings = DocSettings()
}

@Suite("JSON columns: queried by path, the same on both engines")
struct JSONColumnTests {
    /// Ids 1…9: strings, integers, reals, booleans, null, missing keys, nested objects, and keys
    /// a path must quote.
    func seed() throws {
        let documents: [[String: AnyJSON]] = [
            ["theme": .string("dark"), "rank": .int(3), "score": .double(1.5), "on": .bool(true),
             "nested": .object(["email": .bool(true), "level": .int(2)])],
            ["theme": .string("light"), "rank": .int(10), "score": .double(-2.25), "on": .bool(false),
             "nested": .object(["email": .bool(false), "level": .int(1)])],
            ["theme": .string("Dark"), "rank": .int(3), "score": .double(1.5), "on": .bool(true),
             "nested": .object(["email": .bool(true)])],
            ["theme": .null, "rank": .string("7"), "score": .int(0), "nested": .object([:])],
            [:],
            ["theme": .string("dark"), "rank": .double(2.5), "on": .int(1), "nested": .object(["level": .string("high")])],
            ["theme": .string("äpfel"), "rank": .int(-1), "score": .double(1000), "on": .string("yes"),
             "nested": .object(["email": .null])],
            ["theme": .int(5), "rank": .bool(true), "nested": .string("flat")],
            ["$": .string("dollar"), "[": .string("bracket"), "": .string("empty"), "a.b": .string("dotted"),
             "it's": .string("quote"), "'); DROP TABLE JSONDoc; --": .string("hostile")],
        ]
        for (index, data) in documents.enumerated() {
            let doc = JSONDoc()
            doc.data = data
            doc.label = "d\(index + 1)"
            try doc.save()
        }
    }

    func ids(_ query: Query<JSONDoc>) throws -> [Int64] { try query.order(by: "id").fetch().compactMap(\.id) }

    @Test(arguments: TestEngine.all) func typedConditionsMatchTheSameRowsOnEveryEngine(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seed()
            let q = { JSONDoc.query() }
            // Strings: byte by byte ("Dark" < "dark" < "light" < "äpfel"); a number is never equal.
            #expect(try ids(q().where(\.data, "theme", .equal("dark"))) == [1, 6])
            #expect(try ids(q().where(\.data, "theme", .notEqual("dark"))) == [2, 3, 7, 8])
            #expect(try ids(q().where(\.data, "theme", .lessThan("dark"))) == [3])
            #expect(try ids(q().where(\.data, "theme", .greaterThan("dark"))) == [2, 7])
            #expect(try ids(q().where(\.data, "theme", .greaterThanOrEqual("dark"))) == [1, 2, 6, 7])
            // Numbers by value, integers and reals alike; a boolean is 0 or 1; the string "7" is no number.
            #expect(try ids(q().where(\.data, "rank", .greaterThan(2))) == [1, 2, 3, 6])
            #expect(try ids(q().where(\.data, "rank", .equal(3))) == [1, 3])
            #expect(try ids(q().where(\.data, "rank", .lessThan(3))) == [6, 7, 8])
            #expect(try ids(q().where(\.data, "rank", .lessThanOrEqual(2.5))) == [6, 7, 8])
            #expect(try ids(q().where(\.data, "rank", .equal("7"))) == [4])
            #expect(try ids(q().where(\.data, "score", .equal(1.5))) == [1, 3])
            #expect(try ids(q().where(\.data, "score", .lessThan(0))) == [2])
            #expect(try ids(q().where(\.data, "score", .greaterThan(100))) == [7])
            #expect(try ids(q().where(\.data, "score", .equal(0))) == [4])
            // Booleans.
            #expect(try ids(q().where(\.data, "on", .equal(true))) == [1, 3, 6])
            #expect(try ids(q().where(\.data, "on", .equal(false))) == [2])
            #expect(try ids(q().where(\.data, "on", .notEqual(true))) == [2, 7])
            // Nested paths, dotted or as an array.
            #expect(try ids(q().where(\.data, "nested.email", .equal(true))) == [1, 3])
            #expect(try ids(q().where(\.data, ["nested", "email"], .equal(true))) == [1, 3])
            #expect(try ids(q().where(\.data, "nested.email", .isNull)) == [4, 5, 6, 7, 8, 9])
            #expect(try ids(q().where(\.data, "nested.email", .isNotNull)) == [1, 2, 3])
            // null and missing.
            #expect(try ids(q().where(\.data, "theme", .isNull)) == [4, 5, 9])
            #expect(try ids(q().where(\.data, "theme", .isNotNull)) == [1, 2, 3, 6, 7, 8])
            let none: String? = nil
            #expect(try ids(q().where(\.data, "theme", .equal(none))) == [4, 5, 9])
            #expect(try ids(q().where(\.data, "theme", .notEqual(none))) == [1, 2, 3, 6, 7, 8])
            // Lists.
            #expect(try ids(q().where(\.data, "rank", .in([3, 10]))) == [1, 2, 3])
            #expect(try ids(q().where(\.data, "rank", .notIn([3, 10]))) == [4, 6, 7, 8])
            #expect(try ids(q().where(\.data, "nested.level", .in(["high"]))) == [6])
            #expect(try ids(q().where(\.data, "rank", .in([Int]()))) == [])
            #expect(try ids(q().where(\.data, "rank", .notIn([Int]()))) == [1, 2, 3, 4, 6, 7, 8])
            // With other conditions, and counted.
            #expect(try q().where(\.data, "theme", .equal("dark")).where("label", .equal("d6")).count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func orderingByAPathIsTheSameOnEveryEngine(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seed()
            func ids(_ query: Query<JSONDoc>) throws -> [Int64] {
                try query.where("label <> 'd9'").order(by: "id").fetch().compactMap(\.id)
            }
            // Missing and null first, then numbers (true as 1), then strings.
            #expect(try ids(JSONDoc.query().order(by: \.data, "rank")) == [5, 7, 8, 6, 1, 3, 2, 4])
            #expect(try ids(JSONDoc.query().order(by: \.data, "rank", ascending: false)) == [4, 2, 1, 3, 6, 8, 7, 5])
            #expect(try ids(JSONDoc.query().order(by: \.data, "theme")) == [4, 5, 8, 3, 1, 6, 2, 7])
            #expect(try ids(JSONDoc.query().order(by: \.data, ["nested", "level"])) == [3, 4, 5, 7, 8, 2, 1, 6])
            // The predicate language's spelling of the same keys.
            #expect(try ids(JSONDoc.query().order(by: "data->'rank'", ascending: false)) == [4, 2, 1, 3, 6, 8, 7, 5])
        }
    }

    @Test(arguments: TestEngine.all) func thePredicateLanguageReadsPaths(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seed()
            #expect(try ids(JSONDoc.query().where("data->'theme' = %@", "dark")) == [1, 6])
            #expect(try ids(JSONDoc.query().where("data->>'theme' = 'dark'")) == [1, 6])
            #expect(try ids(JSONDoc.query().where("'JSONDoc'.'data'->'nested'->'email' = %@", true)) == [1, 3])
            #expect(try ids(JSONDoc.query().where("data->'rank' > 2")) == [1, 2, 3, 6])
            #expect(try ids(JSONDoc.query().where("data->'rank' >= %@ AND data->'rank' < %@", 2.5, 10)) == [1, 3, 6])
            #expect(try ids(JSONDoc.query().where("data->'rank' IN %@", [3, 10])) == [1, 2, 3])
            #expect(try ids(JSONDoc.query().where("data->'rank' NOT IN (3, 10, '7')")) == [6, 7, 8])
            #expect(try ids(JSONDoc.query().where("data->'theme' IS NULL")) == [4, 5, 9])
            #expect(try ids(JSONDoc.query().where("data->'theme' = %@", nil)) == [4, 5, 9])
            #expect(try ids(JSONDoc.query().where("data->'theme' != %@ OR label = 'd5'", "dark")) == [2, 3, 5, 7, 8])
            #expect(try ids(JSONDoc.query().where("NOT (data->'on' = %@)", true)) == [2, 7])
        }
    }

    /// The C API runs `DynamicQuery` (`ar_query_new` with a predicate, `ar_query_order` with a
    /// name): the predicate language's paths work there unchanged.
    @Test(arguments: TestEngine.all) func theCAPIsQueriesReadPathsToo(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seed()
            let docs = DynamicModel(try JSONDoc.schema())
            let query = DynamicQuery(docs, where: "data->'rank' > ? AND label <> 'd9'", arguments: [.value(.integer(2))])
            let ids = try query.order(by: "data->'rank'", ascending: false).order(by: "id").fetch().map { try $0.value("id") }
            #expect(ids == [2, 1, 3, 6].map { DatabaseValue.integer($0) })
            #expect(try DynamicQuery(docs, where: "data->'theme' = ?", arguments: [.value(.text("dark"))]).count() == 2)
        }
    }

    @Test(arguments: TestEngine.all) func hostileKeysAreBoundOrRefused(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seed()
            // Keys that a spliced path would break on are bound: each finds its own value.
            for key in ["$", "[", "", "a.b", "it's", "'); DROP TABLE JSONDoc; --"] {
                #expect(try ids(JSONDoc.query().where(\.data, [key], .isNotNull)) == [9], "key \(key)")
            }
            #expect(try ids(JSONDoc.query().where("data->'it''s' = 'quote'")) == [9])
            #expect(try ids(JSONDoc.query().where(\.data, ["a.b"], .equal("dotted"))) == [9])
            #expect(try JSONDoc.query().count() == 9)
            // A key SQLite's paths cannot quote, an empty dotted key, no key: refused, saying why.
            let quote = expectError(.invalidPredicate) { _ = try JSONDoc.query().where(\.data, ["a\"b"], .equal(1)).fetch() }
            #expect(quote?.message.contains("double quote") == true)
            let empty = expectError(.invalidPredicate) { _ = try JSONDoc.query().where(\.data, "nested..email", .equal(1)).fetch() }
            #expect(empty?.message.contains("empty key") == true)
            _ = expectError(.invalidPredicate) { _ = try JSONDoc.query().where(\.data, [String](), .equal(1)).fetch() }
            _ = expectError(.invalidPredicate) { _ = try JSONDoc.query().order(by: \.data, "").fetch() }
            // The predicate language: keys are quoted strings; LIKE and BETWEEN take no path.
            let bare = expectError(.invalidPredicate) { _ = try JSONDoc.query().where("data->theme = 1").fetch() }
            #expect(bare?.message.contains("a key in single quotes after '->'") == true)
            _ = expectError(.invalidPredicate) { _ = try JSONDoc.query().where("data->'theme' LIKE 'd%'").fetch() }
            _ = expectError(.invalidPredicate) { _ = try JSONDoc.query().where("data->'rank' BETWEEN 1 AND 2").fetch() }
            _ = expectError(.invalidPredicate) { _ = try JSONDoc.query().where("label = data->'theme'").fetch() }
            _ = expectError(.unknownColumn) { _ = try JSONDoc.query().where("nope->'theme' = 1").fetch() }
            #expect(try JSONDoc.query().count() == 9)
        }
    }

    @Test(arguments: TestEngine.all) func codableColumnsAreJSONBOnPostgreSQLAndTextOnSQLite(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let user = JSONSettingsUser()
            user.name = "a"
            user.settings = DocSettings(theme: "dark", rank: 2)
            try user.save()
            let type = try db.withSchema { connection, dialect in try dialect.columns(of: "JSONSettingsUser", connection) }.first { $0.name == "settings" }?.type
            #expect(type?.lowercased() == (engine == .sqlite ? "text" : "jsonb"))
            let found = try #require(try JSONSettingsUser.query().where(\.settings, "theme", .equal("dark")).first())
            #expect(found.settings == DocSettings(theme: "dark", rank: 2))
            // Read and saved again unchanged: JSONB's own spelling of the text is no change.
            try found.save()
            #expect(found.hasChanges == false)
            #expect(try db.drift(of: [JSONSettingsUser.self]).allSatisfy(\.isEmpty))
        }
    }

    @Test(arguments: TestEngine.all) func aTextColumnMadeBeforeJSONBShowsNoDriftAndIsQueried(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.execute(SQL(sql: """
                CREATE TABLE "JSONSettingsUser" (\(engine.idColumn), "createdAt" \(engine.real), "updatedAt" \(engine.real), \
                "name" TEXT NOT NULL DEFAULT '', "settings" TEXT NOT NULL DEFAULT '{}')
                """))
            #expect(try db.drift(of: [JSONSettingsUser.self]).allSatisfy(\.isEmpty))
            let user = JSONSettingsUser()
            user.settings = DocSettings(theme: "dark", rank: 5)
            try user.save()
            #expect(try JSONSettingsUser.query().where(\.settings, "rank", .greaterThan(4)).count() == 1)
            #expect(try JSONSettingsUser.query().order(by: \.settings, "rank").first()?.settings.rank == 5)
        }
    }
}
