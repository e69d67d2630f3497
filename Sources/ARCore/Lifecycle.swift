/// One failed validation: which model and property, a stable key for
/// localisation, and a readable English message. ``Model/errors`` lists them; a save
/// that fails validation throws an ``ActiveRecordError`` carrying them.
public struct ValidationFailure: Sendable, Equatable, CustomStringConvertible {
    /// The model (class) name, e.g. `User`.
    public var model: String
    /// The property (column) that failed, e.g. `name`.
    public var property: String
    /// The error key: `cant_be_blank`, `already_exists`, `too_short`, … or a custom validator's.
    public var key: String
    /// A readable message, e.g. `can't be blank`.
    public var message: String

    /// Makes a validation failure.
    public init(model: String, property: String, key: String, message: String) {
        self.model = model
        self.property = property
        self.key = key
        self.message = message
    }

    /// `name can't be blank`.
    public var description: String { "\(property) \(message)" }
}

/// Lifecycle callbacks: adopt the protocol and implement the callbacks you need
/// (the others do nothing). They run in Rails' order, inside the transaction
/// of the save or destroy:
///
/// `beforeValidation` → validations → `afterValidation` → `beforeSave` →
/// `beforeCreate`/`beforeUpdate` → SQL → `afterCreate`/`afterUpdate` → `afterSave`;
/// `beforeDestroy` → dependencies and SQL → `afterDestroy`.
///
/// ```swift
/// final class Post: Model, Callbacks {
///     @Column var title: String = ""
///     @Column var slug: String = ""
///     func beforeSave() throws { slug = title.lowercased() }
///     func beforeDestroy() throws { if title == "pinned" { throw CallbackAbort("pinned posts stay") } }
/// }
/// ```
///
/// A before-callback that throws aborts: nothing is written and `save()` or
/// `destroy()` throws that error. An after-callback that throws rolls the write back.
public protocol Callbacks: Model {
    /// Before validations run (only for models with validations).
    func beforeValidation() throws
    /// After validations ran and passed.
    func afterValidation() throws
    /// Before an `INSERT` or `UPDATE`.
    func beforeSave() throws
    /// After an `INSERT` or `UPDATE`, still in its transaction.
    func afterSave() throws
    /// Before an `INSERT`.
    func beforeCreate() throws
    /// After an `INSERT`.
    func afterCreate() throws
    /// Before an `UPDATE`.
    func beforeUpdate() throws
    /// After an `UPDATE`.
    func afterUpdate() throws
    /// Before a `DELETE` (and its dependencies).
    func beforeDestroy() throws
    /// After a `DELETE`, still in its transaction.
    func afterDestroy() throws
    /// Once the outermost transaction that saved or destroyed the record committed (Rails'
    /// `after_commit`): once per transaction, however often the record was written in it.
    /// A save outside a transaction commits its own.
    func afterCommit()
    /// Once the transaction (or savepoint) that saved or destroyed the record rolled back:
    /// the write is undone (the record's id and values in memory too).
    func afterRollback()
}

extension Callbacks {
    public func beforeValidation() throws {}
    public func afterValidation() throws {}
    public func beforeSave() throws {}
    public func afterSave() throws {}
    public func beforeCreate() throws {}
    public func afterCreate() throws {}
    public func beforeUpdate() throws {}
    public func afterUpdate() throws {}
    public func beforeDestroy() throws {}
    public func afterDestroy() throws {}
    public func afterCommit() {}
    public func afterRollback() {}
}

/// Thrown by a before-callback to stop a save or destroy with a reason.
public struct CallbackAbort: Error, Sendable, CustomStringConvertible {
    /// Why the operation was stopped.
    public var reason: String
    /// Makes the signal.
    public init(_ reason: String) { self.reason = reason }
    /// `aborted: <reason>`.
    public var description: String { "aborted: \(reason)" }
}

/// The validation step of `save()`: `ARValidation`'s `Validating` protocol
/// implements it, and the core calls it. Adopt `Validating`, not this.
public protocol _ValidationHook: Model {
    /// Runs the validators and sets ``Model/errors``.
    /// - Parameter changedColumns: the changed columns of a saved record; `nil` for a new one.
    /// - Returns: whether the record is valid.
    func runValidations(changedColumns: Set<String>?) throws -> Bool
    /// Runs the validators before an upsert on the `conflict` columns and sets
    /// ``Model/errors``: every validation, as for a new record, except that a uniqueness
    /// validation does not count the row the upsert would update (the one holding the
    /// record's values in `conflict`), which is the conflict the upsert resolves.
    /// - Returns: whether the record is valid.
    func runValidations(upsertingOn conflict: [String]) throws -> Bool
    /// After a UNIQUE constraint failed on save (a concurrent saver won the race): the
    /// record's uniqueness validations that fail now, as `already_exists` failures; empty
    /// when none does (the constraint was another one).
    /// - Parameter changedColumns: as for ``runValidations(changedColumns:)``.
    func uniquenessFailures(changedColumns: Set<String>?) throws -> [ValidationFailure]
    /// The columns whose uniqueness validation also asks for a UNIQUE index.
    static func uniquelyIndexedColumns() throws -> [String]
}

extension _ValidationHook {
    /// Validates as for a new record (a hook that knows nothing of upserts).
    public func runValidations(upsertingOn conflict: [String]) throws -> Bool {
        try runValidations(changedColumns: nil)
    }
}
