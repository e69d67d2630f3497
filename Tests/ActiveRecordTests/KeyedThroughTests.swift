@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A doctor keyed by a UUID: its patients through appointments, its clinics through postings.
final class ThDoctor: Model {
    override class var primaryKey: PrimaryKey { .uuid("id") }
    @Column("id") var uuid: UUID? = nil
    @Column var name: String = ""
    @HasManyThrough(ThAppointment.self, dependency: .nullify) var patients: Query<ThPatient>
    @HasManyThrough(ThPosting.self) var clinics: Query<ThClinic>
}

/// A patient keyed by a String: destroying one destroys its doctors.
final class ThPatient: Model {
    override class var primaryKey: PrimaryKey { .string("code") }
    @Column var code: String = ""
    @Column var name: String = ""
    @HasManyThrough(ThAppointment.self, dependency: .destroy) var doctors: Query<ThDoctor>
}

/// The join of two keyed models: a UUID and a String foreign key.
final class ThAppointment: Model {
    @Column var room: Int = 0
    @BelongsToUUID var thDoctor: ThDoctor?
    @BelongsToString var thPatient: ThPatient?
}

/// An integer-keyed clinic, with doctors through postings.
final class ThClinic: Model {
    @Column var city: String = ""
    @HasManyThrough(ThPosting.self, dependency: .nullify) var doctors: Query<ThDoctor>
}

/// The join of an integer-keyed and a UUID-keyed model.
final class ThPosting: Model {
    @BelongsTo var thClinic: ThClinic?
    @BelongsToUUID var thDoctor: ThDoctor?
}

/// Issue 36, point 1: `@HasManyThrough` when the owner, the join model or the related model
/// is keyed by a UUID or a String: lazy reading, eager loading, add/remove, dependencies.
@Suite("Has-many-through between keyed models")
struct KeyedThroughTests {
    func doctor(_ name: String) throws -> ThDoctor {
        let doctor = ThDoctor()
        doctor.name = name
        try doctor.save()
        return doctor
    }

    func patient(_ code: String, _ name: String) throws -> ThPatient {
        let patient = ThPatient()
        patient.code = code
        patient.name = name
        try patient.save()
        return patient
    }

    /// Ann and Bob see both patients; Cy sees only P2.
    func practice() throws -> (ann: ThDoctor, bob: ThDoctor, cy: ThDoctor, p1: ThPatient, p2: ThPatient, p3: ThPatient) {
        let ann = try doctor("ann"), bob = try doctor("bob"), cy = try doctor("cy")
        let p1 = try patient("P1", "Pia"), p2 = try patient("P2", "Paul"), p3 = try patient("P3", "Pat")
        try ann.patients.add(p1)
        try ann.patients.add(p2)
        try p1.doctors.add(bob)
        try bob.patients.add(p2)
        try cy.patients.add(p2)
        return (ann, bob, cy, p1, p2, p3)
    }

    @Test(arguments: TestEngine.all) func readsAddsAndRemovesBetweenAUUIDAndAStringKey(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let (ann, bob, cy, p1, p2, p3) = try practice()
            #expect(try ann.patients.order(by: "code").fetch().map(\.code) == ["P1", "P2"])
            #expect(try cy.patients.fetch().map(\.name) == ["Paul"])
            #expect(try p2.doctors.order(by: "name").fetch().map(\.name) == ["ann", "bob", "cy"])
            #expect(try p3.doctors.count() == 0)
            // The join rows hold the keys themselves, of their types.
            let rows = try ThAppointment.query().where("thPatientId", .equal("P1")).fetch()
            #expect(Set(rows.compactMap(\.$thDoctor.id)) == [try #require(ann.uuid), try #require(bob.uuid)])
            // Added twice: one join row.
            try ann.patients.add(p1)
            #expect(try ThAppointment.query().count() == 5)
            // Removed from either side: the join row of the pair only.
            try ann.patients.remove(p2)
            try p1.doctors.remove(bob)
            #expect(try ann.patients.fetch().map(\.code) == ["P1"])
            #expect(try p2.doctors.order(by: "name").fetch().map(\.name) == ["bob", "cy"])
            #expect(try p1.doctors.fetch().map(\.name) == ["ann"])
            #expect(try ThAppointment.query().count() == 3)
            #expect(try ThPatient.query().count() == 3 && ThDoctor.query().count() == 3)
        }
    }

    @Test(arguments: TestEngine.all) func anUnsavedOwnerOrChildIsSavedThenLinked(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let dee = ThDoctor()
            dee.name = "dee"
            let p9 = ThPatient()
            p9.code = "P9"
            p9.name = "Nine"
            try dee.patients.add(p9)  // both new: queued on the doctor
            #expect(try dee.patients.fetch().map(\.code) == ["P9"])
            try dee.save()
            #expect(p9.isNewRecord == false)
            #expect(try ThDoctor.query().where("name", .equal("dee")).first()?.patients.fetch().map(\.code) == ["P9"])
            // A saved owner and a new child: the child is saved, then linked.
            let p8 = ThPatient()
            p8.code = "P8"
            try dee.patients.add(p8)
            #expect(try ThPatient.find(key: "P8")?.doctors.fetch().map(\.name) == ["dee"])
        }
    }

    @Test(arguments: TestEngine.all) func eagerLoadingByUUIDAndStringKeysInOneStatement(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            _ = try practice()
            let recorder = SQLRecorder(db)
            var doctors: [ThDoctor] = []
            let loading = try recorder.during { doctors = try ThDoctor.query().order(by: "name").includes(\.patients).fetch() }
            #expect(loading.count == 2)
            var codes: [[String]] = []
            let walking = try recorder.during { codes = try doctors.map { try $0.patients.fetch().map(\.code) } }
            #expect(walking.isEmpty)
            #expect(doctors.map(\.name) == ["ann", "bob", "cy"])
            #expect(codes == [["P1", "P2"], ["P1", "P2"], ["P2"]])

            var patients: [ThPatient] = []
            let other = try recorder.during { patients = try ThPatient.query().order(by: "code").includes(\.doctors).fetch() }
            #expect(other.count == 2)
            var names: [[String]] = []
            let walked = try recorder.during { names = try patients.map { try $0.doctors.fetch().map(\.name).sorted() } }
            #expect(walked.isEmpty)
            #expect(names == [["ann", "bob"], ["ann", "bob", "cy"], []])
        }
    }

    @Test(arguments: TestEngine.all) func anIntegerKeyOnOneSideAndAUUIDOnTheOther(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let ann = try doctor("ann"), bob = try doctor("bob")
            let north = ThClinic(), south = ThClinic()
            north.city = "North"
            south.city = "South"
            try north.save()
            try south.save()
            try north.doctors.add(ann)
            try north.doctors.add(bob)
            try bob.clinics.add(south)
            // Lazy, both ways.
            #expect(try north.doctors.order(by: "name").fetch().map(\.name) == ["ann", "bob"])
            #expect(try bob.clinics.order(by: "city").fetch().map(\.city) == ["North", "South"])
            #expect(try ann.clinics.fetch().map(\.city) == ["North"])
            // Eager, both ways: one statement more each.
            let recorder = SQLRecorder(db)
            var clinics: [ThClinic] = []
            #expect(try recorder.during { clinics = try ThClinic.query().order(by: "city").includes(\.doctors).fetch() }.count == 2)
            var doctors: [ThDoctor] = []
            #expect(try recorder.during { doctors = try ThDoctor.query().order(by: "name").includes(\.clinics).fetch() }.count == 2)
            var names: [[String]] = [], cities: [[String]] = []
            let walking = try recorder.during {
                names = try clinics.map { try $0.doctors.fetch().map(\.name).sorted() }
                cities = try doctors.map { try $0.clinics.fetch().map(\.city).sorted() }
            }
            #expect(walking.isEmpty)
            #expect(names == [["ann", "bob"], ["bob"]])
            #expect(cities == [["North"], ["North", "South"]])
            // Removed from the keyed side.
            try bob.clinics.remove(north)
            #expect(try north.doctors.fetch().map(\.name) == ["ann"])
            // The integer clinic's `.nullify`: its join rows go, the doctors stay.
            try south.destroy()
            #expect(try bob.clinics.count() == 0)
            #expect(try ThPosting.query().count() == 1)
            #expect(try ThDoctor.query().count() == 2)
        }
    }

    @Test(arguments: TestEngine.all) func dependenciesOfKeyedOwners(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let (ann, _, cy, p1, _, _) = try practice()
            // The UUID-keyed doctor's `.nullify`: its join rows go, the patients stay.
            try cy.destroy()
            #expect(try ThAppointment.query().count() == 4)
            #expect(try ThPatient.query().count() == 3)
            // The String-keyed patient's `.destroy`: its doctors (Ann, Bob) go, and with them
            // (their `.nullify`) every join row of theirs.
            try p1.destroy()
            #expect(try ThDoctor.query().count() == 0)
            #expect(try ThAppointment.query().count() == 0)
            #expect(try ThPatient.query().order(by: "code").fetch().map(\.code) == ["P2", "P3"])
            #expect(try ThDoctor.find(key: try #require(ann.uuid)) == nil)
        }
    }
}

extension KeyedThroughTests {
    @Test(arguments: TestEngine.all) func aggregatesThroughKeyedModels(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try practice()
            let doctors = try ThDoctor.query().order(by: "name").withCount(\.patients).fetch()
            #expect(doctors.map { $0.count(of: \.patients) } == [2, 2, 1])
            let patients = try ThPatient.query().order(by: "code").withCount(\.doctors).fetch()
            #expect(patients.map { $0.count(of: \.doctors) } == [2, 3, 0])
            #expect(try ThPatient.query().whereNotExists(\.doctors).fetch().map(\.code) == ["P3"])
        }
    }
}
