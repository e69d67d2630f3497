import ActiveRecord
import Foundation
import Synchronization
import Testing

/// A JSON column's value that counts its reads from the database (`fromSQL`).
struct EncPrefs: Codable, Equatable, ColumnValue {
    var theme = "light"
    var sizes: [Int] = []
    static let reads = Mutex(0)
    static func fromSQL(_ value: DatabaseValue) throws -> EncPrefs {
        reads.withLock { $0 += 1 }
        guard case .text(let text) = value else { throw ActiveRecordError(.typeMismatch, "EncPrefs: not text") }
        return try JSONDecoder().decode(EncPrefs.self, from: Data(text.utf8))
    }
}

final class EncUser: Model {
    @Column var name: String = ""
    @Column var prefs: EncPrefs = EncPrefs()
    @HasOne var profile: EncProfile?
    @HasManyThrough(EncUserTag.self) var tags: Query<EncTag>
}

final class EncProfile: Model {
    @Column var bio: String = ""
    @BelongsTo var encUser: EncUser?
}

final class EncTag: Model {
    @Column var label: String = ""
}

final class EncUserTag: Model {
    @BelongsTo var encUser: EncUser?
    @BelongsTo var encTag: EncTag?
}

/// A model with a secret: never encoded, never decoded.
final class EncAccount: Model {
    @Column var email: String = ""
    @Column var passwordHash: String = ""
    static let encodedReads = Mutex(0)
    override class var encodedColumns: [String] {
        encodedReads.withLock { $0 += 1 }
        return ["id", "email", "createdAt"]
    }
    override class var decodableColumns: [String] { ["email"] }
}

final class EncMisdeclared: Model {
    @Column var email: String = ""
    override class var encodedColumns: [String] { ["email", "secret"] }
}

/// Records as JSON after review: has-one and has-many-through relations held loaded are
/// encoded, the encoded columns are an allow-list, and the class's plan is worked out once.
@Suite("Codable records: relations, encoded columns")
struct CodableEncodingTests {
    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test(arguments: TestEngine.all) func hasOneAndHasManyThroughHeldLoadedAreEncoded(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let alex = try EncUser.create(["name": "Alex"])
            let sam = try EncUser.create(["name": "Sam"])
            let profile = EncProfile()
            profile.bio = "Swift"
            profile.encUser = alex
            try profile.save()
            let swift = try EncTag.create(["label": "swift"])
            let sql = try EncTag.create(["label": "sql"])
            try alex.tags.add(swift)
            try alex.tags.add(sql)

            let users = try EncUser.query().includes(\.profile).includes(\.tags).order(by: "id").fetch()
            let first = try Self.object(users[0])
            let loadedProfile = try #require(first["profile"] as? [String: Any])
            #expect(loadedProfile["bio"] as? String == "Swift")
            #expect(loadedProfile["encUserId"] as? Int == alex.id.map(Int.init))
            let tags = try #require(first["tags"] as? [[String: Any]])
            #expect(Set(tags.compactMap { $0["label"] as? String }) == ["swift", "sql"])
            // Sam has no profile and no tags: no profile key, an empty list of tags.
            let second = try Self.object(users[1])
            #expect(second["profile"] == nil)
            #expect((second["tags"] as? [Any])?.isEmpty == true)
            // Not loaded, nothing: no query to encode.
            let samID = try #require(sam.id), alexID = try #require(alex.id)
            let plain = try #require(try EncUser.find(samID))
            let fresh = try Self.object(plain)
            #expect(fresh["profile"] == nil && fresh["tags"] == nil)
            // Loaded by a read of the property: encoded too.
            let lazy = try #require(try EncUser.find(alexID))
            _ = lazy.profile
            #expect((try Self.object(lazy)["profile"] as? [String: Any])?["bio"] as? String == "Swift")
        }
    }

    @Test(arguments: TestEngine.all) func encodedColumnsKeepASecretOut(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let account = EncAccount()
            account.email = "kim@example.com"
            account.passwordHash = "$2b$12$secret"
            try account.save()
            let json = String(decoding: try JSONEncoder().encode(account), as: UTF8.self)
            #expect(!json.contains("secret") && !json.contains("passwordHash"))
            let object = try Self.object(account)
            #expect(Set(object.keys) == ["id", "email", "createdAt"])
            #expect(object["email"] as? String == "kim@example.com")
            // Nor set by a client.
            let draft = try JSONDecoder().decode(EncAccount.self, from: Data(#"{"email":"a@b.c","passwordHash":"x"}"#.utf8))
            #expect(draft.email == "a@b.c" && draft.passwordHash == "")
            // The default: every key.
            let user = try EncUser.create(["name": "Alex"])
            #expect(Set(try Self.object(user).keys) == ["id", "name", "prefs", "createdAt", "updatedAt"])
            #expect(EncUser.defaultEncodedColumns == ["id", "name", "prefs", "createdAt", "updatedAt"])
            #expect(EncProfile.defaultEncodedColumns == ["id", "bio", "encUserId", "createdAt", "updatedAt"])
        }
    }

    @Test func aNameThatIsNoColumnIsAnInvalidModel() throws {
        let record = EncMisdeclared()
        record.email = "a@b.c"
        do {
            _ = try JSONEncoder().encode(record)
            Issue.record("encoded a model whose encodedColumns names no column")
        } catch let error as ActiveRecordError {
            #expect(error.code == .invalidModel)
            #expect(error.message.contains(#"EncMisdeclared.encodedColumns names "secret""#))
        } catch let EncodingError.invalidValue(_, context) {
            let underlying = try #require(context.underlyingError as? ActiveRecordError)
            #expect(underlying.code == .invalidModel)
            #expect(underlying.message.contains(#"EncMisdeclared.encodedColumns names "secret""#))
        }
    }

    @Test(arguments: TestEngine.all) func thePlanIsWorkedOutOnceAndJSONColumnsEncodeTheirValue(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            for index in 0..<3 {
                let account = EncAccount()
                account.email = "user\(index)@example.com"
                try account.save()
            }
            let accounts = try EncAccount.all()
            _ = try JSONEncoder().encode(accounts)
            let before = EncAccount.encodedReads.withLock { $0 }
            _ = try JSONEncoder().encode(accounts)
            _ = try JSONEncoder().encode(accounts)
            #expect(EncAccount.encodedReads.withLock { $0 } == before)

            let user = EncUser()
            user.name = "Alex"
            user.prefs = EncPrefs(theme: "dark", sizes: [1, 2])
            try user.save()
            let userID = try #require(user.id)
            let loaded = try #require(try EncUser.find(userID))
            let reads = EncPrefs.reads.withLock { $0 }
            let object = try Self.object(loaded)
            // The value as the record holds it, encoded once: not read back from its JSON text.
            #expect(EncPrefs.reads.withLock { $0 } == reads)
            let prefs = try #require(object["prefs"] as? [String: Any])
            #expect(prefs["theme"] as? String == "dark")
            #expect(prefs["sizes"] as? [Int] == [1, 2])
        }
    }
}
