@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

final class PagedUser: Model {
    @Column var name: String = ""
    @Column var age: Int? = nil
    @Column var score: Double = 0
}

@Suite("Pagination: keyset and limit/offset, stable on ties")
struct PaginationTests {
    /// 17 users: runs of equal ages longer than a page, NULL ages, equal scores.
    func seed() throws -> [PagedUser] {
        let ages: [Int?] = [30, 20, 30, nil, 30, 20, 40, 30, nil, 20, 30, 40, 30, 10, nil, 30, 20]
        let names = ["kim", "ada", "bo", "cy", "ada", "dee", "eve", "fay", "gus", "hal", "ida", "jo", "kim", "lu", "mo", "ned", "ola"]
        var users: [PagedUser] = []
        for (index, age) in ages.enumerated() {
            let user = PagedUser()
            user.name = names[index]
            user.age = age
            user.score = Double(index % 3)
            try user.save()
            users.append(user)
        }
        return users
    }

    /// The order the keys give in Swift: NULL first ascending, last descending, ties by id.
    func expected(_ users: [PagedUser], _ keys: [(KeyPath<PagedUser, Int?>?, KeyPath<PagedUser, String>?, Bool)]) -> [Int64] {
        users.sorted { a, b in
            for (age, name, ascending) in keys {
                var order: ComparisonResult = .orderedSame
                if let age {
                    switch (a[keyPath: age], b[keyPath: age]) {
                    case (nil, nil): order = .orderedSame
                    case (nil, _): order = .orderedAscending
                    case (_, nil): order = .orderedDescending
                    case (let x?, let y?): order = x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
                    }
                } else if let name {
                    let (x, y) = (a[keyPath: name], b[keyPath: name])
                    order = x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
                }
                if order != .orderedSame { return (order == .orderedAscending) == ascending }
            }
            return a.id! < b.id!
        }.map { $0.id! }
    }

    /// Every page of `query`, `size` records each, through the cursors.
    func allPages(_ query: Query<PagedUser>, size: Int) throws -> (ids: [Int64], pages: Int) {
        var ids: [Int64] = []
        var cursor: PageCursor?
        var pages = 0
        repeat {
            let page = try query.page(size: size, after: cursor)
            #expect(page.records.count <= size)
            ids += page.records.map { $0.id! }
            cursor = page.nextCursor
            pages += 1
        } while cursor != nil && pages < 100
        return (ids, pages)
    }

    @Test(arguments: TestEngine.all) func keysetPagesSkipAndRepeatNothingAcrossTies(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let users = try seed()
            let cases: [(Query<PagedUser>, [(KeyPath<PagedUser, Int?>?, KeyPath<PagedUser, String>?, Bool)])] = [
                (PagedUser.query().order(by: \.age), [(\.age, nil, true)]),
                (PagedUser.query().order(by: \.age, ascending: false), [(\.age, nil, false)]),
                (PagedUser.query().order(by: \.age).order(by: \.name, ascending: false), [(\.age, nil, true), (nil, \.name, false)]),
                (PagedUser.query().order(by: \.name).order(by: \.age, ascending: false), [(nil, \.name, true), (\.age, nil, false)]),
                (PagedUser.query(), []),
            ]
            for (query, keys) in cases {
                let whole = expected(users, keys)
                #expect(try query.orderedStably().fetch().compactMap(\.id) == whole)
                for size in [1, 3, 4, 17, 20] {
                    let (ids, pages) = try allPages(query, size: size)
                    #expect(ids == whole, "size \(size), keys \(keys.count)")
                    #expect(pages == max(1, (whole.count + size - 1) / size), "size \(size)")
                }
            }
            // With a condition: only its rows, paged.
            let adults = PagedUser.query().where(\.age >= 20).order(by: \.age, ascending: false)
            #expect(try allPages(adults, size: 4).ids == expected(users.filter { ($0.age ?? 0) >= 20 }, [(\.age, nil, false)]))
        }
    }

    @Test(arguments: TestEngine.all) func afterValuesOrARecordMeansRowsAfterIt(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let users = try seed()
            let recorder = SQLRecorder(db)
            // (age, id) > (30, 5): the rest of the 30s after id 5, then the 40s.
            let after = try PagedUser.query().order(by: \.age).after([30, 5]).fetch().compactMap(\.id)
            #expect(after == [8, 11, 13, 16, 7, 12])
            let sql = try #require(recorder.all.last)
            #expect(sql.contains(#"ORDER BY "PagedUser"."age" ASC"#) && sql.contains(#""PagedUser"."id" ASC"#), "\(sql)")
            #expect(sql.contains(#""PagedUser"."age" >= "#) && sql.contains(#""PagedUser"."id" > "#), "\(sql)")
            // The same from the record itself.
            #expect(try PagedUser.query().order(by: \.age).after(users[4]).fetch().compactMap(\.id) == after)
            // Descending: smaller ages, then the NULLs (last when descending).
            #expect(try PagedUser.query().order(by: \.age, ascending: false).after([20, 6]).fetch().compactMap(\.id) == [10, 17, 14, 4, 9, 15])
            // After a NULL: ascending, the other NULLs then every age; descending, only NULLs.
            #expect(try PagedUser.query().order(by: \.age).after([nil, 9]).limit(3).fetch().compactMap(\.id) == [15, 14, 2])
            #expect(try PagedUser.query().order(by: \.age, ascending: false).after([nil, 9]).fetch().compactMap(\.id) == [15])
            // Ordered by id only: the primary key is not added twice.
            #expect(try PagedUser.query().order(by: "id", ascending: false).after([3]).fetch().compactMap(\.id) == [2, 1])
            // Keyset pages stay right when rows are inserted before them; an offset would shift.
            let first = try PagedUser.query().order(by: \.age).page(size: 5)
            let early = PagedUser()
            early.age = 1
            try early.save()
            let second = try PagedUser.query().order(by: \.age).page(size: 5, after: first.nextCursor)
            #expect(second.records.first?.id == expected(users, [(\.age, nil, true)])[5])
        }
    }

    @Test(arguments: TestEngine.all) func limitOffsetPagesAreStableOnTies(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let users = try seed()
            let whole = expected(users, [(\.age, nil, true)])
            var ids: [Int64] = []
            for number in 1...6 { ids += try PagedUser.query().order(by: \.age).page(number: number, size: 3).compactMap(\.id) }
            #expect(ids == whole)
            let recorder = SQLRecorder(db)
            _ = try PagedUser.query().order(by: \.age).orderedStably().limit(3).offset(3).fetch()
            #expect(recorder.all.last?.contains(#"ORDER BY "PagedUser"."age" ASC"#) == true)
            #expect(recorder.all.last?.contains(#", "PagedUser"."id" ASC"#) == true)
            // Plain limit/offset keeps the order it was given (no key added): what it did before.
            _ = try PagedUser.query().order(by: \.age).limit(3).fetch()
            #expect(recorder.all.last?.contains(#""id" ASC"#) == false)
        }
    }

    @Test(arguments: TestEngine.all) func misuseIsAClearError(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try seed()
            let count = expectError(.invalidValue) { _ = try PagedUser.query().order(by: \.age).after([30]).fetch() }
            #expect(count?.message.contains("pages by 2 keys (age, id)") == true)
            _ = expectError(.misuse) { _ = try PagedUser.query().orderRandomly().page(size: 3) }
            _ = expectError(.invalidValue) { _ = try PagedUser.query().page(size: 0) }
            _ = expectError(.invalidValue) { _ = try PagedUser.query().page(number: 0, size: 3) }
            _ = expectError(.misuse) { _ = try PagedUser.query().after(PagedUser()).fetch() }
            _ = expectError(.invalidPredicate) { _ = try PagedUser.query().order(by: "count(*)").after([1, 1]).fetch() }
            _ = expectError(.unknownColumn) { _ = try PagedUser.query().order(by: "nope").after(["x", 1]).fetch() }
            // A hostile value is a value.
            #expect(try PagedUser.query().order(by: \.name).after(["'); DROP TABLE PagedUser; --", 1]).count() == 17)
            #expect(try PagedUser.query().count() == 17)
        }
    }
}
