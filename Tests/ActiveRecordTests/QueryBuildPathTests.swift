@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A record for the query-building tests: a text, a number, a real, a date and two optionals.
final class BuildPathItem: Model {
    @Column var name: String = ""
    @Column(index: .index) var rank: Int = 0
    @Column var weight: Double = 0
    @Column var madeOn: Date = Date(timeIntervalSince1970: 0)
    @Column var note: String? = nil
    @Column var size: Int? = nil
    @BelongsTo var buildPathShelf: BuildPathShelf?
}

/// The owner of ``BuildPathItem``s, for relation queries built on.
final class BuildPathShelf: Model {
    @Column var title: String = ""
    @HasMany var buildPathItems: Query<BuildPathItem>
}

/// The calls that build a query in place (`where` on a column with a typed or optional value,
/// `where` with a format and one or two typed values, `order`, `limit`), each repeated with other
/// values so that every run after the first matches the compiled shape of the one before:
/// the rows must be those of the values given each time, shapes that differ only in what
/// matching compares (operator, `NULL` or not, column, limit or not, order) must stay apart,
/// and a query built on another must leave it as it was.
@Suite("Queries: built in place, repeated with other values")
struct QueryBuildPathTests {
    /// Twelve items, ids 1…12: rank = id % 4, weight = id / 2, made on consecutive days from
    /// 2001-01-01, `note` set on even ids ("note 2", …), `size` on ids divisible by 3 (id * 10);
    /// the names hold a quote, non-ASCII text and LIKE wildcards.
    static let start = Date(timeIntervalSince1970: 978_307_200)
    static let names = ["O'Brien", "Анна", "50%_off", "plain", "Zoë", "a\\b", "x", "y", "z", "O'Brien", "Анна", "last"]

    static func seed() throws -> [BuildPathShelf] {
        let shelves = try (1...2).map { number in
            let shelf = BuildPathShelf()
            shelf.title = "shelf \(number)"
            try shelf.save()
            return shelf
        }
        for id in 1...12 {
            let item = BuildPathItem()
            item.name = names[id - 1]
            item.rank = id % 4
            item.weight = Double(id) / 2
            item.madeOn = start.addingTimeInterval(Double(id - 1) * 86_400)
            item.note = id % 2 == 0 ? "note \(id)" : nil
            item.size = id % 3 == 0 ? id * 10 : nil
            item.buildPathShelf = shelves[id <= 6 ? 0 : 1]
            try item.save()
        }
        return shelves
    }

    static func ids(_ items: [BuildPathItem]) -> [Int64] { items.compactMap(\.id) }

    @Test(arguments: TestEngine.all) func oneQueryBuiltWithEachValueReadsItsRows(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.seed()
            for round in 0..<3 {
                for rank in 0..<5 {
                    let expected = (1...12).filter { $0 % 4 == rank }.map(Int64.init)
                    #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(rank)).order(by: "id").fetch()) == expected,
                            "round \(round), rank \(rank)")
                    // The same condition through an existential value and a format: the same rows.
                    let existential: any ColumnValue = rank
                    #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(existential)).fetch()) == expected)
                    #expect(try Self.ids(BuildPathItem.query().where("rank = %@", rank).fetch()) == expected)
                    let others = (1...12).filter { $0 % 4 != rank }.map(Int64.init)
                    #expect(try Self.ids(BuildPathItem.query().where("rank", .notEqual(rank)).fetch()) == others)
                }
            }
        }
    }

    @Test(arguments: TestEngine.all) func typedOptionalsMatchNullAsTheExistentialFormDoes(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.seed()
            let withoutNote: [Int64] = [1, 3, 5, 7, 9, 11], withNote: [Int64] = [2, 4, 6, 8, 10, 12]
            for _ in 0..<2 {
                let none: String? = nil, some: String? = "note 4"
                #expect(try Self.ids(BuildPathItem.query().where("note", .equal(none)).fetch()) == withoutNote)
                #expect(try Self.ids(BuildPathItem.query().where("note", .equal(nil)).fetch()) == withoutNote)
                #expect(try Self.ids(BuildPathItem.query().where("note", .equal(some)).fetch()) == [4])
                #expect(try Self.ids(BuildPathItem.query().where("note", .notEqual(none)).fetch()) == withNote)
                #expect(try Self.ids(BuildPathItem.query().where("note", .notEqual(nil)).fetch()) == withNote)
                #expect(try Self.ids(BuildPathItem.query().where("note", .notEqual(some)).fetch()) == [2, 6, 8, 10, 12])
                let noSize: Int? = nil, size: Int? = 90
                #expect(try Self.ids(BuildPathItem.query().where("size", .equal(size)).fetch()) == [9])
                #expect(try Self.ids(BuildPathItem.query().where("size", .equal(noSize)).fetch()) == [1, 2, 4, 5, 7, 8, 10, 11])
                #expect(try Self.ids(BuildPathItem.query().where("size", .equal(size)).fetch()) == [9])
            }
        }
    }

    @Test(arguments: TestEngine.all) func textsDatesAndRealsAreBoundEachTime(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.seed()
            for _ in 0..<2 {
                #expect(try Self.ids(BuildPathItem.query().where("name", .equal("O'Brien")).fetch()) == [1, 10])
                #expect(try Self.ids(BuildPathItem.query().where("name", .equal("Анна")).fetch()) == [2, 11])
                #expect(try Self.ids(BuildPathItem.query().where("name", .equal("50%_off")).fetch()) == [3])
                #expect(try Self.ids(BuildPathItem.query().where("name", .equal("a\\b")).fetch()) == [6])
                #expect(try Self.ids(BuildPathItem.query().where("name", .equal("O'Brien' OR 1=1 --")).fetch()) == [])
                #expect(try Self.ids(BuildPathItem.query().where("name = %@", "Zoë").fetch()) == [5])
                for day in [0, 4, 11] {
                    let date = Self.start.addingTimeInterval(Double(day) * 86_400)
                    #expect(try Self.ids(BuildPathItem.query().where("madeOn", .equal(date)).fetch()) == [Int64(day + 1)])
                    #expect(try Self.ids(BuildPathItem.query().where("madeOn = %@", date).fetch()) == [Int64(day + 1)])
                }
                for weight in [0.5, 3.0, 6.0] {
                    #expect(try Self.ids(BuildPathItem.query().where("weight", .equal(weight)).fetch()) == [Int64(weight * 2)])
                }
                #expect(try Self.ids(BuildPathItem.query().where("weight >= %@ AND rank = %@", 4.0, 1).fetch()) == [9])
                #expect(try Self.ids(BuildPathItem.query().where("weight >= %@ AND rank = %@", 1.0, 3).fetch()) == [3, 7, 11])
            }
        }
    }

    @Test(arguments: TestEngine.all) func shapesThatDifferOnlyInWhatMatchingComparesStayApart(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.seed()
            for _ in 0..<3 {
                // One column and value, each operator; one operator and value, each column.
                #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(3)).fetch()) == [3, 7, 11])
                #expect(try Self.ids(BuildPathItem.query().where("rank", .notEqual(3)).fetch()).count == 9)
                #expect(try Self.ids(BuildPathItem.query().where("rank", .greaterThanOrEqual(3)).fetch()) == [3, 7, 11])
                #expect(try Self.ids(BuildPathItem.query().where("rank", .lessThan(3)).fetch()).count == 9)
                #expect(try Self.ids(BuildPathItem.query().where("size", .equal(30)).fetch()) == [3])
                #expect(try Self.ids(BuildPathItem.query().where("id", .equal(3)).fetch()) == [3])
                // A value, then NULL, on one column.
                #expect(try Self.ids(BuildPathItem.query().where("note", .equal("note 2")).fetch()) == [2])
                #expect(try Self.ids(BuildPathItem.query().where("note", .equal(nil as String?)).fetch()).count == 6)
                // With and without a limit, ascending and descending, one condition and two.
                #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(1)).fetch()) == [1, 5, 9])
                #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(1)).limit(2).fetch()) == [1, 5])
                #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(1)).order(by: "id", ascending: false).fetch()) == [9, 5, 1])
                #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(1)).order(by: "weight").fetch()) == [1, 5, 9])
                #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(1)).where("size", .equal(nil)).fetch()) == [1, 5])
                #expect(try Self.ids(BuildPathItem.query().where("size", .equal(nil)).where("rank", .equal(1)).fetch()) == [1, 5])
                // The format form: the same text with one and with two values.
                #expect(try Self.ids(BuildPathItem.query().where("rank = %@", 2).fetch()) == [2, 6, 10])
                #expect(try Self.ids(BuildPathItem.query().where("rank = %@ AND weight > %@", 2, 3.0).fetch()) == [10])
            }
        }
    }

    @Test(arguments: TestEngine.all) func orderAndLimitTakeTheirValuesEachTime(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.seed()
            for limit in [1, 3, 0, 12, 2] {
                let descending = (1...12).reversed().map(Int64.init)
                #expect(try Self.ids(BuildPathItem.query().order(by: "weight", ascending: false).limit(limit).fetch())
                            == Array(descending.prefix(limit)))
                #expect(try Self.ids(BuildPathItem.query().where("rank", .equal(0)).order(by: "id").limit(limit).fetch())
                            == Array([4, 8, 12].prefix(limit)))
                #expect(try Self.ids(BuildPathItem.query().where("rank = %@", 0).order(by: "id", ascending: false).limit(limit).fetch())
                            == Array([12, 8, 4].prefix(limit)))
                #expect(try BuildPathItem.query().where("rank", .equal(2)).order(by: "id").limit(limit).offset(1).fetch().count
                            == min(max(limit, 0), 2))
            }
            let error = expectError(.invalidValue) { _ = try BuildPathItem.query().where("rank", .equal(0)).limit(-1).fetch() }
            #expect(error?.message.contains("limit(-1)") == true)
        }
    }

    @Test(arguments: TestEngine.all) func aQueryBuiltOnAnotherLeavesItAsItWas(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.seed()
            let base = BuildPathItem.query().where("rank", .equal(2))
            let limited = base.limit(1)
            let narrowed = base.where("note", .equal(nil)).where("weight = %@", 5.0)
            let ordered = base.order(by: "id", ascending: false)
            #expect(try Self.ids(base.fetch()) == [2, 6, 10])
            #expect(try Self.ids(limited.fetch()) == [2])
            #expect(try Self.ids(narrowed.fetch()) == [])
            #expect(try Self.ids(base.where("weight = %@", 3.0).fetch()) == [6])
            #expect(try Self.ids(ordered.fetch()) == [10, 6, 2])
            #expect(try Self.ids(base.fetch()) == [2, 6, 10])
        }
    }

    @Test(arguments: TestEngine.all) func aRelationQueryNarrowedRunsItsConditions(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.seed()
            // Eager-loaded: the relation's own query answers from memory; one built on it runs SQL.
            let shelves = try BuildPathShelf.query().includes(\.buildPathItems).order(by: "id").fetch()
            #expect(shelves.count == 2)
            #expect(try Self.ids(shelves[0].buildPathItems.fetch()) == [1, 2, 3, 4, 5, 6])
            for rank in 0..<4 {
                #expect(try Self.ids(shelves[0].buildPathItems.where("rank", .equal(rank)).fetch())
                            == (1...6).filter { $0 % 4 == rank }.map(Int64.init))
                #expect(try Self.ids(shelves[1].buildPathItems.where("rank = %@", rank).fetch())
                            == (7...12).filter { $0 % 4 == rank }.map(Int64.init))
            }
            #expect(try Self.ids(shelves[1].buildPathItems.order(by: "id", ascending: false).limit(2).fetch()) == [12, 11])
            #expect(try Self.ids(shelves[1].buildPathItems.fetch()) == [7, 8, 9, 10, 11, 12])
        }
    }
}
