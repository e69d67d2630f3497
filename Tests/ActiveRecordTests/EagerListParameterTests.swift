@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 35, point 5: eager loading binds each batch's ids as one parameter (SQLite: a JSON
/// array read by `json_each`; PostgreSQL: an array for `= ANY`), so that its statement's SQL
/// does not depend on how many ids a batch has and is prepared once; `where(_:_:)` with
/// `.in`/`.notIn` of integers and key paths do the same. Each test checks the answers against what the
/// per-element form gives, on both engines.
@Suite("Eager loading: the id list bound as one parameter")
struct EagerListParameterTests {
    final class EagerShelf: Model {
        @Column var label: String = ""
        @HasMany var books: Query<EagerBook>
        @HasManyThrough(EagerShelving.self) var tags: Query<EagerTag>
    }

    final class EagerBook: Model {
        @Column var title: String = ""
        @Column var code: Int64 = 0
        @Column var isbn: String = ""
        @BelongsTo var shelf: EagerShelf?
    }

    final class EagerTag: Model {
        @Column var name: String = ""
    }

    final class EagerShelving: Model {
        @BelongsTo var shelf: EagerShelf?
        @BelongsTo var tag: EagerTag?
    }

    /// Each shelf's books, loaded eagerly, as titles in the order the relation gives.
    private static func eagerTitles(_ query: Query<EagerShelf>) throws -> [String: [String]] {
        var titles: [String: [String]] = [:]
        for shelf in try query.includes(\.books).fetch() { titles[shelf.label] = try shelf.books.fetch().map(\.title) }
        return titles
    }

    /// The same, one query per shelf.
    private static func lazyTitles(_ query: Query<EagerShelf>) throws -> [String: [String]] {
        var titles: [String: [String]] = [:]
        for shelf in try query.fetch() { titles[shelf.label] = try shelf.books.order(by: "id").fetch().map(\.title) }
        return titles
    }

    @Test(arguments: TestEngine.all) func zeroOneAndManyOwnersGetTheirChildren(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            _ = try EagerShelf.query().fetch()
            _ = try EagerBook.query().fetch()
            let recorder = SQLRecorder(db)
            // No owner: no query for the children at all.
            var titles: [String: [String]] = ["not": ["run"]]
            let none = try recorder.during { titles = try Self.eagerTitles(EagerShelf.query()) }
            #expect(titles.isEmpty)
            #expect(none.count == 1)
            let first = try EagerShelf.create(["label": "first"])
            try EagerBook.create(["title": "a", "eagerShelfId": first.id])
            #expect(try Self.eagerTitles(EagerShelf.query()) == ["first": ["a"]])
            let second = try EagerShelf.create(["label": "second"])
            try EagerShelf.create(["label": "empty"])
            for title in ["b", "c", "d"] { try EagerBook.create(["title": title, "eagerShelfId": second.id]) }
            try EagerBook.create(["title": "e", "eagerShelfId": first.id])
            try EagerBook.create(["title": "orphan"])  // a NULL key matches no owner
            let eager = try Self.eagerTitles(EagerShelf.query())
            #expect(eager == ["first": ["a", "e"], "second": ["b", "c", "d"], "empty": []])
            #expect(eager == (try Self.lazyTitles(EagerShelf.query())))
            // Two queries, whatever the number of owners: the owners, then their children.
            let sql = try recorder.during { _ = try Self.eagerTitles(EagerShelf.query()) }
            #expect(sql.count == 2)
            let expected = engine == .sqlite
                ? #"WHERE ("EagerBook"."eagerShelfId" IN (SELECT +value FROM json_each(?)))"#
                : #"WHERE ("EagerBook"."eagerShelfId" = ANY(?))"#
            #expect(sql.last?.contains(expected) == true, "\(sql)")
        }
    }

    @Test(arguments: TestEngine.all) func batchesOfEveryLengthShareOnePreparedStatement(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            // 10,003 shelves: a preload of them all runs two batches (10,000 ids, then 3).
            let shelves = (0..<10_003).map { _ in EagerShelf() }
            for (offset, shelf) in shelves.enumerated() { shelf.label = "s\(offset)" }
            try EagerShelf.insertAll(shelves)
            for offset in [0, 1, 9_999, 10_000, 10_002] {
                try EagerBook.create(["title": "t\(offset)", "eagerShelfId": shelves[offset].id])
            }
            try EagerBook.create(["title": "t0b", "eagerShelfId": shelves[0].id])
            let upTo = { (last: Int64) in EagerShelf.query().where("id", .lessThanOrEqual(last)) }
            try db.transaction {
                // Warmed with a batch of two ids: both statements (owners, children) prepared.
                #expect(try Self.eagerTitles(upTo(shelves[1].id!)) == ["s0": ["t0", "t0b"], "s1": ["t1"]])
                let prepared = try db.withConnection { $0.preparedCount }
                let all = try Self.eagerTitles(upTo(shelves[10_002].id!))
                #expect(try db.withConnection { $0.preparedCount } == prepared, "a batch's statement was prepared again")
                #expect(all.count == 10_003)
                #expect(all["s0"] == ["t0", "t0b"])
                #expect(all["s9999"] == ["t9999"])
                #expect(all["s10000"] == ["t10000"])
                #expect(all["s10002"] == ["t10002"])
                #expect(all["s5000"] == [])
            }
        }
    }

    @Test(arguments: TestEngine.all) func int64ExtremesAndNegativeIDsStayExact(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            _ = try EagerShelf.query().fetch()
            _ = try EagerBook.query().fetch()
            // Ids a double cannot hold (2^53 + 1), the extremes and negative ones.
            let ids: [Int64] = [Int64.max, Int64.min, -3, 9_007_199_254_740_993, 9_007_199_254_740_992]
            for id in ids { try db.execute(#"INSERT INTO "EagerShelf" ("id", "label") VALUES (?, ?)"#, [.integer(id), .text("\(id)")]) }
            for id in ids { try EagerBook.create(["title": "of \(id)", "eagerShelfId": id, "code": id]) }
            let eager = try Self.eagerTitles(EagerShelf.query())
            #expect(eager == Dictionary(uniqueKeysWithValues: ids.map { ("\($0)", ["of \($0)"]) }))
            // Belongs-to the other way round: each book's shelf, by the same ids.
            for book in try EagerBook.query().includes(\.shelf).fetch() { #expect(book.shelf?.label == "\(book.code)") }
            // The list of a `where` in code, with duplicates and an id no row has.
            let found = try EagerBook.query().where("code", .in([Int64.max, -3, -3, 9_007_199_254_740_993, 42])).fetch().map(\.code)
            #expect(Set(found) == [Int64.max, -3, 9_007_199_254_740_993])
            #expect(found.count == 3)
            let others = try EagerBook.query().where("code", .notIn([Int64.max, Int64.min, 9_007_199_254_740_992])).fetch().map(\.code)
            #expect(Set(others) == [-3, 9_007_199_254_740_993])
        }
    }

    @Test(arguments: TestEngine.all) func integerListsOfEveryLengthShareOneSQLText(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            for code in 0..<8 { try EagerBook.create(["title": "b\(code)", "isbn": "\(code)", "code": Int64(code)]) }
            let recorder = SQLRecorder(db)
            for count in 1...8 {
                let codes = (0..<Int64(count)).reversed().map { $0 }
                let inCode = try EagerBook.query().where("code", .in(codes)).fetch().map(\.code)
                let inFormat = try EagerBook.query().where("code IN %@", codes).fetch().map(\.code)
                #expect(inCode == codes.reversed())
                #expect(inFormat == inCode)
                #expect(try EagerBook.query().where(\.code, .notIn(codes)).count() == 8 - count)
            }
            // One SQL text for the code-built lists of every length (the format's has a `?` each).
            let oneParameter = recorder.all.filter { $0.contains("ANY(?)") || $0.contains("ALL(?)") || $0.contains("json_each") }
            #expect(oneParameter.count == 16)
            #expect(Set(oneParameter.filter { !$0.contains("count(") }).count == 1)
            #expect(Set(recorder.all).count == 2 + 8)
            // The column's type applies to the elements as in `IN (?, …)`: on SQLite a TEXT
            // column matches the integer 5 as '5' (PostgreSQL compares no text with an integer,
            // in either form).
            if engine == .sqlite {
                #expect(try EagerBook.query().where("isbn", .in([Int64(5), 6])).fetch().map(\.title) == ["b5", "b6"])
                #expect(try EagerBook.query().where("isbn IN %@", [Int64(5), 6]).fetch().map(\.title) == ["b5", "b6"])
            }
        }
    }

    @Test(arguments: TestEngine.all) func listsTheEngineCannotBindAsOneKeepAParameterPerElement(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            for code in [1, 2, 3] { try EagerBook.create(["title": "b\(code)", "code": Int64(code)]) }
            let recorder = SQLRecorder(db)
            // Empty: matches nothing (NOT IN: everything), no parameter at all.
            #expect(try EagerBook.query().where("code", .in([Int64]())).count() == 0)
            #expect(try EagerBook.query().where("code", .notIn([Int64]())).count() == 3)
            // Text, reals and a mix of types: one parameter per element, as before.
            #expect(try EagerBook.query().where("title", .in(["b1", "b3"])).count() == 2)
            #expect(try EagerBook.query().where("code", .in([1.0, 3.0])).count() == 2)
            #expect(try EagerBook.query().where("code IN %@", arguments: [.list([.integer(2), .real(3)])]).count() == 2)
            #expect(recorder.all.allSatisfy { !$0.contains("json_each") && !$0.contains("ANY") })
        }
    }

    @Test(arguments: TestEngine.all) func throughAndBelongsToPreloadsBindOneList(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let shelves = try ["a", "b", "c"].map { try EagerShelf.create(["label": $0]) }
            let tags = try ["x", "y"].map { try EagerTag.create(["name": $0]) }
            try shelves[0].tags.add(tags[0])
            try shelves[0].tags.add(tags[1])
            try shelves[2].tags.add(tags[1])
            let recorder = SQLRecorder(db)
            var names: [String: [String]] = [:]
            for shelf in try EagerShelf.query().includes(\.tags).fetch() { names[shelf.label] = try shelf.tags.fetch().map(\.name) }
            #expect(names == ["a": ["x", "y"], "b": [], "c": ["y"]])
            #expect(recorder.all.count == 2)
            #expect(recorder.all.last?.contains(engine == .sqlite ? "json_each(?)" : "= ANY(?)") == true)
            // Belongs-to: the parents of books on two shelves, and a book on none.
            for shelf in shelves.prefix(2) { try EagerBook.create(["title": shelf.label, "eagerShelfId": shelf.id]) }
            try EagerBook.create(["title": "none"])
            for book in try EagerBook.query().includes(\.shelf).fetch() { #expect(book.shelf?.label == (book.title == "none" ? nil : book.title)) }
        }
    }

    @Test(arguments: TestEngine.all) func theForeignKeysIndexStillServesTheQuery(engine: TestEngine) throws {
        guard engine == .sqlite else { return }  // PostgreSQL's planner picks by table size: nothing to check on a small one
        try withDatabase(engine) { db throws in
            _ = try EagerBook.query().fetch()
            var plan: [String] = []
            try db.withConnection { connection in
                try connection.withStatement(
                    #"EXPLAIN QUERY PLAN SELECT * FROM "EagerBook" WHERE ("EagerBook"."eagerShelfId" IN (SELECT +value FROM json_each(?))) ORDER BY "EagerBook"."eagerShelfId" ASC, "EagerBook"."id" ASC"#,
                    [.text("[1,2]")]
                ) { statement in
                    while try statement.step() { plan.append(statement.string(3) ?? "") }
                }
            }
            #expect(plan.contains { $0.hasPrefix("SEARCH EagerBook USING INDEX") && $0.contains("(eagerShelfId=?)") }, "\(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
        }
    }
}
