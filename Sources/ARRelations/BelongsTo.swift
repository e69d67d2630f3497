@_spi(Engines) import ARCore
import ARQuery
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Declares that a model belongs to a parent: it holds the parent's id in a
/// foreign key column, `<lowerCamel(Parent)>Id` by default (`Group` → `groupId`).
///
/// ```swift
/// final class User: Model {
///     @Column var name: String = ""
///     @BelongsTo var group: Group?                           // column "groupId"
///     @BelongsTo(key: "ownerId", dependency: .destroy) var owner: Person?
/// }
/// user.group = students        // sets groupId (at the next save if `students` is unsaved)
/// user.group?.title            // loaded on first use, then kept
/// user.group = nil             // clears groupId
/// ```
///
/// The getter loads the parent lazily and returns `nil` when there is no key,
/// no such row, or the database cannot be read. A parent assigned before it is
/// saved is saved by the owner's `save()`, first, in the same transaction.
/// With `dependency: .destroy`, destroying the record destroys its parent too.
///
/// The key itself is the projected value's ``BelongsToKey/id``: read and set without
/// loading the parent, and named by key path wherever a column is (`where`, `order(by:)`,
/// `pluck`, validations):
///
/// ```swift
/// user.$group.id                                       // Optional(7): the groupId column
/// user.$group.id = 9                                   // user.group is now group 9
/// User.query().where(\.$group.id == 7).order(by: \.$group.id)
/// ```
@propertyWrapper
public struct BelongsTo<Parent: Model> {
    // Usable from inline, as the initializer is: a model's initializer (run for every record
    // made, each fetched row's included) then sets these in place, with no call and no
    // generic metadata passed (see Benchmarks/README.md, Hot-path notes).
    /// The foreign key column (first, so that reflection can find it).
    @usableFromInline package var key: Column<Int64?>
    /// The parent as assigned or loaded.
    @usableFromInline package var parent: Parent?
    @usableFromInline package let dependency: BelongsToDependency

    /// Declares the relation.
    /// - Parameters:
    ///   - key: the foreign key column; default `<lowerCamel(Parent)>Id`.
    ///   - dependency: what destroying this record does to the parent (default: nothing).
    @inlinable
    public init(key: String? = nil, dependency: BelongsToDependency = .none) {
        // The default name is given to reflection once (defaultColumnName), not made per record.
        self.key = Column(wrappedValue: nil, key, index: .index)
        self.dependency = dependency
    }

    /// The parent, through the owning record.
    public static subscript<Owner: Model>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Parent?>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, BelongsTo>
    ) -> Parent? {
        get {
            let field = owner[keyPath: storageKeyPath]
            if let parent = field.parent, parent.id == nil || parent.id == field.key.value { return parent }
            guard let id = field.key.value else { return nil }
            let loaded = try? Parent.find(id)
            owner[keyPath: storageKeyPath].parent = loaded
            return loaded
        }
        set {
            owner.captureOriginals()
            owner[keyPath: storageKeyPath].parent = newValue
            owner[keyPath: storageKeyPath].key.value = newValue?.id
        }
    }

    /// The relation's key, `user.$group`: its ``BelongsToKey/id`` is the foreign key column's
    /// value. Setting it changes the key (at the next save), and the parent follows:
    /// `user.group` then loads the row with that id.
    public static subscript<Owner: Model>(
        _enclosingInstance owner: Owner,
        projected projectedKeyPath: ReferenceWritableKeyPath<Owner, BelongsToKey>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, BelongsTo>
    ) -> BelongsToKey {
        get { owner[keyPath: storageKeyPath].projectedValue }
        set {
            owner.captureOriginals()
            owner[keyPath: storageKeyPath].projectedValue = newValue
        }
    }

    /// The relation's key (`subscript(_enclosingInstance:projected:storage:)` on a model).
    public var projectedValue: BelongsToKey {
        get { BelongsToKey(id: key.value) }
        set {
            if newValue.id == nil || parent?.id != newValue.id { parent = nil }
            key.value = newValue.id
        }
    }

    /// Use the property through its model; this is never called.
    @available(*, unavailable, message: "@BelongsTo works only on a property of a Model")
    public var wrappedValue: Parent? {
        get { fatalError() }
        set { fatalError() }  // swiftlint:disable:this unused_setter_value
    }
}

/// The key of a ``BelongsTo`` relation, its projected value (`user.$group`): the parent's id
/// as the foreign key column holds it, without loading the parent.
///
/// ```swift
/// let groupId = user.$group.id                        // Int64?
/// let members = try User.query().where(\.$group.id == groupId).fetch()
/// ```
public struct BelongsToKey: Sendable, Hashable {
    /// The parent's id, as the foreign key column holds it; `nil` for no parent (or a parent
    /// assigned but not saved yet: its id comes at the owner's save).
    public var id: Int64?
}

extension BelongsTo: EmbeddedColumnField {
    package static var embeddedColumn: WritableKeyPath<BelongsTo, Column<Int64?>> { \.key }

    package static var defaultColumnName: String? { foreignKey(for: Parent.self) }

    package static var referencedModel: Model.Type? { Parent.self }
}

extension BelongsTo: RecordHookField {
    package static func hasPendingWork(_ field: BelongsTo) -> Bool {
        guard let parent = field.parent else { return false }
        return parent.id == nil
    }

    /// Saves an unsaved parent first, then sets the key to its id.
    package static func willSave(_ site: HookFieldSite<BelongsTo>) throws {
        guard let parent = site.field.parent, parent.id == nil else { return }
        try saveRelated(parent, of: site.record)
        site.record.captureOriginals()
        site.modify { $0.key.value = parent.id }
    }

    package static func didSave(_ site: HookFieldSite<BelongsTo>) throws {}

    package static func hasDestroyWork(_ field: BelongsTo) -> Bool { field.dependency == .destroy }

    package static func willDestroy(_ site: HookFieldSite<BelongsTo>) throws {
        let relation = site.field
        guard relation.dependency == .destroy, let id = site.originalKey(Int64.self) ?? relation.key.value,
              let parent = try Parent.find(id) else { return }
        try parent.destroy()
    }
}

extension Query {
    /// Loads a belongs-to (or has-one) relation for every fetched record with one more
    /// query: `User.query().includes(\.group)`, `User.query().includes(\.profile)`.
    public func includes<Parent: Model>(_ relation: ReferenceWritableKeyPath<Record, Parent?>) -> Query {
        if let hasOne = includingHasOne(relation) { return hasOne }
        return preloading { owners in
            guard !owners.isEmpty else { return }
            let mapping = try Record.mapping()
            let index = try KeyPathColumns.columnIndex(ofRelation: relation)
            let found = mapping.hooks.first { $0.columnIndex == index }
            // A parent keyed by a UUID or String column (``BelongsToKeyed``).
            if let hook = found, hook.kind == BelongsToUUID<Parent>.self {
                return try preloadKeyedParents(owners, column: index, hook: hook, parent: Parent.self, key: UUID.self)
            }
            if let hook = found, hook.kind == BelongsToString<Parent>.self {
                return try preloadKeyedParents(owners, column: index, hook: hook, parent: Parent.self, key: String.self)
            }
            guard let hook = found, hook.kind == BelongsTo<Parent>.self else {
                throw ActiveRecordError(.misuse, "\(relation) is not a @BelongsTo relation of \(Record.self)")
            }
            var ids: [Int64] = []
            for owner in owners { if case .integer(let id) = try owner.currentValue(index) { ids.append(id) } }
            var parents: [Int64: Parent] = [:]
            for chunk in chunked(Array(Set(ids))) {
                for parent in try Parent.query().where("id", .in(chunk)).fetch() { parents[parent.id!] = parent }
            }
            for owner in owners {
                guard case .integer(let id) = try owner.currentValue(index), let parent = parents[id] else { continue }
                // Into the relation's storage: assigning through the key path would read (and
                // lazily load) the parent first.
                owner.hookSite(hook, as: BelongsTo<Parent>.self).modify { $0.parent = parent }
            }
        }
    }
}

/// A preload's key value of `record`: by the column's index when it was found once for the
/// whole preload (a look-up by name per record costs a dictionary search), else by name.
func keyValue(of record: Model, at index: Int?, named key: String) throws -> DatabaseValue {
    if let index { return try record.currentValue(index) }
    return try record.value(of: key)
}

/// Splits values into lists of at most `size`, each the list of one preload query's `IN`
/// (bound as one parameter: the query's statement is the same for every list's length).
func chunked<T>(_ values: [T], size: Int = 10_000) -> [[T]] {
    stride(from: 0, to: values.count, by: size).map { Array(values[$0..<Swift.min($0 + size, values.count)]) }
}
