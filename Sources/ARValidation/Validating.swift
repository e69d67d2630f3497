import ARCore
import ARQuery
import Synchronization

/// A model with validations: adopt it and declare ``validations``. `save()`
/// then validates first and writes nothing when a validation fails.
///
/// ```swift
/// final class User: Model, Validating {
///     @Column var name: String = ""
///     static let validations = Validations(for: User.self) {
///         $0.presence(\.name)
///         $0.uniqueness(\.name)
///     }
/// }
/// let user = User()
/// user.isValid          // false
/// user.errors           // [name can't be blank (cant_be_blank)]
/// try user.save()       // throws ActiveRecordError(.validationFailed), writes nothing
/// ```
public protocol Validating: ValidationHook {
    /// The model's validations, in the order their errors are listed.
    static var validations: Validations { get }
}

extension Validating {
    /// Runs every validation, replacing ``Model/errors``; `true` when there is none.
    /// Uniqueness runs for a new record, and for a saved one when its column changed.
    /// - Throws: database errors (a uniqueness query); a key path that is not a column.
    public func validate() throws -> Bool {
        let changed: Set<String>? = isNewRecord ? nil : Set(changes.map(\.column))
        return try runValidations(changedColumns: changed)
    }

    /// Whether the record passes its validations (``validate()``; a database error counts as invalid).
    public var isValid: Bool { (try? validate()) ?? false }

    public func runValidations(changedColumns: Set<String>?) throws -> Bool {
        let mapping = try Self.mapping()
        let model = ModelMapping.modelName(Self.self)
        var found: [ValidationError] = []
        for rule in Self.validations.rules {
            let column = try rule.column()
            if rule.uniqueIndex != nil, let changedColumns, !changedColumns.contains(column) { continue }
            guard let failure = try rule.check(self, column) else { continue }
            let property = mapping.table.schema.columnIndex(named: column).map { mapping.propertyNames[$0] } ?? column
            found.append(ValidationError(model: model, property: property, key: failure.key, message: failure.message))
        }
        errors = found
        return found.isEmpty
    }

    public static var uniquelyIndexedColumns: [String] {
        validations.rules.compactMap { rule in
            guard rule.uniqueIndex == true else { return nil }
            return try? rule.column()
        }
    }

    public static var uniquelyValidatedColumns: [String] {
        validations.rules.compactMap { rule in rule.uniqueIndex == nil ? nil : try? rule.column() }
    }
}

/// Key paths to column names, once per key path.
enum ColumnNames {
    static func name<Record: Model, Value: ColumnValue>(of keyPath: KeyPath<Record, Value>) throws -> String {
        try KeyPathColumns.columnName(keyPath)
    }
}
