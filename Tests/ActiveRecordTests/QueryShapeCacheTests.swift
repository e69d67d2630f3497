@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A query compiled once is reused for every later query of the same shape (same clauses,
/// arguments differing only in value). These check that reuse never changes an answer or
/// an error: values, NULL against a value, list lengths, argument counts, limits.
@Suite("Queries: compiled once per shape")
struct QueryShapeCacheTests {
    @Test(arguments: TestEngine.all) func aRepeatedQueryBindsEachCallsValues(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let recorder = SQLRecorder(db)
            let expected: [Int: [String]] = [19: ["Zoe"], 25: ["Алексей", "Maria"], 31: ["Alex"], 33: []]
            for _ in 0..<3 {
                for (age, names) in expected.sorted(by: { $0.key < $1.key }) {
                    #expect(try Person.query().where("age = %@ AND name != %@", age, "x").fetch().map(\.name) == names)
                }
            }
            // One SQL text for all twelve queries.
            #expect(Set(recorder.all).count == 1)
            #expect(recorder.all.count == 12)
        }
    }

    @Test(arguments: TestEngine.all) func nilAndAValueInTheSameFormatCompileApart(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let notes: [String?] = [nil, "boss", nil, "first", nil]
            let counts = try notes.map { try Person.query().where("note = %@", $0).count() }
            #expect(counts == [3, 1, 3, 1, 3])
            let others = try notes.map { try Person.query().where("note != %@", $0).fetch().count }
            #expect(others == [3, 2, 3, 2, 3])  // `!= nil` is IS NOT NULL; `!= 'boss'` leaves out the NULLs
        }
    }

    @Test(arguments: TestEngine.all) func listsOfEveryLengthGetTheirOwnPlaceholders(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let lists: [[Int64]] = [[1], [2, 3, 4], [], [6, 1], [5], [2, 3, 4]]
            let found = try lists.map { ids in try Person.query().where("id IN %@", ids).fetch().compactMap(\.id) }
            #expect(found == [[1], [2, 3, 4], [], [1, 6], [5], [2, 3, 4]])
            let fields = try lists.map { ids in try Person.query().where("id", .notIn(ids)).count() }
            #expect(fields == [5, 3, 6, 4, 5, 3])
        }
    }

    @Test(arguments: TestEngine.all) func errorsAreStillThrownAfterTheShapeWasCompiled(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            #expect(try Person.query().where("age > %@", 30).limit(2).fetch().count == 2)
            // The same format with one argument too many.
            let count = expectError(.invalidPredicate) { _ = try Person.query().where("age > %@", 30, 40).limit(2).fetch() }
            #expect(count?.message == #""age > %@" has 1 placeholder but 2 arguments were given"#)
            // The same shape with a negative limit.
            let limit = expectError(.invalidValue) { _ = try Person.query().where("age > %@", 30).limit(-2).fetch() }
            #expect(limit?.message == "limit(-2) must not be negative")
            // The same shape with an argument that cannot be stored.
            let value = expectError(.invalidValue) { _ = try Person.query().where("age > %@", UInt64.max).limit(2).fetch() }
            #expect(value?.message.hasPrefix(#"argument 1 in "age > %@": a UInt64 value above Int64.max"#) == true)
            // And the shape still answers.
            #expect(try Person.query().where("age > %@", 40).limit(2).fetch().map(\.name) == ["alex"])
        }
    }

    @Test func threadsRunTheSameShapesAtOnce() throws {
        try withDatabase(.sqlite, file: true) { db throws in
            try seedPeople()
            let failures = FailureCount()
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                do {
                    try db.use {
                        for round in 0..<200 {
                            let age = [19, 25, 31, 40, 52][(round + thread) % 5]
                            let expected = age == 25 ? 2 : 1
                            let people = try Person.query().where("age = %@", age).order(by: "name").fetch()
                            let older = try Person.query().where("age", .greaterThan(age)).count()
                            let byAge = ["19": 5, "25": 3, "31": 2, "40": 1, "52": 0]
                            if people.count != expected || people.contains(where: { $0.age != age }) || older != byAge["\(age)"] {
                                failures.add(1)
                            }
                        }
                    }
                } catch {
                    failures.add(1000)
                }
            }
            #expect(failures.total == 0)
        }
    }
}

/// A count that threads add to.
private final class FailureCount: @unchecked Sendable {
    // @unchecked Sendable: `count` is only reached holding `lock`.
    private let lock = NSLock()
    private var count = 0
    func add(_ amount: Int) { lock.withLock { count += amount } }
    var total: Int { lock.withLock { count } }
}
