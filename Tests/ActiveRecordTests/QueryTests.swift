@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

final class Person: Model {
    @Column var name: String = ""
    @Column(index: .index) var age: Int = 0
    @Column var born: Date = Date(timeIntervalSince1970: 0)
    @Column var note: String? = nil
    @Column var teamId: Int64? = nil
}

/// Six people, ids 1…6, born on consecutive days from 2000-01-01.
func seedPeople() throws {
    let start = Date(timeIntervalSince1970: 946_684_800)
    let people: [(String, Int, String?)] = [
        ("Alex", 31, "first"), ("Алексей", 25, nil), ("John", 40, "boss"),
        ("Maria", 25, nil), ("Zoe", 19, "new"), ("alex", 52, nil),
    ]
    for (offset, (name, age, note)) in people.enumerated() {
        try Person.create([
            "name": name, "age": age, "note": note,
            "born": start.addingTimeInterval(Double(offset) * 86_400),
        ])
    }
}

@Suite("Queries: the lazy fetcher")
struct QueryTests {
    @Test(arguments: TestEngine.all) func buildingAQueryRunsNothing(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let recorder = SQLRecorder(db)
            let query = Person.query().where("age > %@", 20).order(by: "name").limit(2)
            _ = query.offset(1).only("name")
            #expect(recorder.all.isEmpty)
            #expect(try query.fetch().map(\.name) == ["Alex", "John"])
            #expect(recorder.all == [
                #"SELECT "Person"."id", "Person"."createdAt", "Person"."updatedAt", "Person"."name", "Person"."age", "Person"."born", "Person"."note", "Person"."teamId" FROM "Person" WHERE ("Person"."age" > ?) ORDER BY \#(db.dialect.orderTerm(#""Person"."name""#, ascending: true)) LIMIT ? OFFSET ?"#,
            ])
        }
    }

    /// One or two arguments of a known type take the generic `where` forms; `nil` literals and
    /// existentials take the variadic one. Both make the same conditions.
    @Test(arguments: TestEngine.all) func typedAndVariadicWhereArgumentsAgree(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            func names(_ query: Query<Person>) throws -> [String] { try query.fetch().map(\.name) }
            let noNote: String? = nil
            let aNote: String? = "boss"
            let ages = [25, 40]
            let born = Date(timeIntervalSince1970: 946_684_800 + 86_400)
            let erased: [(any ColumnValue)?] = [25, noNote, aNote, ages, born, 31, "Alex"]
            #expect(try names(Person.query().where("age = %@", 25)) == ["Алексей", "Maria"])
            #expect(try names(Person.query().where("age = %@", erased[0])) == ["Алексей", "Maria"])
            // nil with = matches NULL, typed (String?) or a literal (the variadic form).
            #expect(try names(Person.query().where("note = %@", noNote)) == ["Алексей", "Maria", "alex"])
            #expect(try names(Person.query().where("note = %@", nil)) == ["Алексей", "Maria", "alex"])
            #expect(try names(Person.query().where("note = %@", erased[1])) == ["Алексей", "Maria", "alex"])
            #expect(try names(Person.query().where("note = %@", aNote)) == ["John"])
            // An array is a list for IN, typed or not.
            #expect(try names(Person.query().where("age IN %@", ages)) == ["Алексей", "John", "Maria"])
            #expect(try names(Person.query().where("age IN %@", erased[3])) == ["Алексей", "John", "Maria"])
            // Two arguments of two types; a date.
            #expect(try names(Person.query().where("age > %@ AND name != %@", 30, "Alex")) == ["John", "alex"])
            #expect(try names(Person.query().where("age > %@ AND name != %@", erased[5], erased[6])) == ["John", "alex"])
            #expect(try names(Person.query().where("born = %@", born)) == ["Алексей"])
            #expect(try names(Person.query().where("born = %@", erased[4])) == ["Алексей"])
            // A value that does not convert is the terminal call's error, in both forms.
            expectError(.invalidValue) { _ = try Person.query().where("age > %@", Double.nan).fetch() }
            expectError(.invalidValue) { _ = try Person.query().where("age > %@ AND age < %@", 1.0, Double.nan).fetch() }
            // Three or more arguments: the variadic form.
            #expect(try names(Person.query().where("age BETWEEN %@ AND %@ AND note = %@", 20, 35, "first")) == ["Alex"])
        }
    }

    @Test(arguments: TestEngine.all) func limitOffsetAndBoth(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            #expect(try Person.query().limit(2).fetch().map(\.id) == [1, 2])
            #expect(try Person.query().offset(4).fetch().map(\.id) == [5, 6])
            #expect(try Person.query().offset(2).limit(2).fetch().map(\.id) == [3, 4])
            #expect(try Person.query().offset(5).limit(10).fetch().map(\.id) == [6])
            expectError(.invalidValue) { _ = try Person.query().limit(-1).fetch() }
        }
    }

    @Test(arguments: TestEngine.all) func ascendingAndDescendingWithAndWithoutLimitAndOffset(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            #expect(try Person.query().order(by: "age").fetch().map(\.age) == [19, 25, 25, 31, 40, 52])
            #expect(try Person.query().order(by: "age", ascending: false).fetch().map(\.age) == [52, 40, 31, 25, 25, 19])
            #expect(try Person.query().order(by: "age", ascending: false).limit(2).fetch().map(\.name) == ["alex", "John"])
            #expect(try Person.query().order(by: "age").offset(1).limit(3).fetch().map(\.age) == [25, 25, 31])
            // Several keys, kept in the order given.
            #expect(try Person.query().order(by: "age").order(by: "name", ascending: false).fetch().map(\.name)
                == ["Zoe", "Алексей", "Maria", "Alex", "John", "alex"])
            #expect(try Person.query().order(by: "name").order(by: "age").fetch().first?.name == "Alex")
        }
    }

    @Test(arguments: TestEngine.all) func randomOrderIsValidSQLAndReturnsEveryRow(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let recorder = SQLRecorder(db)
            let ids = try Person.query().orderRandomly().fetch().compactMap(\.id)
            #expect(ids.sorted() == [1, 2, 3, 4, 5, 6])
            #expect(recorder.all.last?.hasSuffix("ORDER BY random()") == true)
            #expect(try Person.query().where("age = 25").orderRandomly().limit(1).fetch().first?.age == 25)
        }
    }

    @Test(arguments: TestEngine.all) func betweenTwoDates(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let from = Date(timeIntervalSince1970: 946_684_800 + 86_400)       // day 2
            let to = Date(timeIntervalSince1970: 946_684_800 + 3 * 86_400)     // day 4
            #expect(try Person.query().where("born", .between(from, to)).fetch().map(\.id) == [2, 3, 4])
            #expect(try Person.query().where("born BETWEEN %@ AND %@", from, to).fetch().map(\.id) == [2, 3, 4])
            #expect(try Person.query().where("born NOT BETWEEN %@ AND %@", from, to).fetch().map(\.id) == [1, 5, 6])
        }
    }

    @Test(arguments: TestEngine.all) func fieldConditions(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            func names(_ query: Query<Person>) throws -> [String] { try query.fetch().map(\.name) }
            #expect(try names(Person.query().where("name", .equal("John"))) == ["John"])
            #expect(try names(Person.query().where("age", .notEqual(25))) == ["Alex", "John", "Zoe", "alex"])
            #expect(try names(Person.query().where("id", .in([1, 5]))) == ["Alex", "Zoe"])
            #expect(try names(Person.query().where("id", .in(Set<Int64>([2])))) == ["Алексей"])
            #expect(try names(Person.query().where("id", .notIn([1, 2, 3, 4]))) == ["Zoe", "alex"])
            #expect(try names(Person.query().where("id", .in([Int]()))) == [])
            #expect(try Person.query().where("id", .notIn([Int]())).count() == 6)
            #expect(try names(Person.query().where("name", .like("al%"))) == ["Alex", "alex"])
            #expect(try names(Person.query().where("name", .notLike("%a%"))) == ["Алексей", "John", "Zoe"])
            #expect(try names(Person.query().where("note", .isNull)) == ["Алексей", "Maria", "alex"])
            #expect(try names(Person.query().where("note", .isNotNull)) == ["Alex", "John", "Zoe"])
            #expect(try names(Person.query().where("note", .equal(nil))) == ["Алексей", "Maria", "alex"])
            #expect(try names(Person.query().where("age", .lessThan(25))) == ["Zoe"])
            #expect(try names(Person.query().where("age", .lessThanOrEqual(25))) == ["Алексей", "Maria", "Zoe"])
            #expect(try names(Person.query().where("age", .greaterThan(40))) == ["alex"])
            #expect(try names(Person.query().where("age", .greaterThanOrEqual(40))) == ["John", "alex"])
        }
    }

    @Test(arguments: TestEngine.all) func theSeedsPredicateWithOrAndIn(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let found = try Person.query()
                .where("'person'.'name' = %@ or 'person'.'id' in %@", "John", [1, 5])
                .order(by: "id").fetch()
            #expect(found.map(\.name) == ["Alex", "John", "Zoe"])
        }
    }

    @Test(arguments: TestEngine.all) func severalWhereCallsAreParenthesisedAndANDed(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            // The originals turned "a OR b" then "c" into "a OR (b AND c)".
            let recorder = SQLRecorder(db)
            let found = try Person.query().where("name = %@ OR name = %@", "Alex", "Zoe").where("age > %@", 20).fetch()
            #expect(found.map(\.name) == ["Alex"])
            #expect(recorder.all.last?.contains(#"WHERE ("Person"."name" = ? OR "Person"."name" = ?) AND ("Person"."age" > ?)"#) == true)
        }
    }

    @Test(arguments: TestEngine.all) func unicodeLike(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            #expect(try Person.query().where("name LIKE %@", "%лекс%").fetch().map(\.name) == ["Алексей"])
            #expect(try Person.query().where("name", .equal("Алексей")).count() == 1)
            #expect(try Person.query().where("name LIKE 'Алексей'").count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func onlyAndExceptLeaveOtherColumnsAtTheirDefaults(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let slim = try #require(try Person.query().only("name").where("id = 3").fetch().first)
            #expect(slim.id == 3 && slim.name == "John" && slim.age == 0 && slim.note == nil)
            #expect(slim.createdAt != nil && !slim.hasChanges)
            // Saving a partly loaded record writes only what changed.
            slim.name = "Johnny"
            let recorder = SQLRecorder(db)
            try slim.save()
            #expect(recorder.all == [#"UPDATE "Person" SET "name" = ?, "updatedAt" = ? WHERE "id" = ?"#])
            let full = try #require(try Person.find(3))
            #expect(full.name == "Johnny" && full.age == 40 && full.note == "boss")
            let rest = try #require(try Person.query().except("name", "note").where("id = 3").first())
            #expect(rest.name == "" && rest.note == nil && rest.age == 40)
            expectError(.unknownColumn) { _ = try Person.query().only("nmae").fetch() }
        }
    }

    @Test(arguments: TestEngine.all) func firstLastCountAndExists(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            #expect(try Person.query().where("age = 25").first()?.name == "Алексей")
            #expect(try Person.query().where("age = 25").last()?.name == "Maria")
            #expect(try Person.query().order(by: "age").last()?.name == "alex")
            #expect(try Person.query().where("age = 25").count() == 2)
            #expect(try Person.query().count() == 6)
            #expect(try Person.query().limit(4).count() == 4)
            #expect(try Person.query().offset(5).limit(4).count() == 1)
            #expect(try Person.query().where("age > 100").exists() == false)
            #expect(try Person.query().where("age > 50").exists())
            #expect(try Person.query().where("age > 100").first() == nil)
        }
    }

    @Test(arguments: TestEngine.all) func distinctAndValues(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            #expect(try Person.query().distinct().values("age").count == 5)
            #expect(try Person.query().distinct().order(by: "age").values("age") == [[.integer(19)], [.integer(25)], [.integer(31)], [.integer(40)], [.integer(52)]])
        }
    }

    @Test(arguments: TestEngine.all) func literalsInTheFormatAreBoundToo(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let recorder = SQLRecorder(db)
            #expect(try Person.query().where("name = 'Zoe' AND age = 19 AND age > -1.5").count() == 1)
            #expect(recorder.all.last == #"SELECT count(*) FROM "Person" WHERE ("Person"."name" = ? AND "Person"."age" = ? AND "Person"."age" > ?)"#)
        }
    }

    @Test(arguments: TestEngine.all) func cursorIteratesInOrderAndForEachToo(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let cursor = try Person.query().where("age >= 25").order(by: "age").cursor()
            var ages: [Int] = []
            while let person = try cursor.next() { ages.append(person.age) }
            #expect(ages == [25, 25, 31, 40, 52])
            #expect(try cursor.next() == nil)
            var names: [String] = []
            try Person.query().order(by: "name").limit(2).forEach { names.append($0.name) }
            #expect(names == ["Alex", "John"])
            // A cursor released early finalizes its statement; the database stays usable.
            var early: RecordCursor<Person>? = try Person.query().cursor()
            _ = try early?.next()
            early = nil
            try Person.create(["name": "after"])
            #expect(try Person.count() == 7)
        }
    }
}

@Suite("Queries: edges")
struct QueryEdgeTests {
    @Test(arguments: TestEngine.all) func orderTyposAndQualifiersAreClearErrors(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let column = expectError(.unknownColumn) { _ = try Person.query().order(by: "nmae").fetch() }
            #expect(column?.message == "unknown column 'nmae' at position 1 in \"nmae\"; Person's columns are: id, createdAt, updatedAt, name, age, born, note, teamId")
            let table = expectError(.unknownTable) { _ = try Person.query().order(by: "Team.title").fetch() }
            #expect(table?.message == "unknown table 'Team' at position 1 in \"Team.title\"; the query has: Person")
            expectError(.invalidPredicate) { _ = try Person.query().order(by: "name; DROP TABLE Person").fetch() }
            #expect(try Person.count() == 6)
        }
    }

    @Test(arguments: TestEngine.all) func onlyReservedColumnsAndAQueryIsAValue(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let bare = try #require(try Person.query().only("id").where("age = 19").first())
            #expect(bare.id == 5 && bare.name == "" && bare.createdAt != nil)
            let base = Person.query().where("age > 20")
            let narrowed = base.where("age < 35")
            #expect(try base.count() == 5 && narrowed.count() == 3)
        }
    }

    /// `Query` and `DynamicQuery` (the C API's) run one compiler: same SQL, same results,
    /// same messages.
    @Test(arguments: TestEngine.all) func queryAndDynamicQueryShareOneCompiler(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let people = DynamicModel(try Person.schema())
            _ = try DynamicQuery(people).count()  // its first use checks the table (schema queries)
            let recorder = SQLRecorder(db)
            var names: [String] = [], values: [DatabaseValue] = []
            let typed = try recorder.during {
                names = try Person.query().where("age > %@ AND note IS NOT NULL", 20).order(by: "age", ascending: false)
                    .offset(1).limit(2).fetch().map(\.name)
            }
            let dynamic = try recorder.during {
                let query = DynamicQuery(people, where: "age > %@ AND note IS NOT NULL", arguments: [.value(.integer(20))])
                values = try query.order(by: "age", ascending: false).offset(1).limit(2).fetch().map { try $0.value("name") }
            }
            #expect(names == ["Alex"] && values == [.text("Alex")])
            #expect(typed == dynamic)
            #expect(typed == [#"SELECT "Person"."id", "Person"."createdAt", "Person"."updatedAt", "Person"."name", "Person"."age", "Person"."born", "Person"."note", "Person"."teamId" FROM "Person" WHERE ("Person"."age" > ? AND "Person"."note" IS NOT NULL) ORDER BY \#(db.dialect.orderTerm(#""Person"."age""#, ascending: false)) LIMIT ? OFFSET ?"#])
            #expect(try DynamicQuery(people, where: "age = ?", arguments: [.value(.integer(25))]).count()
                == Person.query().where("age = %@", 25).count())

            func same(_ code: ActiveRecordError.Code, _ typed: () throws -> Void, _ dynamic: () throws -> Void) {
                let one = expectError(code, typed), two = expectError(code, dynamic)
                #expect(one?.message != nil && one?.message == two?.message)
            }
            same(.invalidValue, { _ = try Person.query().limit(-1).fetch() }, { _ = try DynamicQuery(people).limit(-1).fetch() })
            same(.invalidValue, { _ = try Person.query().offset(-2).count() }, { _ = try DynamicQuery(people).offset(-2).count() })
            same(.invalidPredicate, { _ = try Person.query().where("name = %@ AND age = %@", "x").fetch() }, {
                _ = try DynamicQuery(people, where: "name = %@ AND age = %@", arguments: [.value(.text("x"))]).fetch()
            })
            same(.unknownColumn, { _ = try Person.query().where("nmae = 1").fetch() }, {
                _ = try DynamicQuery(people, where: "nmae = 1").fetch()
            })
            same(.unknownColumn, { _ = try Person.query().order(by: "nmae").fetch() }, {
                _ = try DynamicQuery(people).order(by: "nmae").fetch()
            })
            #expect(expectError(.invalidValue) { _ = try DynamicQuery(people).limit(-1).fetch() }?.message
                == "limit(-1) must not be negative")
        }
    }

    @Test func queriesRunOnTheScopedDatabase() throws {
        let one = try Database(.inMemory)
        let two = try Database(.inMemory)
        try one.use { try seedPeople() }
        let query = Person.query().where("age > %@", 30)
        try one.use { () throws in #expect(try query.count() == 3) }
        try two.use { () throws in #expect(try query.count() == 0) }
    }
}
