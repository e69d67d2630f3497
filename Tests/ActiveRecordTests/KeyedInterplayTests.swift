@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A team keyed by a String, with members and a captain (has-one) and counted members.
final class KeyedTeam: Model {
    override class var primaryKey: PrimaryKey { .string("code") }
    @Column var code: String = ""
    @Column var name: String = ""
    @HasMany(key: "teamCode", dependency: .destroy) var members: Query<KeyedMember>
    @HasOne(key: "teamCode", dependency: .destroy) var badge: KeyedBadge?
}

/// A team's one badge (has-one of a String-keyed owner).
final class KeyedBadge: Model {
    @Column var motto: String = ""
    @BelongsToString(key: "teamCode") var team: KeyedTeam?
}

final class KeyedMember: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @BelongsToString(key: "teamCode") var team: KeyedTeam?
}

/// A device keyed by a UUID, paged and encoded.
final class KeyedDevice: Model {
    override class var primaryKey: PrimaryKey { .uuid("id") }
    @Column("id") var uuid: UUID? = nil
    @Column var rank: Int = 0
}

/// Issue 36: the features of points 2, 3, 6 and 7 on models keyed by a UUID or a String.
@Suite("Keyed models across the features")
struct KeyedInterplayTests {
    private func teams() throws -> (KeyedTeam, KeyedTeam) {
        let red = KeyedTeam(); red.code = "RED"; red.name = "Red"; try red.save()
        let blue = KeyedTeam(); blue.code = "BLU"; blue.name = "Blue"; try blue.save()
        for (name, age) in [("a", 30), ("b", 40), ("c", 50)] {
            let member = KeyedMember(); member.name = name; member.age = age; member.team = red; try member.save()
        }
        return (red, blue)
    }

    @Test(arguments: TestEngine.all) func aggregatesAndFiltersByAStringKey(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try teams()
            let rows = try KeyedTeam.query().order(by: \.code).withCount(\.members).withSum(\.members, \.age).fetch()
            #expect(rows.map(\.record.code) == ["BLU", "RED"])
            #expect(rows.map { $0.count(of: \.members) } == [0, 3])
            #expect(rows.map { $0.sum(of: \.members, \.age) } == [0, 120])
            #expect(try KeyedTeam.query().whereExists(\.members).fetch().map(\.code) == ["RED"])
            #expect(try KeyedTeam.query().whereNotExists(\.members).fetch().map(\.code) == ["BLU"])
            #expect(try KeyedTeam.query().havingCount(\.members, .greaterThan(2)).fetch().map(\.code) == ["RED"])
        }
    }

    @Test(arguments: TestEngine.all) func hasOneOfAStringKeyedOwner(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let (red, blue) = try teams()
            let badge = KeyedBadge(); badge.motto = "Onward"
            red.badge = badge
            try red.save()  // links the badge by the team's code
            #expect(badge.$team.id == "RED")
            #expect(try KeyedTeam.find("RED")?.badge?.motto == "Onward")
            #expect(try KeyedTeam.find("BLU")?.badge == nil)
            // Eager loading: one more query for every owner's badge, then none.
            let recorder = SQLRecorder(db)
            var loaded: [KeyedTeam] = []
            let loading = try recorder.during { loaded = try KeyedTeam.query().order(by: \.code).includes(\.badge).fetch() }
            #expect(loading.filter { $0.hasPrefix("SELECT") }.count == 2)
            let reading = recorder.during { #expect(loaded.map { $0.badge?.motto } == [nil, "Onward"]) }
            #expect(reading.isEmpty)
            #expect(try KeyedTeam.query().whereExists(\.badge).fetch().map(\.code) == ["RED"])
            // Replacing it destroys the old one (dependency .destroy); destroying the owner, the new one.
            let other = KeyedBadge(); other.motto = "Forward"
            red.badge = other
            try red.save()
            #expect(try KeyedBadge.query().fetch().map(\.motto) == ["Forward"])
            try red.destroy()
            #expect(try KeyedBadge.count() == 0)
            _ = blue
        }
    }

    @Test(arguments: TestEngine.all) func keysetPagesOfAUUIDKeyedModelRepeatAndSkipNothing(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            for rank in [1, 1, 2, 2, 2, 3, 3] { let device = KeyedDevice(); device.rank = rank; try device.save() }
            let all = try KeyedDevice.query().order(by: \.rank).orderedStably().fetch().map(\.uuid)
            #expect(all.count == 7)
            var seen: [UUID?] = []
            var cursor: PageCursor? = nil
            repeat {
                let page = try KeyedDevice.query().order(by: \.rank).page(size: 2, after: cursor)
                seen += page.records.map(\.uuid)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(seen == all)
        }
    }

    @Test(arguments: TestEngine.all) func aKeyedRecordEncodesItsKeyAndDecodingNeverTakesIt(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let (red, _) = try teams()
            let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(red)) as? [String: Any]
            #expect(json?["code"] as? String == "RED")
            #expect(json?["name"] as? String == "Red")
            #expect(json?["id"] == nil)  // no integer id of its own: the key is "code"
            // A client cannot choose the key of a new record.
            let made = try JSONDecoder().decode(KeyedTeam.self, from: Data(#"{"code": "HACK", "name": "Green"}"#.utf8))
            #expect(made.name == "Green")
            #expect(made.code == "")
            #expect(made.isNewRecord)
        }
    }

    @Test(arguments: TestEngine.all) func rawSQLFetchesKeyedRecordsThatSaveByTheirKey(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try teams()
            let found = try KeyedTeam.fetch(sql: "SELECT * FROM \(ident: "KeyedTeam") WHERE \(ident: "code") = \("RED")")
            #expect(found.map(\.code) == ["RED"])
            let red = try #require(found.first)
            #expect(!red.isNewRecord)
            red.name = "Crimson"
            try red.save()
            #expect(try KeyedTeam.find("RED")?.name == "Crimson")
            #expect(try KeyedTeam.count() == 2)
        }
    }
}
