@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// The seeds' model: name present and unique.
final class Member: Model, Validating {
    @Column var name: String = ""
    static let validations = Validations(for: Member.self) {
        $0.presence(\.name)
        $0.uniqueness(\.name)
    }
}

/// The seeds' custom validator.
struct PrefixValidator: Validator {
    var errorMessage: String { "Invalid prefix" }
    func validate(field: String, of record: Model) throws -> Bool {
        try record.value(of: field, as: String.self).hasPrefix("LOL")
    }
}

/// The seeds' Animal: a custom validator requiring name == "animal".
struct AnimalNameValidator: Validator {
    var errorKey: String { "not_animal" }
    var errorMessage: String { "must be animal" }
    func validate(field: String, of record: Model) throws -> Bool {
        try record.value(of: field, as: String.self) == "animal"
    }
}

final class Beast: Model, Validating {
    override class var tableName: String { "Animal" }
    @Column var name: String = ""
    static let validations = Validations(for: Beast.self) { $0.custom(\.name, AnimalNameValidator()) }
}

enum Rank: String, ColumnValue { case low, high, root }

final class Profile: Model, Validating {
    @Column var login: String = ""
    @Column var nickname: String? = nil
    @Column var email: String = ""
    @Column var age: Int = 0
    @Column var code: String = ""
    @Column var level: Rank = .low
    @Column var tags: [String] = []
    @Column var avatar: Data = Data()
    @Column var team: Int64? = nil
    static let validations = Validations(for: Profile.self) {
        $0.presence(\.login)
        $0.length(\.login, min: 3, max: 8)
        $0.length(\.nickname, exactly: 4)
        $0.format(\.email, "[^@ ]+@[^@ ]+\\.[a-z]+")
        $0.numericality(\.age, onlyInteger: true, in: 0...150)
        $0.numericality(\.code, onlyInteger: true)
        $0.inclusion(\.level, in: [.low, .high])
        $0.exclusion(\.login, from: ["admin", "root"])
        $0.presence(\.tags)
        $0.presence(\.avatar)
        $0.uniqueness(\.login, scope: ["team"], caseSensitive: false)
        $0.custom(\.login, PrefixValidator())
    }
}

@Suite("Validations")
struct ValidationTests {
    @Test(arguments: TestEngine.all) func theSeedsScenarios(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let empty = Member()
            #expect(!empty.isValid)
            #expect(empty.errors == [ValidationFailure(model: "Member", property: "name", key: "cant_be_blank", message: "can't be blank")])
            let failure = expectError(.validationFailed) { try empty.save() }
            #expect(failure?.validationFailures.map(\.key) == ["cant_be_blank"])
            #expect(failure?.message == "Member is invalid: name can't be blank")
            #expect(empty.isNewRecord && empty.errors.count == 1)
            #expect(try Member.count() == 0)

            let john = try Member.create(["name": "John"])
            #expect(john.errors.isEmpty)
            let second = Member()
            second.name = "John"
            let duplicate = expectError(.validationFailed) { try second.save() }
            #expect(duplicate?.validationFailures.map(\.key) == ["already_exists"])
            #expect(second.errors(for: "name").map(\.message) == ["already exists"])
            #expect(try Member.count() == 1)

            // Rename and back on the same record: its own value is not a duplicate.
            john.name = "Johns"
            try john.save()
            john.name = "John"
            try john.save()
            #expect(john.isValid)
            // Update of a fetched record.
            let fetched = try #require(try Member.find(john.id!))
            fetched.name = "Johnny"
            try fetched.save()
            #expect(try Member.find(john.id!)?.name == "Johnny")
        }
    }

    @Test(arguments: TestEngine.all) func theSeedsAnimal(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let animal = Beast()
            animal.name = "animal"
            #expect(animal.isValid)
            try animal.save()
            let bear = Beast()
            bear.name = "bear"
            #expect(!bear.isValid)
            #expect(bear.errors == [ValidationFailure(model: "Beast", property: "name", key: "not_animal", message: "must be animal")])
            expectError(.validationFailed) { try bear.save() }
            #expect(try Beast.count() == 1)
        }
    }

    func validProfile() -> Profile {
        let profile = Profile()
        profile.login = "LOLcat"
        profile.email = "cat@example.com"
        profile.age = 3
        profile.code = "42"
        profile.tags = ["pets"]
        profile.avatar = Data([1])
        return profile
    }

    @Test(arguments: TestEngine.all) func everyBuiltInPassesAValidValue(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let profile = validProfile()
            #expect(try profile.validate(), "\(profile.errors)")
            try profile.save()
            profile.nickname = "neko"
            try profile.save()
        }
    }

    @Test("every built-in fails a bad value with its key", arguments: TestEngine.all, [
        ("login", "", ["cant_be_blank", "too_short", "invalid"]),
        ("login", "   ", ["cant_be_blank", "invalid"]),
        ("login", "LO", ["too_short", "invalid"]),
        ("login", "LOLcatsarelong", ["too_long"]),
        ("login", "admin", ["reserved", "invalid"]),
        ("nickname", "abc", ["wrong_length"]),
        ("email", "not-an-email", ["invalid_format"]),
        ("email", "a@b.c x", ["invalid_format"]),
        ("age", "151", ["too_large"]),
        ("age", "-1", ["too_small"]),
        ("code", "4.5", ["not_an_integer"]),
        ("code", "forty", ["not_a_number"]),
        ("level", "root", ["not_included"]),
        ("tags", "[]", ["cant_be_blank"]),
    ] as [(String, String, [String])])
    func failures(_ engine: TestEngine, _ example: (String, String, [String])) throws {
        let (column, text, keys) = example
        try withDatabase(engine) { _ throws in
            let profile = validProfile()
            let value: any ColumnValue = column == "age" ? Int(text)! : text
            try profile.set([column: value])
            #expect(try profile.validate() == false)
            #expect(profile.errors.map(\.key) == keys)
            #expect(profile.errors.allSatisfy { $0.model == "Profile" && $0.property == column })
        }
    }

    @Test(arguments: TestEngine.all) func errorsListEveryFailureInDeclarationOrder(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let profile = Profile()  // everything at its default
            profile.level = .root
            #expect(!profile.isValid)
            #expect(profile.errors.map { "\($0.property):\($0.key)" } == [
                "login:cant_be_blank", "login:too_short", "email:invalid_format", "code:not_a_number", "level:not_included",
                "tags:cant_be_blank", "avatar:cant_be_blank", "login:invalid",
            ])
            // isValid clears old errors.
            let fixed = validProfile()
            #expect(fixed.isValid && fixed.errors.isEmpty)
            profile.login = "LOLcat"
            profile.email = "cat@example.com"
            profile.level = .high
            profile.code = "7"
            profile.tags = ["x"]
            profile.avatar = Data([0])
            #expect(profile.isValid && profile.errors.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func uniquenessScopeAndCase(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let first = validProfile()
            first.team = 1
            try first.save()
            let sameTeam = validProfile()
            sameTeam.team = 1
            sameTeam.login = "lolCAT"  // case-insensitive: taken
            #expect(!sameTeam.isValid && sameTeam.errors.map(\.key) == ["already_exists", "invalid"])
            sameTeam.login = "LOLcat"
            #expect(sameTeam.errors(for: "login").count == 1 || !sameTeam.isValid)
            let otherTeam = validProfile()
            otherTeam.team = 2
            #expect(otherTeam.isValid)  // unique per team
            try otherTeam.save()
        }
    }

    @Test(arguments: TestEngine.all) func uniquenessChecksOnlyChangedColumnsOnUpdate(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let john = try Member.create(["name": "John"])
            let recorder = SQLRecorder(db)
            john.name = "John"  // unchanged
            #expect(try recorder.during { try john.save() }.isEmpty)  // no SQL at all
            try db.execute(#"INSERT INTO "Member" ("name") VALUES ('Twin')"#)
            // A record saved with another column changed is not re-checked for uniqueness.
            john.name = "Jon"
            let sql = try recorder.during { try john.save() }
            #expect(sql.contains { $0.hasPrefix("SELECT EXISTS") })
        }
    }
}

/// A callback that changes the validated name after validation, so that only the unique
/// index sees the duplicate; and a second unique column no validation covers.
final class Respelled: Model, Validating, Callbacks {
    @Column var name: String = ""
    @Column(index: .unique) var code: String = ""
    var renameTo: String?
    static let validations = Validations(for: Respelled.self) { $0.uniqueness(\.name, index: true) }
    func beforeSave() throws { if let renameTo { name = renameTo } }
}

/// A model first used by many threads at once (by one test only).
final class FirstUse: Model, Validating {
    @Column var login: String = ""
    @Column var email: String = ""
    static let validations = Validations(for: FirstUse.self) {
        $0.presence(\.login)
        $0.uniqueness(\.email, index: true)
    }
}

/// Two connections on one file save the same name at once: the unique index lets one win,
/// and the other gets `already_exists`, not a raw SQLite error.
final class Handle: Model, Validating {
    @Column var name: String = ""
    static let validations = Validations(for: Handle.self) { $0.uniqueness(\.name, index: true) }
}

@Suite("Validations: database constraints")
struct UniqueIndexTests {
    @Test(arguments: TestEngine.all) func aUniquenessValidationDeclaresAUniqueIndex(engine: TestEngine) throws {
        #expect(try Handle.schema().columns[0].index == .unique)
        try withDatabase(engine) { db throws in
            try Handle.create(["name": "x"])
            #expect(try indexNames(db, "Handle") == ["Handle_name_unique"])
        }
    }

    /// A unique index failure is recognised by the engine's code (SQLite's extended result code
    /// 2067, PostgreSQL's SQLSTATE 23505), and the uniqueness validations say which one it is.
    @Test(arguments: TestEngine.all) func aUniqueIndexFailureAValidationExplainsIsAlreadyExists(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try Respelled.create(["name": "taken", "code": "a"])
            let late = Respelled()
            late.name = "free"
            late.code = "b"
            late.renameTo = "taken"  // passes validation as "free", then becomes "taken"
            let error = expectError(.validationFailed) { try late.save() }
            #expect(error?.validationFailures == [
                ValidationFailure(model: "Respelled", property: "name", key: "already_exists", message: "already exists"),
            ])
            #expect(late.errors == error?.validationFailures)
            #expect(late.isNewRecord && late.name == "taken")
            // A unique column no validation covers: the constraint error itself, recognisable.
            let other = Respelled()
            other.name = "other"
            other.code = "a"
            let constraint = expectError(.constraint) { try other.save() }
            #expect(constraint?.isUniqueViolation == true)
            #expect(engine == .sqlite ? constraint?.engineCode == 2067 : constraint?.engineState == "23505")
            #expect(other.isNewRecord)
            #expect(try Respelled.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func constraintHelpersReadTheExtendedResultCode(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.execute(#"CREATE TABLE "Parent" ("# + engine.idColumn + ")")
            try db.execute(
                #"CREATE TABLE "Child" ("# + engine.idColumn + #", "parentId" \#(engine.integer) NOT NULL REFERENCES "Parent"("id"), "#
                    + #""n" \#(engine.integer) CHECK ("n" > 0))"#)
            try db.execute(#"INSERT INTO "Parent" ("id") VALUES (1)"#)
            func code(_ error: ActiveRecordError?) -> String? { engine == .sqlite ? error?.engineCode.map(String.init) : error?.engineState }
            let foreign = expectError(.constraint) { try db.execute(#"INSERT INTO "Child" ("parentId", "n") VALUES (2, 1)"#) }
            #expect(foreign?.isForeignKeyViolation == true && foreign?.isUniqueViolation == false)
            #expect(code(foreign) == (engine == .sqlite ? "787" : "23503"))
            let notNull = expectError(.constraint) { try db.execute(#"INSERT INTO "Child" ("n") VALUES (1)"#) }
            #expect(notNull?.isNotNullViolation == true && code(notNull) == (engine == .sqlite ? "1299" : "23502"))
            let check = expectError(.constraint) { try db.execute(#"INSERT INTO "Child" ("parentId", "n") VALUES (1, 0)"#) }
            #expect(check?.isCheckViolation == true && code(check) == (engine == .sqlite ? "275" : "23514"))
            let primary = expectError(.constraint) { try db.execute(#"INSERT INTO "Parent" ("id") VALUES (1)"#) }
            #expect(primary?.isUniqueViolation == true && code(primary) == (engine == .sqlite ? "1555" : "23505"))
        }
    }

    /// The unique index a validation asks for is part of the model's mapping however many
    /// threads use the model first at once (no thread sees a mapping without it).
    @Test(arguments: TestEngine.all) func theUniqueIndexIsThereForEveryThreadThatUsesTheModelFirst(engine: TestEngine) throws {
        let schemas = Mutex<[TableSchema]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let schema = try? FirstUse.schema() { schemas.withLock { $0.append(schema) } }
        }
        let seen = schemas.withLock { $0 }
        #expect(seen.count == 8)
        #expect(seen.allSatisfy { $0.columns.map(\.index) == [nil, .unique] })
        try withDatabase(engine) { db throws in
            try FirstUse.create(["login": "a", "email": "a@example.com"])
            #expect(try indexNames(db, "FirstUse") == ["FirstUse_email_unique"])
        }
    }

    /// Two databases on one store (two connections' worth of processes): a save that passed
    /// its validation loses to a concurrent one at the unique index, and says so as the
    /// validation would.
    @Test(arguments: TestEngine.all) func theLoserOfARaceGetsAlreadyExists(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in try loseARace(place) }
    }

    private func loseARace(_ place: TestLocation) throws {
        let one = try Database(place.location)
        let two = try Database(place.location)
        try one.use { try Handle.create(["name": "seed"]) }
        // Interleaving: both validate "taken" (not found), then one inserts, then the other.
        // The second connection's validation cannot see the first's uncommitted row, so
        // only the unique index stops it.
        let winner = Handle()
        winner.name = "taken"
        let loser = Handle()
        loser.name = "taken"
        try one.use { try winner.save() }
        // Once the row is visible, validation alone catches the duplicate.
        two.use { #expect(loser.isValid == false) }
        try two.use { () throws in
            try two.execute(#"DELETE FROM "Handle" WHERE "name" = 'taken'"#)
            #expect(loser.isValid)                              // validation passes…
            try one.use { try Handle.create(["name": "taken"]) }  // …then a concurrent saver wins
            let error = expectError(.validationFailed) { try loser.save() }
            #expect(error?.validationFailures == [ValidationFailure(model: "Handle", property: "name", key: "already_exists", message: "already exists")])
            #expect(loser.isNewRecord)
        }
        try one.use { () throws in #expect(try Handle.query().where("name = 'taken'").count() == 1) }
    }
}
