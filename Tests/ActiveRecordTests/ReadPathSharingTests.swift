@_spi(Engines) import ARCore
import ActiveRecord
import ARQuery
import Foundation
import Testing

/// Issue 35, point 2 (the read rows): what the read path now shares or makes in one place
/// must not change an answer. A field condition's predicate tree is made once per form and
/// column on a thread and shared by every query that uses it; records are made by the
/// library's fetch itself (of the queried class); a PostgreSQL row reads its column kinds
/// from a copy made per result; eager loading gathers each owner's children in runs.
@Suite("Read path: shared trees, records made in one place")
struct ReadPathSharingTests {
    final class ShareReader: Model {
        @Column var name: String = ""
        @Column var age: Int = 0
        @Column var nickname: String? = nil
    }

    /// Another table with the same column names: a tree on `age` serves both.
    final class ShareCopy: Model {
        @Column var name: String = ""
        @Column var age: Int = 0
    }

    final class ShareOwner: Model {
        @Column var label: String = ""
        @HasMany var items: Query<ShareItem>
    }

    final class ShareItem: Model {
        @Column var title: String = ""
        @BelongsTo var shareOwner: ShareOwner?
    }

    /// A wide row of every common type, with NULLs between values.
    final class ShareWide: Model {
        @Column var text: String = ""
        @Column var optionalText: String? = nil
        @Column var int: Int = 0
        @Column var optionalInt: Int? = nil
        @Column var int64: Int64 = 0
        @Column var double: Double = 0
        @Column var optionalDouble: Double? = nil
        @Column var bool: Bool = false
        @Column var optionalBool: Bool? = nil
        @Column var data: Data = Data()
        @Column var optionalData: Data? = nil
        @Column var date: Date = Date(timeIntervalSince1970: 0)
        @Column var optionalDate: Date? = nil
    }

    private static let people: [(name: String, age: Int, nickname: String?)] = [
        ("Ann", 30, nil), ("Bob", 25, "bobby"), ("Cy", 30, "c_y"), ("Dee", 41, nil), ("Eve", 25, "100%"),
    ]

    private static func seed() throws {
        for person in people { try ShareReader.create(["name": person.name, "age": person.age, "nickname": person.nickname]) }
        for (name, age) in [("Zed", 30), ("Yan", 99)] { try ShareCopy.create(["name": name, "age": age]) }
    }

    /// The names a condition selects, in id order.
    private static func names(_ condition: FieldCondition, on column: String = "age") throws -> [String] {
        try ShareReader.query().where(column, condition).order(by: "id").fetch().map(\.name)
    }

    @Test(arguments: TestEngine.all) func eachFormOnAColumnKeepsItsOwnMeaning(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try Self.seed()
            // Twice round, forms interleaved on one column and the same forms on others: a tree
            // shared by the wrong form or column would change an answer.
            for _ in 0..<2 {
                #expect(try Self.names(.equal(30)) == ["Ann", "Cy"])
                #expect(try Self.names(.equal(25)) == ["Bob", "Eve"])
                #expect(try Self.names(.notEqual(30)) == ["Bob", "Dee", "Eve"])
                #expect(try Self.names(.lessThan(30)) == ["Bob", "Eve"])
                #expect(try Self.names(.lessThanOrEqual(30)) == ["Ann", "Bob", "Cy", "Eve"])
                #expect(try Self.names(.greaterThan(30)) == ["Dee"])
                #expect(try Self.names(.greaterThanOrEqual(30)) == ["Ann", "Cy", "Dee"])
                #expect(try Self.names(.in([25, 41])) == ["Bob", "Dee", "Eve"])
                #expect(try Self.names(.notIn([25, 41])) == ["Ann", "Cy"])
                #expect(try Self.names(.between(26, 41)) == ["Ann", "Cy", "Dee"])
                #expect(try Self.names(.equal("Cy"), on: "name") == ["Cy"])
                #expect(try Self.names(.isNull, on: "nickname") == ["Ann", "Dee"])
                #expect(try Self.names(.isNotNull, on: "nickname") == ["Bob", "Cy", "Eve"])
                #expect(try Self.names(.equal(nil), on: "nickname") == ["Ann", "Dee"])
                #expect(try Self.names(.like("c_%"), on: "nickname") == ["Cy"])
                #expect(try Self.names(.contains("_"), on: "nickname") == ["Cy"])
                #expect(try Self.names(.contains("%"), on: "nickname") == ["Eve"])
                #expect(try Self.names(.notLike("b%"), on: "nickname") == ["Cy", "Eve"])
                #expect(try Self.names(.hasPrefix("bob"), on: "nickname") == ["Bob"])
                #expect(try Self.names(.hasSuffix("y"), on: "nickname") == ["Bob", "Cy"])
                // The same tree on another model's table reads that table.
                #expect(try ShareCopy.query().where("age", .equal(30)).fetch().map(\.name) == ["Zed"])
            }
        }
    }

    @Test(arguments: TestEngine.all) func aQualifiedColumnKeepsItsTable(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try Self.seed()
            let joined = ShareReader.query().join(ShareCopy.self, .inner, on: "age", "age")
            let readers = try joined.where(column: "name", of: "ShareReader", .equal("Ann")).fetch().map(\.name)
            let copies = try joined.where(column: "name", of: "ShareCopy", .equal("Zed")).order(by: "id").fetch().map(\.name)
            #expect(readers == ["Ann"])
            #expect(copies == ["Ann", "Cy"])
            // And again, in the other order, after both trees are cached.
            #expect(try joined.where(column: "name", of: "ShareCopy", .equal("Yan")).fetch().isEmpty)
            #expect(try joined.where(column: "name", of: "ShareReader", .equal("Cy")).fetch().map(\.name) == ["Cy"])
        }
    }

    @Test(arguments: TestEngine.all) func fetchedRecordsAreOfTheQueriedClassAndSaveAsLoaded(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try Self.seed()
            let all = try ShareReader.all()
            let fetched = try ShareReader.query().where("age", .equal(25)).fetch()
            let found = try #require(try ShareReader.find(all[2].id!))
            #expect(all.allSatisfy { type(of: $0) == ShareReader.self })
            #expect(fetched.map(\.name) == ["Bob", "Eve"])
            #expect(found.name == "Cy" && found.nickname == "c_y" && !found.hasChanges)
            // A record read by each path is a whole record: it changes and saves.
            found.age = 31
            try found.save()
            fetched[0].nickname = nil
            try fetched[0].save()
            #expect(try ShareReader.find(found.id!)?.age == 31)
            #expect(try ShareReader.find(fetched[0].id!)?.nickname == nil)
            #expect(try ShareCopy.all().map(\.name) == ["Zed", "Yan"])
        }
    }

    @Test(arguments: TestEngine.all) func wideRowsWithNullsReadBackWhole(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            var made: [ShareWide] = []
            for index in 0..<6 {
                let wide = ShareWide()
                wide.text = "row \(index) é"
                wide.optionalText = index % 2 == 0 ? nil : "odd \(index)"
                wide.int = -index
                wide.optionalInt = index % 3 == 0 ? nil : index * 7
                wide.int64 = Int64(index) << 40
                wide.double = Double(index) + 0.25
                wide.optionalDouble = index % 2 == 1 ? nil : Double(index) / 3
                wide.bool = index % 2 == 0
                wide.optionalBool = index % 3 == 1 ? nil : index % 3 == 0
                wide.data = Data([UInt8(index), 0, 255])
                wide.optionalData = index % 2 == 0 ? nil : Data(repeating: UInt8(index), count: index)
                wide.date = Date(timeIntervalSince1970: 1_000_000 + Double(index))
                wide.optionalDate = index % 3 == 2 ? nil : Date(timeIntervalSince1970: 2_000_000 + Double(index))
                try wide.save()
                made.append(wide)
            }
            // Twice: the second run of the cached statement reads with the kinds it kept.
            for _ in 0..<2 {
                let read = try ShareWide.query().order(by: "id").fetch()
                #expect(read.count == made.count)
                for (got, want) in zip(read, made) {
                    #expect(got.text == want.text && got.optionalText == want.optionalText)
                    #expect(got.int == want.int && got.optionalInt == want.optionalInt && got.int64 == want.int64)
                    #expect(got.double == want.double && got.optionalDouble == want.optionalDouble)
                    #expect(got.bool == want.bool && got.optionalBool == want.optionalBool)
                    #expect(got.data == want.data && got.optionalData == want.optionalData)
                    #expect(got.date == want.date && got.optionalDate == want.optionalDate)
                    #expect(!got.hasChanges)
                }
            }
        }
    }

    @Test(arguments: TestEngine.all) func eagerChildrenInterleavedByIdGoToTheirOwners(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let owners = try ["a", "b", "c", "d"].map { try ShareOwner.create(["label": $0]) }
            // Child ids alternate between a and b, c has one, d none.
            for index in 0..<6 {
                let owner = owners[index % 2]
                try ShareItem.create(["title": "\(owner.label)\(index)", "shareOwnerId": owner.id])
            }
            try ShareItem.create(["title": "c6", "shareOwnerId": owners[2].id])
            try ShareItem.create(["title": "loose"])
            for _ in 0..<2 {
                var titles: [String: [String]] = [:]
                for owner in try ShareOwner.query().includes(\.items).fetch() {
                    titles[owner.label] = try owner.items.fetch().map(\.title)
                }
                #expect(titles == ["a": ["a0", "a2", "a4"], "b": ["b1", "b3", "b5"], "c": ["c6"], "d": []])
            }
        }
    }
}
