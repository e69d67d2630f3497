@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A measurement: reals, optional or not, and a date.
final class GaugeReading: Model {
    @Column(index: .unique) var sensor: String = ""
    @Column var value: Double = 0
    @Column var spare: Double? = nil
    @Column var ratio: Float = 0
    @Column var takenAt: Date = Date(timeIntervalSince1970: 1)
}

/// Issue 31, point 8 (values): NaN and -0.0 are refused wherever they would be stored, on
/// every engine, with a message that says why and what to store instead; -0.0 still works
/// as a query argument, and infinities are stored as before.
@Suite("NaN and -0.0 are refused when stored, on every engine")
struct UnstorableRealTests {
    @Test(arguments: TestEngine.all) func nanIsRefusedWithAnEngineNeutralMessage(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let reading = GaugeReading()
            reading.value = .nan
            let error = expectError(.invalidValue) { try reading.save() }
            #expect(error?.message == "GaugeReading.value: NaN cannot be stored: SQLite would store it as NULL, so no engine stores it; "
                + "store nil (NULL) in an optional column instead")
            reading.value = 1
            reading.spare = .nan
            _ = expectError(.invalidValue) { try reading.save() }
            reading.spare = nil
            try reading.save()
            #expect(try GaugeReading.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func negativeZeroIsRefusedOnEveryWrite(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let message = "-0.0 cannot be stored: SQLite stores it as 0.0, losing the sign, so no engine stores it; store 0.0 instead"
            // insert
            let reading = try GaugeReading(["sensor": "a"])
            reading.value = -0.0
            let inserted = expectError(.invalidValue) { try reading.save() }
            #expect(inserted?.message == "GaugeReading.value: " + message)
            #expect(reading.isNewRecord)
            // update of one changed column
            reading.value = 0.0
            try reading.save()
            reading.spare = -0.0
            let updated = expectError(.invalidValue) { try reading.save() }
            #expect(updated?.message == "GaugeReading.spare: " + message)
            reading.spare = nil
            reading.ratio = 1
            try reading.save()
            reading.ratio = -0.0   // (from 0.0 it would be no change: -0.0 == 0.0, nothing written)
            _ = expectError(.invalidValue) { try reading.save() }
            reading.ratio = 0
            // insertAll, upsert, upsertAll
            let negative = try GaugeReading(["sensor": "b", "value": -0.0])
            _ = expectError(.invalidValue) { try GaugeReading.insertAll([negative]) }
            _ = expectError(.invalidValue) { try negative.upsert(onConflict: ["sensor"]) }
            _ = expectError(.invalidValue) { try GaugeReading.upsertAll([try GaugeReading(["sensor": "c"]), negative], onConflict: ["sensor"]) }
            // updateAll
            let batch = expectError(.invalidValue) { try GaugeReading.query().updateAll(["value": -0.0]) }
            #expect(batch?.message == "updateAll: GaugeReading.value: " + message)
            #expect(try GaugeReading.query().pluck(\.sensor) == ["a"])
            #expect(try GaugeReading.query().pluck(\.value).map { $0.sign == .plus } == [true])
        }
    }

    @Test(arguments: TestEngine.all) func negativeZeroStillWorksInAQuery(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try GaugeReading.create(["sensor": "zero", "value": 0.0])
            try GaugeReading.create(["sensor": "one", "value": 1.0])
            #expect(try GaugeReading.query().where(\.value == -0.0).pluck(\.sensor) == ["zero"])
            #expect(try GaugeReading.query().where("value = %@", -0.0).pluck(\.sensor) == ["zero"])
            #expect(try GaugeReading.query().where(\.value > -0.0).pluck(\.sensor) == ["one"])
            #expect(try GaugeReading.first(where: "value", equals: -0.0)?.sensor == "zero")
        }
    }

    @Test(arguments: TestEngine.all) func infinitiesAndTheEpochAreStoredAsBefore(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let reading = try GaugeReading(["sensor": "x", "value": Double.infinity, "spare": -Double.infinity])
            reading.takenAt = Date(timeIntervalSince1970: -0.0)   // the epoch: a date has no signed zero
            try reading.save()
            let copy = try #require(try GaugeReading.find(reading.id!))
            #expect(copy.value == .infinity && copy.spare == -.infinity)
            #expect(copy.takenAt == Date(timeIntervalSince1970: 0))
        }
    }

    @Test(arguments: TestEngine.all) func aRunTimeModelRefusesThemWhenSet(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let model = DynamicModel(try TableSchema(name: "Gauge", columns: [ColumnSchema(name: "level", type: .real)]))
            let record = model.makeRecord()
            let nan = expectError(.invalidValue) { try record.set("level", .real(.nan)) }
            #expect(nan?.message.hasPrefix("Gauge.level: NaN cannot be stored: SQLite would store it as NULL") == true)
            let zero = expectError(.invalidValue) { try record.set("level", .real(-0.0)) }
            #expect(zero?.message.hasPrefix("Gauge.level: -0.0 cannot be stored: SQLite stores it as 0.0") == true)
            try record.set("level", .real(0.0))
            try record.save()
        }
    }
}
