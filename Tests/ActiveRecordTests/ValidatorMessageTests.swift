@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A validator with its own key and message.
struct NoSpacesValidator: Validator {
    var errorKey: String { "has_spaces" }
    var errorMessage: String { "has spaces" }
    func validate(field: String, of record: Model) throws -> Bool {
        !(try record.value(of: field, as: String.self).contains(" "))
    }
}

/// Every validator given a message of its own.
final class Signup: Model, Validating {
    @Column var handle: String = ""
    @Column var pin: String = ""
    @Column var age: Int = 0
    @Column var plan: String = "free"
    @Column var email: String = ""
    static let validations = Validations(for: Signup.self) {
        $0.presence(\.handle, message: "pick a handle")
        $0.length(\.handle, min: 3, max: 12, message: "must be 3 to 12 characters")
        $0.custom(\.handle, NoSpacesValidator(), message: "cannot hold a space")
        $0.length(\.pin, exactly: 4, message: "must have 4 digits")
        $0.format(\.pin, "[0-9]*", message: "digits only")
        $0.numericality(\.age, onlyInteger: true, in: 13...120, message: "must be 13 or over")
        $0.inclusion(\.plan, in: ["free", "pro"], message: "is not a plan we sell")
        $0.exclusion(\.handle, from: ["admin", "root"], message: "is taken by the system")
        $0.uniqueness(\.email, message: "has an account already")
    }
}

/// The same validators with their default messages.
final class PlainSignup: Model, Validating {
    @Column var handle: String = ""
    @Column var age: Int = 0
    static let validations = Validations(for: PlainSignup.self) {
        $0.length(\.handle, min: 3)
        $0.custom(\.handle, NoSpacesValidator())
        $0.numericality(\.age, in: 13...120)
        $0.inclusion(\.handle, in: ["abc"])
        $0.exclusion(\.handle, from: ["a b"])
    }
}

/// Issue 31, point 9: every validator takes a `message:` that replaces its text; the key stays.
@Suite("Validators take a message")
struct ValidatorMessageTests {
    @Test(arguments: TestEngine.all) func eachValidatorsMessageReplacesTheDefaultAndKeepsTheKey(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try Signup.create(["handle": "taken", "pin": "1234", "age": 30, "email": "a@x.org"])
            let signup = try Signup(["handle": "a b", "pin": "12x", "age": 9, "plan": "gold", "email": "a@x.org"])
            #expect(!signup.isValid)
            #expect(signup.errors.map { "\($0.property) \($0.key): \($0.message)" } == [
                "handle has_spaces: cannot hold a space",
                "pin wrong_length: must have 4 digits",
                "pin invalid_format: digits only",
                "age too_small: must be 13 or over",
                "plan not_included: is not a plan we sell",
                "email already_exists: has an account already",
            ])
            let short = try Signup(["handle": "", "pin": "1234", "age": 13, "email": "b@x.org"])
            #expect(!short.isValid)
            #expect(short.errors.map { "\($0.key): \($0.message)" } == [
                "cant_be_blank: pick a handle", "too_short: must be 3 to 12 characters",
            ])
            let reserved = try Signup(["handle": "root", "pin": "1234", "age": 13, "email": "c@x.org"])
            #expect(!reserved.isValid)
            #expect(reserved.errors.map { "\($0.key): \($0.message)" } == ["reserved: is taken by the system"])
            // The failure a save throws carries the message too.
            let error = expectError(.validationFailed) { try reserved.save() }
            #expect(error?.message == "Signup is invalid: handle is taken by the system")
        }
    }

    @Test(arguments: TestEngine.all) func withoutAMessageTheDefaultTextStays(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let signup = try PlainSignup(["handle": "a b", "age": 200])
            #expect(!signup.isValid)
            #expect(signup.errors.map { "\($0.key): \($0.message)" } == [
                "has_spaces: has spaces",
                "too_large: must be less than or equal to 120",
                "not_included: is not included in the list",
                "reserved: is reserved",
            ])
            let short = try PlainSignup(["handle": "ab", "age": 20])
            #expect(!short.isValid)
            #expect(short.errors.first.map { "\($0.key): \($0.message)" } == "too_short: is too short (minimum is 3 characters)")
        }
    }
}
