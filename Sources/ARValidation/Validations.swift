@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A model's validations, declared in one place.
///
/// ```swift
/// final class User: Model, Validating {
///     @Column var name: String = ""
///     @Column var email: String = ""
///     @Column var age: Int = 0
///     static let validations = Validations(for: User.self) {
///         $0.presence(\.name)
///         $0.uniqueness(\.name, index: true)
///         $0.length(\.name, min: 2, max: 40)
///         $0.format(\.email, "^[^@ ]+@[^@ ]+$")
///         $0.numericality(\.age, onlyInteger: true, in: 0...150)
///     }
/// }
/// ```
public struct Validations: @unchecked Sendable {
    // @unchecked Sendable: built once and never changed; the rules only read
    // the record they are given and the key paths and values they captured.
    let rules: [Rule]

    /// Declares the validations of `model`; the closure lists them in order.
    public init<Record: Model>(for model: Record.Type, _ declare: (ValidationRules<Record>) -> Void) {
        let builder = ValidationRules<Record>()
        declare(builder)
        rules = builder.rules
    }

    /// The validations of a run-time model (the C API's), by column name: presence of
    /// `presence`'s columns, then uniqueness of `uniqueness`'s, each with the same checks
    /// as the key-path forms.
    package init(presence: [String], uniqueness: [String]) {
        rules = presence.map { column in
            Rule(column: { column }, kind: .check) { subject, column, _ in
                Check.presence(try subject.storedValue(of: column), message: Check.blankMessage)
            }
        } + uniqueness.map { column in
            Rule(column: { column }, kind: .uniqueness(indexed: false)) { subject, column, upsertConflict in
                try Check.uniqueness(
                    of: subject, column: column, value: subject.storedValue(of: column), scope: [], caseSensitive: true,
                    upsertConflict: upsertConflict, message: Check.takenMessage)
            }
        }
    }

    /// One validation of one column.
    struct Rule {
        enum Kind {
            /// Runs on every save.
            case check
            /// Runs for new records and changed columns only; `indexed` asks for a UNIQUE index.
            case uniqueness(indexed: Bool)
        }

        /// The column it checks (resolved from the key path once, then cached).
        let column: () throws -> String
        let kind: Kind
        /// Checks the column of a record; `upsertConflict` holds the conflict columns of the
        /// upsert about to run (empty for a save).
        let check: (any ValidationSubject, _ column: String, _ upsertConflict: [String]) throws -> Check.Outcome?

        var isUniqueness: Bool {
            if case .uniqueness = kind { return true }
            return false
        }
    }

    /// Runs the rules on `record`, in order, and returns the failures.
    /// - Parameters:
    ///   - changedColumns: for a saved record, its changed columns (uniqueness runs only on
    ///     those); `nil` for a new record.
    ///   - uniquenessOnly: only the uniqueness rules: after a UNIQUE constraint failed on
    ///     save, which of them a concurrent saver broke.
    ///   - upsertConflict: the conflict columns of the upsert about to write the record, whose
    ///     conflicting row uniqueness does not count; empty for a save.
    package func failures(
        of record: any ValidationSubject, subject names: ValidationSubjectNames, changedColumns: Set<String>?,
        uniquenessOnly: Bool = false, upsertConflict: [String] = []
    ) throws -> [ValidationFailure] {
        var found: [ValidationFailure] = []
        for rule in rules where rule.isUniqueness || !uniquenessOnly {
            let column = try rule.column()
            if rule.isUniqueness, let changedColumns, !changedColumns.contains(column) { continue }
            guard let outcome = try rule.check(record, column, upsertConflict) else { continue }
            found.append(names.failure(column, outcome))
        }
        return found
    }
}

/// How the failures of one model are named: its model name and each column's property name.
package struct ValidationSubjectNames {
    package var model: String
    package var property: (String) -> String

    package init(model: String, property: @escaping (String) -> String = { $0 }) {
        self.model = model
        self.property = property
    }

    func failure(_ column: String, _ outcome: Check.Outcome) -> ValidationFailure {
        ValidationFailure(model: model, property: property(column), key: outcome.key, message: outcome.message)
    }
}

/// The builder that ``Validations/init(for:_:)`` hands to its closure.
public final class ValidationRules<Record: Model> {
    var rules: [Validations.Rule] = []

    init() {}

    private func add<Value>(
        _ keyPath: KeyPath<Record, Value>, kind: Validations.Rule.Kind = .check,
        _ check: @escaping (Record, Value, String, _ upsertConflict: [String]) throws -> Check.Outcome?
    ) where Value: ColumnValue {
        rules.append(Validations.Rule(
            column: { try KeyPathColumns.columnName(keyPath) },
            kind: kind,
            check: { subject, column, upsertConflict in
                let record = subject as! Record  // swiftlint:disable:this force_cast
                return try check(record, record[keyPath: keyPath], column, upsertConflict)
            }))
    }

    /// A rule that reads only the value.
    private func add<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>, _ check: @escaping (Value) throws -> Check.Outcome?) {
        add(keyPath) { _, value, _, _ in try check(value) }
    }

    /// The value must not be blank: `nil`, an empty or all-whitespace string, empty data or an empty collection.
    /// Key `cant_be_blank`.
    /// `message` replaces the failure's default text (the key stays).
    public func presence<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>, message: String = "can't be blank") {
        add(keyPath) { value in Check.presence(value, message: message) }
    }

    /// No other row may hold the same value (re-saving a record with its own value passes).
    /// Key `already_exists`.
    ///
    /// - Parameters:
    ///   - keyPath: the property validated.
    ///   - caseSensitive: `false` compares ASCII letters without case (SQLite's NOCASE).
    ///   - index: also declare a UNIQUE index on the column, so that two concurrent
    ///     savers cannot both win (the loser gets this same error).
    ///   - message: the failure's message (the key stays).
    ///
    /// Checked for new records and when the column changed; a `nil` value is not checked.
    /// Before an upsert, the row the upsert would update is not counted (see
    /// `upsert(onConflict:updating:)`).
    public func uniqueness<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, caseSensitive: Bool = true, index: Bool = false, message: String = "already exists"
    ) {
        add(keyPath, kind: .uniqueness(indexed: index)) { record, value, column, upsertConflict in
            try Check.uniqueness(
                of: record, column: column, value: value.toSQL(), scope: [], caseSensitive: caseSensitive,
                upsertConflict: upsertConflict, message: message)
        }
    }

    /// No other row with the same `scope` values may hold the same value: unique per scope,
    /// e.g. `uniqueness(\.name, scope: ["groupId"])`. Key `already_exists`. (No `index:`
    /// here: a UNIQUE index would be over one column, not the scope.)
    /// `message` replaces the failure's default text (the key stays).
    ///
    /// Checked for new records and when the column changed; a `nil` value is not checked.
    public func uniqueness<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, scope: [String], caseSensitive: Bool = true, message: String = "already exists"
    ) {
        add(keyPath, kind: .uniqueness(indexed: false)) { record, value, column, upsertConflict in
            try Check.uniqueness(
                of: record, column: column, value: value.toSQL(), scope: scope, caseSensitive: caseSensitive,
                upsertConflict: upsertConflict, message: message)
        }
    }

    /// The length (characters) of a string must be within bounds; `nil` passes.
    /// Keys `too_short`, `too_long`, `wrong_length`.
    /// `message` replaces the text of every failure (the key stays); `nil` keeps the
    /// default, which says the bound (`is too short (minimum is 2 characters)`).
    public func length<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, min: Int? = nil, max: Int? = nil, exactly: Int? = nil, message: String? = nil
    ) where Value: StringValue {
        add(keyPath) { value in
            guard let count = value.stringValue?.count else { return nil }
            if let exactly, count != exactly {
                return Check.Outcome(key: "wrong_length", message: message ?? "is the wrong length (should be \(exactly) characters)")
            }
            if let min, count < min {
                return Check.Outcome(key: "too_short", message: message ?? "is too short (minimum is \(min) characters)")
            }
            if let max, count > max {
                return Check.Outcome(key: "too_long", message: message ?? "is too long (maximum is \(max) characters)")
            }
            return nil
        }
    }

    /// A string must match a regular expression (the whole string, unless the pattern says
    /// otherwise with its own anchors); `nil` passes. Key `invalid_format`.
    /// `message` replaces the failure's default text (the key stays).
    ///
    /// ```swift
    /// $0.format(\.email, "[^@ ]+@[^@ ]+\\.[a-z]+")
    /// ```
    /// The pattern is a Swift `Regex`, matched on Unicode scalars (not characters): it passes when its first match (leftmost; of alternatives, the first
    /// that matches) covers the whole string. Where it differs from `NSRegularExpression`
    /// (ICU), which the library used before 0.2.0:
    /// - Lookbehind (`(?<=…)`, `(?<!…)`) is not supported: the rule refuses the pattern.
    /// - `(?i)` folds case one scalar to one scalar: `(?i)straße` does not match `STRASSE`.
    /// - `\w` does not take combining marks: `\w+` does not match `e` + U+0301 (it matches `é`).
    /// - `\b` is a Unicode default word boundary, not ICU's (between a `\w` and a non-`\w`):
    ///   there is none inside `can't`, `a.b`, `3.5` or `3,5` (`\w+\b'\w` does not match
    ///   `can't`). Swift's simple word boundaries were not taken: they count no digit as a word
    ///   character (`\b3\b` would not match `3`).
    /// - ICU refused a stray or unfinished brace; Swift reads `{`, `}`, `a{` and `x{1,2` as
    ///   literal text, and `a{,3}` as `a{0,3}`.
    ///
    /// Swift `Regex` backtracks far more slowly than ICU, so two limits keep a rule from holding
    /// a thread for minutes on hostile input:
    /// - A pattern that repeats without bound (`*`, `+`, `{n,}`) a group holding an unbounded
    ///   quantifier and, in one of its alternatives, nothing else a match must take is refused:
    ///   `(a+)+`, `(\w+\s?)*`, `(a*)*`, `(?:x+y?){2,}`, `(a+|b)*`. Make the inner repeat
    ///   possessive (`(a++)+`) or atomic (`((?>a+))+`), which never gives back what it took, or
    ///   write each character to be matched one way only (`a+`, `[\w\s]*`). A group with
    ///   another atom to take, `(-[0-9]+)*` or `\w+(\.\w+)*`, is accepted; escapes and classes
    ///   are read as one atom: `(\+)+` and `([+]x)+` are accepted. (Other exponential shapes,
    ///   such as `(a|a)*` or `(a\w+)*`, are not looked for: the length limit bounds them.)
    /// - A text longer than 10,000 Unicode scalars is not matched: it fails the rule
    ///   (`invalid_format`, "is too long to check against its format …").
    ///
    /// A refused pattern makes every validation of the model throw `.invalidModel`, naming the
    /// rule and saying why.
    public func format<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>, _ pattern: String, message: String = "is invalid")
    where Value: StringValue {
        let expression = Result { () throws(FormatPattern.Refusal) in try FormatPattern(pattern) }
        add(keyPath) { _, value, column, _ in
            guard let text = value.stringValue else { return nil }
            let format: FormatPattern
            switch expression {
            case .success(let made): format = made
            case .failure(let refusal):
                throw ActiveRecordError(
                    .invalidModel, "the format rule of \(Record.self).\(column) refuses its pattern \(pattern): \(refusal.reason)")
            }
            guard let matches = format.matchesWhole(text) else {
                return Check.Outcome(
                    key: "invalid_format",
                    message: "is too long to check against its format (more than \(FormatPattern.maximumLength) characters)")
            }
            return matches ? nil : Check.Outcome(key: "invalid_format", message: message)
        }
    }

    /// The value must be a number (a numeric column, or a string holding one), optionally
    /// an integer and within a range; `nil` passes.
    /// Keys `not_a_number`, `not_an_integer`, `too_small`, `too_large`.
    /// `message` replaces the text of every failure (the key stays); `nil` keeps the
    /// default, which says the bound (`must be greater than or equal to 0`).
    public func numericality<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, onlyInteger: Bool = false, in range: ClosedRange<Double>? = nil, message: String? = nil
    ) {
        add(keyPath) { value in
            let number: Double
            switch try value.toSQL() {
            case .null: return nil
            case .integer(let int): number = Double(int)
            case .real(let real): number = real
            case .text(let text):
                guard let parsed = Double(text.trimmingWhitespace) else {
                    return Check.Outcome(key: "not_a_number", message: message ?? "is not a number")
                }
                number = parsed
            case .blob: return Check.Outcome(key: "not_a_number", message: message ?? "is not a number")
            }
            if onlyInteger, number.rounded() != number {
                return Check.Outcome(key: "not_an_integer", message: message ?? "must be an integer")
            }
            if let range, number < range.lowerBound {
                return Check.Outcome(key: "too_small", message: message ?? "must be greater than or equal to \(Self.show(range.lowerBound))")
            }
            if let range, number > range.upperBound {
                return Check.Outcome(key: "too_large", message: message ?? "must be less than or equal to \(Self.show(range.upperBound))")
            }
            return nil
        }
    }

    private static func show(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    /// The value must be one of `values`. Key `not_included`.
    /// `message` replaces the failure's default text (the key stays).
    public func inclusion<Value: ColumnValue & Equatable>(
        _ keyPath: KeyPath<Record, Value>, in values: [Value], message: String = "is not included in the list"
    ) {
        add(keyPath) { value in values.contains(value) ? nil : Check.Outcome(key: "not_included", message: message) }
    }

    /// The value must not be one of `values`. Key `reserved`.
    /// `message` replaces the failure's default text (the key stays).
    public func exclusion<Value: ColumnValue & Equatable>(
        _ keyPath: KeyPath<Record, Value>, from values: [Value], message: String = "is reserved"
    ) {
        add(keyPath) { value in values.contains(value) ? Check.Outcome(key: "reserved", message: message) : nil }
    }

    /// A custom validator (the seeds' `validate_field_with_validator`). Key: the validator's
    /// ``Validator/errorKey``.
    /// `message` replaces the validator's ``Validator/errorMessage`` (the key stays); `nil`
    /// keeps the validator's.
    public func custom<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>, _ validator: some Validator, message: String? = nil) {
        add(keyPath) { record, _, column, _ in
            try validator.validate(field: column, of: record)
                ? nil : Check.Outcome(key: validator.errorKey, message: message ?? validator.errorMessage)
        }
    }

    /// A custom check as a closure on the value.
    ///
    /// ```swift
    /// $0.validate(\.name, key: "not_animal", message: "must be animal") { $0 == "animal" }
    /// ```
    public func validate<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, key: String, message: String, _ isValid: @escaping (Value) throws -> Bool
    ) {
        add(keyPath) { value in try isValid(value) ? nil : Check.Outcome(key: key, message: message) }
    }
}

/// String columns, optional or not, for `length` and `format`.
public protocol StringValue {
    /// The string, or `nil`.
    var stringValue: String? { get }
}

extension String: StringValue {
    public var stringValue: String? { self }
}

extension Optional: StringValue where Wrapped == String {
    public var stringValue: String? { self }
}

/// The validations of a run-time model (the C API's), as its save runs them: failures are
/// named by the model's table name and the column names.
extension Validations: DynamicValidationHook {
    package func failures(
        of record: DynamicRecord, changedColumns: Set<String>?, uniquenessOnly: Bool, upsertConflict: [String]
    ) throws -> [ValidationFailure] {
        try failures(
            of: record, subject: ValidationSubjectNames(model: record.model.schema.name), changedColumns: changedColumns,
            uniquenessOnly: uniquenessOnly, upsertConflict: upsertConflict)
    }
}
