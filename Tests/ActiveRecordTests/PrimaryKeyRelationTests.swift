@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A parent keyed by a UUID, with readings that belong to it.
final class KeySensor: Model {
    override class var primaryKey: PrimaryKey { .uuid("id") }
    @Column("id") var uuid: UUID? = nil
    @Column var label: String = ""
    @HasMany(dependency: .destroy) var readings: Query<KeyReading>
}

/// A child of a UUID-keyed parent.
final class KeyReading: Model {
    @Column var celsius: Double = 0
    @BelongsToUUID var keySensor: KeySensor?
}

/// A parent keyed by a String, whose cities are nullified when it goes.
final class KeyNation: Model {
    override class var primaryKey: PrimaryKey { .string("code") }
    @Column var code: String = ""
    @HasMany(key: "nationCode", dependency: .nullify) var cities: Query<KeyCity>
}

/// A child of a String-keyed parent, under a foreign key of its own name.
final class KeyCity: Model {
    @Column var name: String = ""
    @BelongsToString(key: "nationCode") var nation: KeyNation?
}

/// Issue 36, point 1: relations to parents keyed by a UUID or a String: belongs-to (the key
/// column of the parent's key type, a real foreign key), has-many, dependencies, eager loading.
@Suite("Primary keys: relations")
struct PrimaryKeyRelationTests {
    @Test(arguments: TestEngine.all) func aBelongsToAUUIDParentHoldsItsUUID(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let sensor = KeySensor()
            sensor.label = "roof"
            let reading = KeyReading()
            reading.celsius = 21.5
            reading.keySensor = sensor  // unsaved: saved first by the reading's save
            try reading.save()
            let uuid = try #require(sensor.uuid)
            #expect(!sensor.isNewRecord)
            #expect(reading.$keySensor.id == uuid)
            let loaded = try #require(try KeyReading.find(reading.id!))
            #expect(loaded.$keySensor.id == uuid)
            #expect(loaded.keySensor?.label == "roof")
            // The key column is a real foreign key to the parent's UUID.
            let stranger = KeyReading()
            stranger.$keySensor.id = UUID()
            _ = expectError(.constraint) { try stranger.save() }
            _ = db
        }
    }

    @Test(arguments: TestEngine.all) func hasManyOfAUUIDParentFindsLinksAndPreloads(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let roof = KeySensor(), cellar = KeySensor()
            roof.label = "roof"
            cellar.label = "cellar"
            try roof.save()
            try cellar.save()
            for (sensor, value) in [(roof, 20.0), (cellar, 12.0), (roof, 21.0)] {
                let reading = KeyReading()
                reading.celsius = value
                try sensor.readings.add(reading)
            }
            #expect(try roof.readings.fetch().map(\.celsius) == [20, 21])
            #expect(try cellar.readings.count() == 1)
            // Eager loading both ways.
            let sensors = try KeySensor.query().order(by: "label").includes(\.readings).fetch()
            #expect(sensors.map(\.label) == ["cellar", "roof"])
            #expect(try sensors[1].readings.fetch().map(\.celsius) == [20, 21])
            let readings = try KeyReading.query().order(by: "celsius").includes(\.keySensor).fetch()
            #expect(readings.map { $0.keySensor?.label } == ["cellar", "roof", "roof"])
        }
    }

    @Test(arguments: TestEngine.all) func destroyingAUUIDParentDestroysItsChildren(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let sensor = try KeySensor.create(["label": "roof"])
            let other = try KeySensor.create(["label": "cellar"])
            for parent in [sensor, sensor, other] {
                let reading = KeyReading()
                reading.keySensor = parent
                try reading.save()
            }
            try sensor.destroy()
            #expect(try KeyReading.count() == 1)
            #expect(try KeyReading.all().first?.$keySensor.id == other.uuid)
        }
    }

    @Test(arguments: TestEngine.all) func aStringParentNullifiesItsChildrenAndPreloadsThem(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let france = try KeyNation.create(["code": "FR"])
            let italy = try KeyNation.create(["code": "IT"])
            for (name, nation) in [("Paris", france), ("Lyon", france), ("Rome", italy)] {
                let city = KeyCity()
                city.name = name
                city.nation = nation
                try city.save()
            }
            #expect(try KeyCity.query().where("nationCode", .equal("FR")).count() == 2)
            let nations = try KeyNation.query().includes(\.cities).fetch()
            #expect(nations.map(\.code) == ["FR", "IT"])
            #expect(try nations[0].cities.fetch().map(\.name) == ["Paris", "Lyon"])
            let cities = try KeyCity.query().order(by: "name").includes(\.nation).fetch()
            #expect(cities.map { $0.nation?.code } == ["FR", "FR", "IT"])
            try france.destroy()
            #expect(try KeyCity.query().order(by: "name").fetch().map { $0.$nation.id } == [nil, nil, "IT"])
        }
    }
}
