@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

enum Mood: String, ColumnValue, CaseIterable { case calm, angry }

final class Pet: Model {
    @Column("pet_name") var name: String = ""
    @Column var legs: Int = 4
    @Column var weight: Double = 0
    @Column var owner: String? = nil
    @Column var mood: Mood = .calm
    @Column var born: Date = Date(timeIntervalSince1970: 0)
    @Column var address: Address = Address()
    @Column var home: Address = Address()
    var nickname: String { name + "!" }  // computed, not a column
}

@Suite("Typed conditions on key paths")
struct KeyPathQueryTests {
    func seedPets() throws {
        try Pet.create(["pet_name": "Rex", "legs": 4, "weight": 30.5, "owner": "Alex", "mood": "angry"])
        try Pet.create(["pet_name": "Tweety", "legs": 2, "weight": 0.1])
        try Pet.create(["pet_name": "Nemo", "legs": 0, "weight": 0.2, "owner": "Marlin"])
    }

    @Test(arguments: TestEngine.all) func comparisonsAndLogic(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPets()
            let recorder = SQLRecorder(db)
            #expect(try Pet.query().where(\.legs > 1).fetch().map(\.name) == ["Rex", "Tweety"])
            #expect(recorder.all.last?.contains(#"WHERE ("Pet"."legs" > ?)"#) == true)
            #expect(try Pet.query().where(\.name == "Nemo").count() == 1)  // column "pet_name"
            #expect(try Pet.query().where(\.owner == nil).fetch().map(\.name) == ["Tweety"])
            #expect(try Pet.query().where(\.owner != nil && \.weight < 1).fetch().map(\.name) == ["Nemo"])
            #expect(try Pet.query().where(\.legs >= 4 || \.legs <= 0).fetch().map(\.name) == ["Rex", "Nemo"])
            #expect(try Pet.query().where(!(\.legs == 2)).count() == 2)
            #expect(try Pet.query().where(\.mood == .angry).fetch().map(\.name) == ["Rex"])
            #expect(try Pet.query().where(\.born != Date(timeIntervalSince1970: 5)).count() == 3)
            #expect(try Pet.query().where(\.weight > 0.15).where(\.legs != 4).fetch().map(\.name) == ["Nemo"])
        }
    }

    @Test(arguments: TestEngine.all) func fieldConditionsAndOrderByKeyPath(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPets()
            #expect(try Pet.query().where(\.name, .in(["Rex", "Nemo"])).order(by: \.name).fetch().map(\.name) == ["Nemo", "Rex"])
            #expect(try Pet.query().where(\.name, .like("t%")).fetch().map(\.name) == ["Tweety"])
            #expect(try Pet.query().where(\.weight, .between(0.0, 1.0)).order(by: \.weight, ascending: false).fetch().map(\.name) == ["Nemo", "Tweety"])
        }
    }

    @Test(arguments: TestEngine.all) func keyPathsThatAreNotColumnsAreClearErrors(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPets()
            let computed = expectError(.unknownColumn) { _ = try Pet.query().where(\.nickname == "Rex!").fetch() }
            #expect(computed?.message.contains("is not a settable @Column property") == true)
            // Two columns of a type with no probe value: the key path cannot be told apart.
            let noProbe = expectError(.invalidPredicate) { _ = try Pet.query().where(\.address == Address()).fetch() }
            #expect(noProbe?.message.contains("use its column name instead") == true)
            // The only column of its type is found without a probe.
            #expect(try Pet.query().where(\.mood == .calm).count() == 2)
        }
    }
}
