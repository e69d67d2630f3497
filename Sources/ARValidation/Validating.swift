@_spi(Engines) import ARCore

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
public protocol Validating: _ValidationHook {
    /// The model's validations, in the order their failures are listed.
    static var validations: Validations { get }
}

extension Validating {
    /// Runs every validation, replacing `Model.errors`; `true` when there is none.
    /// Uniqueness runs for a new record, and for a saved one when its column changed.
    /// - Throws: database errors (a uniqueness query); a key path that is not a column.
    public func validate() throws -> Bool {
        let changed: Set<String>? = isNewRecord ? nil : Set(changes.map(\.column))
        return try runValidations(changedColumns: changed)
    }

    /// Whether the record passes its validations (``validate()``; a database error counts as invalid).
    public var isValid: Bool { (try? validate()) ?? false }

    /// The validation step of `save()` (called by the core; use ``validate()``): runs the
    /// validators and sets the record's `errors`.
    /// - Parameter changedColumns: the changed columns of a saved record; `nil` for a new one.
    /// - Returns: whether the record is valid.
    public func runValidations(changedColumns: Set<String>?) throws -> Bool {
        errors = try Self.validations.failures(of: self, subject: try Self.subject(), changedColumns: changedColumns)
        return errors.isEmpty
    }

    /// The validation step before an upsert on the `conflict` columns (called by the core):
    /// a uniqueness validation does not count the row the upsert would update.
    /// - Parameter conflict: the upsert's conflict columns.
    /// - Returns: whether the record is valid.
    public func runValidations(upsertingOn conflict: [String]) throws -> Bool {
        errors = try Self.validations.failures(of: self, subject: try Self.subject(), changedColumns: nil, upsertConflict: conflict)
        return errors.isEmpty
    }

    /// After a UNIQUE constraint failed on save (called by the core): the uniqueness
    /// validations that fail now, as `already_exists` failures.
    /// - Parameter changedColumns: as for ``runValidations(changedColumns:)``.
    public func uniquenessFailures(changedColumns: Set<String>?) throws -> [ValidationFailure] {
        try Self.validations.failures(of: self, subject: try Self.subject(), changedColumns: changedColumns, uniquenessOnly: true)
    }

    /// The columns whose uniqueness validation also asks for a UNIQUE index (read by the core).
    public static func uniquelyIndexedColumns() throws -> [String] {
        try validations.rules.compactMap { rule in
            guard case .uniqueness(indexed: true) = rule.kind else { return nil }
            return try rule.column()
        }
    }

    /// How failures of this model are named: the class name, and property names for columns.
    private static func subject() throws -> ValidationSubjectNames {
        let mapping = try mapping()
        return ValidationSubjectNames(model: ModelMapping.modelName(Self.self), property: mapping.propertyName(ofColumn:))
    }
}
