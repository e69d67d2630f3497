@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A query holds its first condition, its first ordering and a condition's first argument in
/// place, the others in arrays (issue 35). These check that every count of them (none, one,
/// several) reads, binds and caches as it did: a query of one condition or ordering never takes
/// the compiled shape of a query with more, nor the reverse, and each argument binds in order.
@Suite("Queries: first condition, ordering and argument held in place")
struct QueryInlineClausesTests {
    private static func ids(_ query: Query<Person>) throws -> [Int64] { try query.fetch().compactMap(\.id) }

    @Test(arguments: TestEngine.all) func oneAndSeveralConditionsAndOrderingsKeepTheirShapes(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()  // ids 1…6: ages 31, 25, 40, 25, 19, 52; notes "first", nil, "boss", nil, "new", nil
            let recorder = SQLRecorder(db)
            // Interleaved and repeated, so that each form follows another of a different count.
            for _ in 0..<2 {
                #expect(try Self.ids(Person.query()) == [1, 2, 3, 4, 5, 6])
                #expect(try Self.ids(Person.query().where("age", .greaterThan(20)).order(by: "id", ascending: false)) == [6, 4, 3, 2, 1])
                #expect(try Self.ids(Person.query().where("age", .greaterThan(20)).order(by: "age").order(by: "id")) == [2, 4, 1, 3, 6])
                #expect(
                    try Self.ids(Person.query().where("age", .greaterThan(20)).order(by: "age").order(by: "id", ascending: false))
                        == [4, 2, 1, 3, 6])
                #expect(
                    try Self.ids(
                        Person.query().where("age", .greaterThan(20)).order(by: "age", ascending: false).order(by: "id")
                            .order(by: "name")) == [6, 3, 1, 2, 4])
                #expect(try Self.ids(Person.query().where("age", .greaterThan(20)).where("age", .lessThan(40)).order(by: "id")) == [1, 2, 4])
                #expect(
                    try Self.ids(
                        Person.query().where("age", .greaterThan(20)).where("age", .lessThan(40)).where("note", .isNull).order(by: "id"))
                        == [2, 4])
                #expect(try Self.ids(Person.query().where("age", .greaterThan(20))) == [1, 2, 3, 4, 6])
            }
            // Eight forms, each its own SQL, each run twice.
            #expect(recorder.all.count == 16)
            #expect(Set(recorder.all).count == 8)
        }
    }

    @Test(arguments: TestEngine.all) func oneAndTwoArgumentsBindInOrder(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            for _ in 0..<2 {
                #expect(try Self.ids(Person.query().where("age", .between(25, 31)).order(by: "id")) == [1, 2, 4])
                #expect(try Self.ids(Person.query().where("age", .between(31, 25)).order(by: "id")).isEmpty)
                #expect(try Self.ids(Person.query().where("age >= %@ AND age <= %@", 25, 31).order(by: "id")) == [1, 2, 4])
                #expect(try Self.ids(Person.query().where("age >= %@ AND age <= %@", 31, 25).order(by: "id")).isEmpty)
                #expect(try Self.ids(Person.query().where("age = %@", 25).order(by: "id")) == [2, 4])
                #expect(try Self.ids(Person.query().where("age = ? OR age = ? OR age = ?", 19, 40, 52).order(by: "id")) == [3, 5, 6])
                // Escaped patterns take a second argument (the escape character).
                #expect(try Self.ids(Person.query().where("name", .contains("le")).order(by: "id")) == [1, 6])
                #expect(try Self.ids(Person.query().where("name", .like("Z%")).order(by: "id")) == [5])
                #expect(try Self.ids(Person.query().where("note", .equal(nil)).order(by: "id")) == [2, 4, 6])
                #expect(try Self.ids(Person.query().where("note", .equal("boss")).order(by: "id")) == [3])
                #expect(try Self.ids(Person.query().where("id", .in([5, 1, 3])).order(by: "id")) == [1, 3, 5])
            }
        }
    }

    @Test(arguments: TestEngine.all) func keyPathConditionsJoinTheirArguments(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            for _ in 0..<2 {
                #expect(try Self.ids(Person.query().where(\.age > 20 && \.age < 40).order(by: "id")) == [1, 2, 4])
                #expect(try Self.ids(Person.query().where((\.age < 20 || \.age > 50) && \.note == nil).order(by: "id")) == [6])
                #expect(try Self.ids(Person.query().where(\.age > 20 && \.age < 40 && \.note != nil).order(by: "id")) == [1])
            }
        }
    }

    @Test(arguments: TestEngine.all) func lastReversesEachOrdering(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            #expect(try Person.query().last()?.id == 6)
            #expect(try Person.query().where("age", .greaterThan(20)).order(by: "age").order(by: "id").last()?.id == 6)
            #expect(try Person.query().where("age", .greaterThan(20)).order(by: "age", ascending: false).order(by: "id").last()?.id == 4)
            #expect(try Person.query().order(by: "id", ascending: false).last()?.id == 1)
            #expect(try Person.query().order(by: "id", ascending: false).first()?.id == 6)
        }
    }

    @Test(arguments: TestEngine.all) func aQueryValueKeepsItsClausesWhenCopiesGrow(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let base = Person.query().where("age", .greaterThan(20)).order(by: "age")
            let byIdDown = base.order(by: "id", ascending: false)
            let narrower = base.where("age", .lessThan(40)).order(by: "id")
            #expect(try Self.ids(base.order(by: "id")) == [2, 4, 1, 3, 6])
            #expect(try Self.ids(byIdDown) == [4, 2, 1, 3, 6])
            #expect(try Self.ids(narrower) == [2, 4, 1])
            #expect(try base.count() == 5)
        }
    }
}
