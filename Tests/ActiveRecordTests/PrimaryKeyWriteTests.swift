@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// The same table as ``KeyCountry``'s, declared with an integer key: the drift of a key change.
final class KeyCountryByID: Model {
    override class var tableName: String { "KeyCountry" }
    @Column var code: String = ""
    @Column var name: String = ""
    @Column var population: Int = 0
}

/// Issue 36, point 1: batch writes (insertAll, upsert) on tables keyed by a UUID or a String,
/// and the drift report of a key, on both engines.
@Suite("Primary keys: batch writes and drift")
struct PrimaryKeyWriteTests {
    @Test(arguments: TestEngine.all) func upsertOnAStringKeyInsertsThenUpdates(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let france = KeyCountry()
            france.code = "FR"
            france.name = "France"
            #expect(try france.upsert(onConflict: ["code"]) == .inserted)
            #expect(!france.isNewRecord)
            let again = KeyCountry()
            again.code = "FR"
            again.name = "République française"
            again.population = 68
            #expect(try again.upsert(onConflict: ["code"], updating: ["population"]) == .updated)
            #expect(again.name == "France")  // the row as the database has it
            #expect(again.population == 68)
            again.population = 69
            try again.save()  // an UPDATE by key
            #expect(try KeyCountry.count() == 1)
            #expect(try KeyCountry.find("FR")?.population == 69)
        }
    }

    @Test(arguments: TestEngine.all) func upsertOnAUUIDKeyGeneratesOneWhenUnset(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let device = KeyDevice()
            device.name = "watch"
            #expect(try device.upsert(onConflict: ["id"]) == .inserted)
            let uuid = try #require(device.uuid)
            let same = KeyDevice()
            same.uuid = uuid
            same.name = "watch 2"
            #expect(try same.upsert(onConflict: ["id"]) == .updated)
            #expect(try KeyDevice.find(uuid)?.name == "watch 2")
        }
    }

    @Test(arguments: TestEngine.all) func insertAllGivesEachRecordItsKey(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let devices = (0..<3).map { number in
                let device = KeyDevice()
                device.name = "d\(number)"
                return device
            }
            try KeyDevice.insertAll(devices)
            #expect(devices.allSatisfy { !$0.isNewRecord && $0.uuid != nil })
            #expect(Set(devices.compactMap(\.uuid)).count == 3)
            #expect(try KeyDevice.find(devices[2].uuid!)?.name == "d2")
            let members = (0..<3).map { number in
                let member = KeyMember()
                member.name = "m\(number)"
                return member
            }
            try KeyMember.insertAll(members)
            #expect(try KeyMember.all().map(\.name) == ["m0", "m1", "m2"])
            #expect(try KeyMember.find(members[1].id!)?.name == "m1")
            // A String key left empty: the batch is refused whole.
            let countries = ["IT", ""].map { code in
                let country = KeyCountry()
                country.code = code
                return country
            }
            _ = expectError(.invalidValue) { try KeyCountry.insertAll(countries) }
            #expect(try KeyCountry.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func theDriftReportSaysWhenTheKeyChanged(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            // Made with an integer id, then declared with a String key.
            try db.migrate([KeyCountryByID.self])
            let drift = try #require(try db.drift(of: [KeyCountry.self]).first)
            #expect(drift.primaryKeyChange == "id in the database, declared code")
            #expect(drift.extraColumns == ["id"])
            #expect(drift.description.contains("the primary key is id in the database, declared code"))
            // A table made for the String key matches it.
            try db.execute(#"DROP TABLE "KeyCountry""#)
            try db.migrate([KeyCountry.self])
            #expect(try db.drift(of: [KeyCountry.self]).first?.isEmpty == true)
            #expect(try db.drift(of: [KeyDevice.self, KeyMember.self, KeySensor.self, KeyReading.self]).allSatisfy(\.tableIsMissing))
            try db.migrate([KeyDevice.self, KeyMember.self, KeySensor.self, KeyReading.self, KeyNation.self, KeyCity.self])
            let drifts = try db.drift(of: [KeyDevice.self, KeyMember.self, KeySensor.self, KeyReading.self, KeyNation.self, KeyCity.self])
            #expect(drifts.filter { !$0.isEmpty }.map(\.description) == [])
        }
    }
}
