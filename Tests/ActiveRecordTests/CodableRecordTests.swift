import ActiveRecord
import Foundation
import Testing

final class CodableTeam: Model {
    @Column var title: String = ""
    @HasMany var members: Query<CodableMember>
}

final class CodableMember: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @Column var born: Date? = nil
    @Column var avatar: Data? = nil
    @Column var token: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    @Column var balance: Decimal = 0
    @Column var role: String = "member"
    @BelongsTo var team: CodableTeam?
}

/// A model that locks columns: only `title` (and the team's key, opted in) come from a client.
final class CodableNote: Model {
    @Column var title: String = ""
    @Column var approved: Bool = false
    @BelongsTo var team: CodableTeam?
    override class var decodableColumns: [String] { ["title", "codableTeamId"] }
}

final class CodableMisdeclared: Model {
    @Column var title: String = ""
    override class var decodableColumns: [String] { ["title", "nope"] }
}

/// Records as Codable: encoded with their columns and loaded relations, decoded into new
/// unsaved records from the columns a client may set.
@Suite("Codable records")
struct CodableRecordTests {
    static func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The kind and key path of the DecodingError `body` throws.
    static func decodingErrorPath(_ body: () throws -> Void) -> String? {
        do {
            try body()
        } catch DecodingError.typeMismatch(_, let context) {
            return "typeMismatch " + context.codingPath.map(\.stringValue).joined(separator: ".")
        } catch DecodingError.valueNotFound(_, let context) {
            return "valueNotFound " + context.codingPath.map(\.stringValue).joined(separator: ".")
        } catch {
            return "\(error)"
        }
        return nil
    }

    @Test(arguments: TestEngine.all) func aRecordEncodesItsColumnsAsFoundationWould(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let team = try CodableTeam.create(["title": "Core"])
            let member = CodableMember()
            member.name = "Alex"
            member.age = 31
            member.born = Date(timeIntervalSince1970: 1_000_000)
            member.avatar = Data([1, 2, 3])
            member.token = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
            member.balance = Decimal(string: "12.34")!
            member.$team.id = team.id
            try member.save()
            let memberID = try #require(member.id)
            let loaded = try #require(try CodableMember.find(memberID))
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let json = try Self.object(try encoder.encode(loaded))
            #expect(json["id"] as? Int == Int(memberID))
            #expect(json["name"] as? String == "Alex")
            #expect(json["age"] as? Int == 31)
            #expect(json["born"] as? String == "1970-01-12T13:46:40Z")
            #expect(json["avatar"] as? String == Data([1, 2, 3]).base64EncodedString())
            #expect(json["token"] as? String == "11111111-2222-3333-4444-555555555555")
            #expect((json["balance"] as? NSNumber)?.decimalValue == Decimal(string: "12.34"))
            let teamID = try #require(team.id)
            #expect(json["codableTeamId"] as? Int == Int(teamID))
            #expect(json["createdAt"] is String)
            #expect(json["updatedAt"] is String)
            // Nothing loaded to encode: the team is not in the JSON.
            #expect(json["team"] == nil)
            let unsaved = try Self.object(try JSONEncoder().encode(CodableMember()))
            #expect(unsaved["id"] is NSNull)
            #expect(unsaved["born"] is NSNull)
        }
    }

    @Test(arguments: TestEngine.all) func loadedRelationsAreEncodedAndNothingElse(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let team = try CodableTeam.create(["title": "Core"])
            for name in ["Alex", "Sam"] {
                let member = CodableMember()
                member.name = name
                member.team = team
                try member.save()
            }
            let teams = try CodableTeam.query().includes(\.members).fetch()
            let json = try Self.object(try JSONEncoder().encode(try #require(teams.first)))
            let members = try #require(json["members"] as? [[String: Any]])
            #expect(members.compactMap { $0["name"] as? String }.sorted() == ["Alex", "Sam"])
            let teamID = try #require(team.id)
            let found = try #require(try CodableTeam.find(teamID))
            let plain = try Self.object(try JSONEncoder().encode(found))
            #expect(plain["members"] == nil)
            // A parent assigned is encoded; a back-reference to the record being encoded is not (no cycle).
            let member = try #require(try CodableMember.first(where: "name", equals: "Alex"))
            _ = member.team
            let withParent = try Self.object(try JSONEncoder().encode(member))
            #expect((withParent["team"] as? [String: Any])?["title"] as? String == "Core")
        }
    }

    @Test(arguments: TestEngine.all) func decodingMakesANewRecordFromTheAllowedColumnsOnly(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let team = try CodableTeam.create(["title": "Core"])
            let body = Data("""
                {"id": 999, "createdAt": 0, "updatedAt": 0, "name": "Kim", "age": 28, "codableTeamId": \(team.id!),
                 "token": "11111111-2222-3333-4444-555555555555", "balance": 2.5, "unknown": true, "team": {"title": "x"}}
                """.utf8)
            let member = try JSONDecoder().decode(CodableMember.self, from: body)
            #expect(member.id == nil)
            #expect(member.createdAt == nil)
            #expect(member.name == "Kim")
            #expect(member.age == 28)
            #expect(member.token == UUID(uuidString: "11111111-2222-3333-4444-555555555555"))
            #expect(member.balance == Decimal(string: "2.5"))
            #expect(member.role == "member")
            // No foreign key injection: the key is not decodable by default.
            #expect(member.$team.id == nil)
            try member.save()
            let storedID = try #require(member.id)
            let stored = try #require(try CodableMember.find(storedID))
            #expect(stored.name == "Kim")
            #expect(stored.id != 999)
            #expect(stored.createdAt != Date(timeIntervalSince1970: 0))
            // A model that opts the key in (and locks `approved`).
            let note = try JSONDecoder().decode(CodableNote.self, from: Data(#"{"title": "t", "approved": true, "codableTeamId": \#(team.id!)}"#.utf8))
            #expect(note.title == "t")
            #expect(note.approved == false)
            #expect(note.$team.id == team.id)
        }
    }

    @Test(arguments: TestEngine.all) func aWrongTypeIsADecodingErrorNamingTheKeyAndChangesNothing(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let member = try CodableMember.create(["name": "Alex", "age": 31])
            #expect(Self.decodingErrorPath { try member.assign(fromJSON: Data(#"{"name": "Sam", "age": "old"}"#.utf8)) } == "typeMismatch age")
            #expect(Self.decodingErrorPath { try member.assign(fromJSON: Data(#"{"name": null}"#.utf8)) } == "valueNotFound name")
            #expect(member.name == "Alex")
            #expect(member.age == 31)
            #expect(!member.hasChanges)
            let error = expectError(.invalidModel) { _ = try JSONDecoder().decode(CodableMisdeclared.self, from: Data("{}".utf8)) }
            #expect(error?.message.contains(#"decodableColumns names "nope""#) == true)
        }
    }

    @Test(arguments: TestEngine.all) func assignFromJSONIsAnEditWithTheSameAllowList(_ engine: TestEngine) throws {
        try withDatabase(engine) { db in
            let team = try CodableTeam.create(["title": "Core"])
            let member = try CodableMember.create(["name": "Alex", "age": 31, "born": Date(timeIntervalSince1970: 5)])
            let id = try #require(member.id)
            let created = member.createdAt
            try member.assign(fromJSON: Data(#"{"age": 32, "born": null, "id": 7, "createdAt": 1, "codableTeamId": \#(team.id!)}"#.utf8))
            #expect(member.age == 32)
            #expect(member.born == nil)
            #expect(member.name == "Alex")
            #expect(member.id == id)
            #expect(member.$team.id == nil)
            let statements = try SQLRecorder(db).during { try member.save() }
            db.trace(nil)
            #expect(statements.contains { $0.hasPrefix("UPDATE") && $0.contains(#""age""#) && !$0.contains(#""name""#) })
            let stored = try #require(try CodableMember.find(id))
            #expect(stored.age == 32)
            #expect(stored.born == nil)
            #expect(stored.createdAt == created)
        }
    }

    @Test(arguments: TestEngine.all) func aRecordRoundTripsThroughJSON(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let member = try CodableMember.create(["name": "Alex", "age": 31, "avatar": Data([9]), "balance": Decimal(7)])
            let copy = try JSONDecoder().decode(CodableMember.self, from: try JSONEncoder().encode(member))
            #expect(copy.id == nil)
            #expect(copy.name == "Alex")
            #expect(copy.age == 31)
            #expect(copy.avatar == Data([9]))
            #expect(copy.balance == 7)
        }
    }
}
