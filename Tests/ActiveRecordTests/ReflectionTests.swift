@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

final class Renamed: Model {
    override class var tableName: String { "people" }
    @Column("full_name") var name: String = ""
    @Column(index: .index) var age: Int = 18
    var cache: [String] = []
    @Column var nickname: String? = nil
}

class Animal: Model {
    @Column var name: String = ""
}

final class Dog: Animal {
    @Column var breed: String = "mixed"
    var tricks = 0
    @Column var weight: Double = 0
}

/// The Models and column types article's example, as written there.
final class ReadmePerson: Model {
    override class var tableName: String { "people" }
    @Column("full_name") var name: String = ""
    @Column(index: .unique) var email: String = ""
    @Column(index: .index) var age: Int = 18
    @Column var nickname: String? = nil
}

final class ReservedName: Model {
    @Column("createdAt") var created: String = ""
}

final class ContentManager: Model {
    @Column var title: String = ""
}

/// Makes records of another model (with named and indexed columns) while it is made:
/// their declarations are recorded too when reflection makes this one.
final class Bookcase: Model {
    @Column("shelf_title") var title: String = ""
    var sample = ReadmePerson()
    @Column(index: .unique) var code: String = ""
    var samples = [Renamed(), Renamed()]
    @Column("shelf_size", index: .index) var size: Int = 3
}

/// Reflected only by `namesAndIndexesAreReadWhileOtherThreadsMakeRecords`.
final class FirstLateBookcase: Model {
    @Column("first_title", index: .unique) var title: String = ""
    @Column var plain: Int = 0
    @Column("first_count") var count: Int = 1
}

/// Reflected only by `namesAndIndexesAreReadWhileOtherThreadsMakeRecords`.
final class SecondLateBookcase: Model {
    @Column var plain: String = ""
    @Column("second_title", index: .index) var title: String = ""
}

@Suite("Reflection: a class is its schema")
struct ReflectionTests {
    /// The index names the Models and column types article shows are the ones the library creates.
    @Test(arguments: TestEngine.all) func theReadmeModelsIndexesAreNamedAsTheReadmeSays(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try ReadmePerson.create(["name": "Ada", "email": "ada@example.com"])
            #expect(try indexNames(db, "people") == ["people_age_index", "people_email_unique"])
        }
    }

    @Test(arguments: TestEngine.all) func tableAndColumnNamesAreAsWrittenAndOverridable(engine: TestEngine) throws {
        #expect(try ContentManager.schema().name == "ContentManager")
        let schema = try Renamed.schema()
        #expect(schema.name == "people")
        #expect(schema.columns.map(\.name) == ["full_name", "age", "nickname"])
        #expect(schema.columns[1].index == .index && schema.columns[1].defaultValue == .integer(18))
        #expect(schema.columns[2].isNullable)
        try withDatabase(engine) { db throws in
            let person = try Renamed.create(["full_name": "Ada Lovelace", "age": 36])
            person.cache = ["not stored"]
            #expect(try db.tableNames() == ["people"])
            #expect(try storedValue(db, #"SELECT "full_name" FROM "people""#) == .text("Ada Lovelace"))
            // Property names are accepted as aliases of column names.
            #expect(try Renamed.first(where: "name", equals: "Ada Lovelace")?.age == 36)
            #expect(try Renamed.find(person.id!)?.cache == [])
        }
    }

    @Test(arguments: TestEngine.all) func subclassesInheritColumnsInDeclarationOrder(engine: TestEngine) throws {
        #expect(try Animal.schema().columns.map(\.name) == ["name"])
        #expect(try Dog.schema().columns.map(\.name) == ["name", "breed", "weight"])
        try withDatabase(engine) { _ throws in
            let dog = Dog()
            dog.name = "Rex"
            dog.weight = 31.5
            dog.tricks = 4
            try dog.save()
            let copy = try #require(try Dog.find(dog.id!))
            #expect(copy.name == "Rex" && copy.breed == "mixed" && copy.weight == 31.5 && copy.tricks == 0)
        }
    }

    @Test func reservedColumnNamesAreRefusedWithTheModelNamed() {
        let error = expectError(.invalidModel) { _ = try ReservedName.schema() }
        #expect(error?.message.contains("ReservedName") == true)
        #expect(error?.message.contains("createdAt") == true)
    }

    /// Field offsets come from the runtime; values written through the
    /// property must be exactly what the engine reads, for every column.
    @Test(arguments: TestEngine.all) func fieldOffsetsMatchTheProperties(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let dog = Dog()
            dog.name = "n"
            dog.breed = "b"
            dog.weight = 2.5
            #expect(try dog.value(of: "name") == .text("n"))
            #expect(try dog.value(of: "breed") == .text("b"))
            #expect(try dog.value(of: "weight") == .real(2.5))
            try dog.set(["breed": "collie"])
            #expect(dog.breed == "collie" && dog.name == "n")
        }
    }

    /// A record carries its values, not its declarations: a column is its value alone
    /// (names and indexes are read once per class; originals are kept aside only once the
    /// record changes).
    @Test func recordsDoNotCarryColumnNamesOrIndexes() throws {
        #expect(MemoryLayout<Column<Int>>.size == 8)
        #expect(MemoryLayout<Column<Bool>>.size == 1)
        #expect(MemoryLayout<Column<String>>.size == 16)
        #expect(MemoryLayout<Column<Int64?>>.size == 9)
        #expect(try ReadmePerson.schema().columns.map { "\($0.name) \($0.index.map(String.init(describing:)) ?? "-")" }
            == ["full_name -", "email unique", "age index", "nickname -"])
    }

    /// Records of other models made while reflection makes its instance do not shift the
    /// declarations it reads.
    @Test func recordsMadeWhileAClassIsReflectedDoNotConfuseItsDeclarations() throws {
        let columns = try Bookcase.schema().columns
        #expect(columns.map(\.name) == ["shelf_title", "code", "shelf_size"])
        #expect(columns.map(\.index) == [nil, .unique, .index])
        #expect(columns.map(\.defaultValue) == [.text(""), .text(""), .integer(3)])
    }

    /// Reflection on one thread while others make records of models with named columns:
    /// each thread's declarations stay its own.
    @Test func namesAndIndexesAreReadWhileOtherThreadsMakeRecords() async throws {
        let schemas = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<2 {
                group.addTask {
                    var made = 0
                    for _ in 0..<2_000 { made += ReadmePerson().age + Bookcase().size }
                    return ["made \(made)"]
                }
            }
            group.addTask { try FirstLateBookcase.schema().columns.map { "\($0.name) \($0.index.map(String.init(describing:)) ?? "-")" } }
            group.addTask { try SecondLateBookcase.schema().columns.map { "\($0.name) \($0.index.map(String.init(describing:)) ?? "-")" } }
            var all: [[String]] = []
            for try await schema in group { all.append(schema) }
            return all
        }
        #expect(schemas.contains(["first_title unique", "plain -", "first_count -"]))
        #expect(schemas.contains(["plain -", "second_title index"]))
        #expect(schemas.filter { $0 == ["made \(2_000 * (18 + 3))"] }.count == 2)
    }
}
