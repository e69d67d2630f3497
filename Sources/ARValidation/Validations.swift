import ARCore
import ARQuery
import Foundation

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

    /// One validation of one column.
    struct Rule {
        /// The column it checks (resolved from the key path once, then cached).
        let column: () throws -> String
        /// For a uniqueness rule (which runs only for new records and changed columns):
        /// whether it also asks for a UNIQUE index.
        let uniqueIndex: Bool?
        let check: (Model, _ column: String) throws -> Failure?
    }
}

/// The builder that ``Validations/init(for:_:)`` hands to its closure.
public final class ValidationRules<Record: Model> {
    var rules: [Validations.Rule] = []

    init() {}

    private func add<Value>(
        _ keyPath: KeyPath<Record, Value>, uniqueIndex: Bool? = nil,
        _ check: @escaping (Record, Value, String) throws -> Failure?
    ) where Value: ColumnValue {
        rules.append(Validations.Rule(
            column: { try ColumnNames.name(of: keyPath) },
            uniqueIndex: uniqueIndex,
            check: { record, column in
                let record = record as! Record  // swiftlint:disable:this force_cast
                return try check(record, record[keyPath: keyPath], column)
            }))
    }

    /// The value must not be blank: `nil`, an empty or all-whitespace string, empty data or an empty collection.
    /// Key `cant_be_blank`.
    public func presence<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>, message: String = "can't be blank") {
        add(keyPath) { _, value, _ in isBlank(value) ? Failure(key: "cant_be_blank", message: message) : nil }
    }

    /// No other row may hold the same value (re-saving a record with its own value passes).
    /// Key `already_exists`.
    ///
    /// - Parameters:
    ///   - scope: columns that must also match (unique per scope), e.g. `["groupId"]`.
    ///   - caseSensitive: `false` compares ASCII letters without case (SQLite's NOCASE).
    ///   - index: also declare a UNIQUE index on the column, so that two concurrent
    ///     savers cannot both win (the loser gets this same error). Not with `scope`.
    ///
    /// Checked for new records and when the column changed; a `nil` value is not checked.
    public func uniqueness<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, scope: [String] = [], caseSensitive: Bool = true, index: Bool = false,
        message: String = "already exists"
    ) {
        add(keyPath, uniqueIndex: index && scope.isEmpty) { record, value, column in
            let stored = try value.toSQL()
            guard !stored.isNull else { return nil }
            let table = try Record.schema().name.quotedIdentifier
            var conditions = ["\(column.quotedIdentifier) = ?\(caseSensitive ? "" : " COLLATE NOCASE")"]
            var arguments = [stored]
            for scoped in scope {
                let scopeValue = try record.value(of: scoped)
                conditions.append(scopeValue.isNull ? "\(scoped.quotedIdentifier) IS NULL" : "\(scoped.quotedIdentifier) = ?")
                if !scopeValue.isNull { arguments.append(scopeValue) }
            }
            if let id = record.id {
                conditions.append("\"id\" <> ?")
                arguments.append(.integer(id))
            }
            let sql = "SELECT EXISTS (SELECT 1 FROM \(table) WHERE \(conditions.joined(separator: " AND ")))"
            // Through withTable: a first save validates before its INSERT creates the table.
            let taken = try Database.current.withTable(Record.mapping().table) { connection in
                try connection.rows(sql, arguments).first?.first == .integer(1)
            }
            return taken ? Failure(key: "already_exists", message: message) : nil
        }
    }

    /// The length (characters) of a string must be within bounds; `nil` passes.
    /// Keys `too_short`, `too_long`, `wrong_length`.
    public func length<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, min: Int? = nil, max: Int? = nil, exactly: Int? = nil
    ) where Value: StringValue {
        add(keyPath) { _, value, _ in
            guard let count = value.stringValue?.count else { return nil }
            if let exactly, count != exactly {
                return Failure(key: "wrong_length", message: "is the wrong length (should be \(exactly) characters)")
            }
            if let min, count < min { return Failure(key: "too_short", message: "is too short (minimum is \(min) characters)") }
            if let max, count > max { return Failure(key: "too_long", message: "is too long (maximum is \(max) characters)") }
            return nil
        }
    }

    /// A string must match a regular expression (the whole string, unless the pattern says
    /// otherwise with its own anchors); `nil` passes. Key `invalid_format`.
    public func format<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>, _ pattern: String, message: String = "is invalid")
    where Value: StringValue {
        let expression = Result { try NSRegularExpression(pattern: pattern) }
        add(keyPath) { _, value, column in
            guard let text = value.stringValue else { return nil }
            guard case .success(let regex) = expression else {
                throw ActiveRecordError(.invalidModel, "the format of \(Record.self).\(column) is not a valid regular expression: \(pattern)")
            }
            let range = NSRange(text.startIndex..., in: text)
            let match = regex.firstMatch(in: text, range: range)
            return match?.range == range ? nil : Failure(key: "invalid_format", message: message)
        }
    }

    /// The value must be a number (a numeric column, or a string holding one), optionally
    /// an integer and within a range; `nil` passes.
    /// Keys `not_a_number`, `not_an_integer`, `too_small`, `too_large`.
    public func numericality<Value: ColumnValue>(
        _ keyPath: KeyPath<Record, Value>, onlyInteger: Bool = false, in range: ClosedRange<Double>? = nil
    ) {
        add(keyPath) { _, value, _ in
            let number: Double
            switch try value.toSQL() {
            case .null: return nil
            case .integer(let int): number = Double(int)
            case .real(let real): number = real
            case .text(let text):
                guard let parsed = Double(text.trimmingCharacters(in: .whitespaces)) else {
                    return Failure(key: "not_a_number", message: "is not a number")
                }
                number = parsed
            case .blob: return Failure(key: "not_a_number", message: "is not a number")
            }
            if onlyInteger, number.rounded() != number { return Failure(key: "not_an_integer", message: "must be an integer") }
            if let range, number < range.lowerBound {
                return Failure(key: "too_small", message: "must be greater than or equal to \(Self.show(range.lowerBound))")
            }
            if let range, number > range.upperBound {
                return Failure(key: "too_large", message: "must be less than or equal to \(Self.show(range.upperBound))")
            }
            return nil
        }
    }

    private static func show(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    /// The value must be one of `values`. Key `not_included`.
    public func inclusion<Value: ColumnValue & Equatable>(_ keyPath: KeyPath<Record, Value>, in values: [Value]) {
        add(keyPath) { _, value, _ in
            values.contains(value) ? nil : Failure(key: "not_included", message: "is not included in the list")
        }
    }

    /// The value must not be one of `values`. Key `reserved`.
    public func exclusion<Value: ColumnValue & Equatable>(_ keyPath: KeyPath<Record, Value>, from values: [Value]) {
        add(keyPath) { _, value, _ in
            values.contains(value) ? Failure(key: "reserved", message: "is reserved") : nil
        }
    }

    /// A custom validator (the seeds' `validate_field_with_validator`).
    public func custom<Value: ColumnValue>(_ keyPath: KeyPath<Record, Value>, _ validator: some Validator) {
        add(keyPath) { record, _, column in
            try validator.validate(field: column, of: record) ? nil : Failure(key: validator.errorKey, message: validator.errorMessage)
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
        add(keyPath) { _, value, _ in try isValid(value) ? nil : Failure(key: key, message: message) }
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
