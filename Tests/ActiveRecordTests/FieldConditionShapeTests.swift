@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A field condition (`where("age", .greaterThan(30))`) is held by its column and form until
/// the query is compiled, and a query built again is matched to its compiled shape by them:
/// these check that conditions of one form on different columns, or of different forms on one
/// column, never share a compiled shape, and that errors still name the column.
@Suite("Queries: field conditions matched by column and form")
struct FieldConditionShapeTests {
    @Test(arguments: TestEngine.all) func oneFormOnTwoColumnsCompilesApart(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            for _ in 0..<3 {
                #expect(try Person.query().where("age", .greaterThan(30)).fetch().compactMap(\.id) == [1, 3, 6])
                #expect(try Person.query().where("id", .greaterThan(30)).fetch().compactMap(\.id) == [])
                #expect(try Person.query().where("id", .greaterThan(4)).fetch().compactMap(\.id) == [5, 6])
            }
        }
    }

    @Test(arguments: TestEngine.all) func twoFormsOnOneColumnCompileApart(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            for _ in 0..<3 {
                #expect(try Person.query().where("age", .equal(25)).fetch().compactMap(\.id) == [2, 4])
                #expect(try Person.query().where("age", .notEqual(25)).fetch().compactMap(\.id) == [1, 3, 5, 6])
                #expect(try Person.query().where("note", .equal(nil)).fetch().compactMap(\.id) == [2, 4, 6])
                #expect(try Person.query().where("note", .equal("boss")).fetch().compactMap(\.id) == [3])
                #expect(try Person.query().where("age", .between(20, 35)).fetch().compactMap(\.id) == [1, 2, 4])
                #expect(try Person.query().where("name", .hasPrefix("Al")).fetch().compactMap(\.id) == [1, 6])
            }
        }
    }

    @Test(arguments: TestEngine.all) func anUnknownColumnIsReportedAfterItsFormCompiled(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            #expect(try Person.query().where("age", .lessThan(20)).count() == 1)
            let error = expectError(.unknownColumn) { _ = try Person.query().where("agee", .lessThan(20)).fetch() }
            #expect(error?.message.contains("agee") == true)
            #expect(try Person.query().where("age", .lessThan(20)).count() == 1)
        }
    }
}
