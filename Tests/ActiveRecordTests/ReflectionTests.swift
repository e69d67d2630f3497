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

/// The README's Models example, as written there.
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

@Suite("Reflection: a class is its schema")
struct ReflectionTests {
    /// The index names the README shows are the ones the library creates.
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
}
