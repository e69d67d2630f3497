// Validations and callbacks: a model that validates (presence, uniqueness with its index,
// length, format, numericality, a custom rule), keyed errors, callbacks in Rails' order and
// a before-callback that refuses.
//
//     swift run ActiveRecordExampleValidations
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Refuses names that are all capitals (a custom validator, the seeds' ARValidatorProtocol).
struct NotShouting: Validator {
    var errorKey: String { "shouting" }
    var errorMessage: String { "must not be all capitals" }
    func validate(field: String, of record: Model) throws -> Bool {
        let name = try record.value(of: field, as: String.self)
        return name.count < 2 || name != name.uppercased()
    }
}

/// Callback calls, in the order they ran.
nonisolated(unsafe) var calls: [String] = []

final class Member: Model, Validating, Callbacks {
    @Column var name: String = ""
    @Column var email: String = ""
    @Column var age: Int = 0
    @Column var slug: String = ""

    static let validations = Validations(for: Member.self) {
        $0.presence(\.name)
        $0.uniqueness(\.name, index: true)
        $0.length(\.name, min: 2, max: 20)
        $0.format(\.email, "[^@ ]+@[^@ ]+")
        $0.numericality(\.age, onlyInteger: true, in: 0...150)
        $0.custom(\.name, NotShouting())
    }

    func beforeValidation() throws { calls.append("beforeValidation") }
    func afterValidation() throws { calls.append("afterValidation") }
    func beforeSave() throws {
        calls.append("beforeSave")
        slug = name.lowercased().replacing(" ", with: "-")
    }
    func beforeCreate() throws { calls.append("beforeCreate") }
    func afterCreate() throws { calls.append("afterCreate") }
    func beforeUpdate() throws { calls.append("beforeUpdate") }
    func afterUpdate() throws { calls.append("afterUpdate") }
    func afterSave() throws { calls.append("afterSave") }
    func beforeDestroy() throws {
        calls.append("beforeDestroy")
        if name == "Founder" { throw ActiveRecordError(.misuse, "the founder stays") }
    }
    func afterDestroy() throws { calls.append("afterDestroy") }
}

func show(_ member: Member) {
    let failures = member.errors
    print("\(failures.count) error(s):")
    for failure in failures { print("  \(failure.property): \(failure.message) (\(failure.key))") }
}

do {
    try Database(.inMemory).use {
        let blank = Member()
        blank.email = "not an address"
        blank.age = 200
        print("blank member valid? \(blank.isValid)")
        show(blank)

        let ada = Member()
        ada.name = "Ada Lovelace"
        ada.email = "ada@example.org"
        ada.age = 36
        calls = []
        try ada.save()
        print("saved #\(ada.id!) slug \(ada.slug): \(calls.joined(separator: " → "))")

        ada.age = 37
        calls = []
        try ada.save()
        print("updated: \(calls.joined(separator: " → "))")

        let twin = Member()
        twin.name = "Ada Lovelace"
        twin.email = "twin@example.org"
        do {
            try twin.save()
        } catch let error as ActiveRecordError where error.code == .validationFailed {
            print("the twin was not saved (\(try Member.count()) member in the table):")
            show(twin)
        }

        let loud = Member()
        loud.name = "GRACE"
        loud.email = "grace@example.org"
        print("GRACE valid? \(loud.isValid); errors for name: \(loud.errors(for: "name").map(\.key))")

        let founder = try Member.create(["name": "Founder", "email": "f@example.org", "age": 50])
        calls = []
        do {
            try founder.destroy()
        } catch {
            print("destroy refused: \((error as? ActiveRecordError)?.message ?? "\(error)"); calls: \(calls.joined(separator: " → "))")
        }
        calls = []
        try ada.destroy()
        print("Ada destroyed: \(calls.joined(separator: " → ")); members left: \(try Member.all().map(\.name))")
    }
} catch {
    print("error: \(error)")
    exit(1)
}
