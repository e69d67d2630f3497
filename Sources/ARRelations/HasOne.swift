@_spi(Engines) import ARCore
import ARQuery
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Declares that a model has one child, which holds its id in a foreign key column,
/// `<lowerCamel(Owner)>Id` by default (`User` → `userId`): Rails' `has_one`.
///
/// ```swift
/// final class User: Model {
///     @Column var name: String = ""
///     @HasOne(dependency: .destroy) var profile: Profile?   // Profile.userId = User.id
/// }
/// final class Profile: Model {
///     @Column var bio: String = ""
///     @BelongsTo var user: User?                             // declares the column "userId"
/// }
/// john.profile?.bio                  // loaded on first use, then kept
/// john.profile = Profile(); try john.save()   // links it (and saves it) at the owner's save
/// let users = try User.query().includes(\.profile).fetch()   // 2 queries for any number of users
/// ```
///
/// The getter loads the child lazily: the owner's child with the lowest id (or the first
/// in the scope's order), `nil` when there is none, the owner is unsaved, or the database
/// cannot be read. A result is kept; `nil` is not (the next read asks again), unless it came
/// from eager loading.
///
/// Assigning records the change, which the owner's `save()` makes, in its transaction:
/// the owner's other children (a table may hold several rows for one owner) are destroyed
/// with `dependency: .destroy`, else their key is cleared (set to `NULL` and saved), and the
/// new child gets the owner's id and is saved. Assigning `nil` does the first part only.
/// After the save the owner has exactly the child assigned.
///
/// Destroying the owner: `.destroy` destroys its children, `.nullify` clears their keys,
/// `.none` (the default) leaves them (a foreign key then refuses the owner's `DELETE`).
@propertyWrapper
public struct HasOne<Child: Model> {
    // Usable from inline, as the initializer is: a model's initializer then sets these in place.
    /// The child as assigned or loaded.
    @usableFromInline package var child: Child?
    /// Whether ``child`` is loaded, assigned (to link at the owner's save), or not known yet.
    @usableFromInline package var state: HasOneState
    @usableFromInline package let key: String?
    @usableFromInline package let dependency: Dependency
    /// The scope: conditions and orderings of the children the child is chosen from.
    @usableFromInline package let scope: ((Query<Child>) -> Query<Child>)?

    /// Declares the relation.
    /// - Parameters:
    ///   - key: the child's foreign key column; default `<lowerCamel(Owner)>Id`.
    ///   - dependency: what destroying the owner does to its children, and assigning another
    ///     child to the one it replaces (`.destroy` destroys it; otherwise its key is cleared).
    ///   - scope: conditions and orderings of the children, the first of which is the child:
    ///     `{ $0.order(by: \.createdAt, ascending: false) }` for the latest.
    @inlinable
    public init(key: String? = nil, dependency: Dependency = .none, scope: ((Query<Child>) -> Query<Child>)? = nil) {
        child = nil
        state = .unknown
        self.key = key
        self.dependency = dependency
        self.scope = scope
    }

    /// The child, through the owning record.
    public static subscript<Owner: Model>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Child?>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, HasOne>
    ) -> Child? {
        get {
            let field = owner[keyPath: storageKeyPath]
            if field.state != .unknown { return field.child }
            guard owner.id != nil, let link = ownerLinkValue(owner),
                  let loaded = try? field.children(of: link, ownerType: Owner.self).first() else { return nil }
            owner[keyPath: storageKeyPath].child = loaded
            owner[keyPath: storageKeyPath].state = .loaded
            return loaded
        }
        set {
            owner[keyPath: storageKeyPath].child = newValue
            owner[keyPath: storageKeyPath].state = .assigned
        }
    }

    /// Use the property through its model; this is never called.
    @available(*, unavailable, message: "@HasOne works only on a property of a Model")
    public var wrappedValue: Child? {
        get { fatalError() }
        set { fatalError() }  // swiftlint:disable:this unused_setter_value
    }

    func keyColumn(for owner: Model.Type) -> String { key ?? foreignKey(for: owner) }

    /// The children of the owner whose key is `owner` (its id, or its UUID or String key), in the
    /// scope, the child first (the scope's order, then the ids').
    func children(of owner: any ColumnValue, ownerType: Model.Type) -> Query<Child> {
        var query = Child.query().where(keyColumn(for: ownerType), .equal(owner))
        if let scope { query = query.scoped(by: scope) }
        return query.order(by: "id")
    }
}

/// What a ``HasOne`` field knows of its child.
@usableFromInline
package enum HasOneState: UInt8, Sendable {
    /// Nothing yet: the getter asks the database.
    case unknown
    /// Loaded (or linked by a save): the field's child is the owner's, `nil` for none.
    case loaded
    /// Assigned: the owner's `save()` links it.
    case assigned
}

extension HasOne: RecordHookField {
    package static func hasPendingWork(_ field: HasOne) -> Bool { field.state == .assigned }

    package static func willSave(_ site: HookFieldSite<HasOne>) throws {}

    /// Links the assigned child: the owner's other children are destroyed (`.destroy`) or
    /// let go (key cleared), then the child gets the owner's id and is saved.
    package static func didSave(_ site: HookFieldSite<HasOne>) throws {
        let record = site.record, field = site.field
        guard field.state == .assigned, record.id != nil, let link = ownerLinkValue(record) else { return }
        let ownerType = type(of: record)
        let key = field.keyColumn(for: ownerType)
        let child = field.child
        for other in try field.children(of: link, ownerType: ownerType).fetch() {
            if let child, other === child || (child.id != nil && other.id == child.id) { continue }
            if field.dependency == .destroy {
                try other.destroy()
            } else {
                try other.set([key: nil])
                try saveRelated(other, of: record)
            }
        }
        if let child { try saveChild(child, key: key, of: record, for: "\(ownerType)'s has-one") }
        site.modify { $0.state = .loaded }
        try site.onRollback { $0.state = .assigned }
    }

    package static func hasDestroyWork(_ field: HasOne) -> Bool { field.dependency != .none }

    package static func willDestroy(_ site: HookFieldSite<HasOne>) throws {
        let field = site.field, record = site.record
        guard record.id != nil, let link = ownerLinkValue(record) else { return }
        try applyDependency(
            field.dependency, toChildrenOf: link, key: field.keyColumn(for: type(of: record)), scope: field.scope,
            for: "\(type(of: record))'s has-one")
    }
}

extension Query {
    /// Eager loading of a has-one relation (`User.query().includes(\.profile)`), or `nil` when
    /// `relation` is not one of `Record` (then it is a belongs-to's): one more query for all the
    /// owners, each then holding its child (or `nil`) without a query of its own.
    func includingHasOne<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Child?>) -> Query? {
        guard let hook = Self.hasOneHook(relation) else { return nil }
        return preloading { owners in
            guard let first = owners.first else { return }
            let field = first.hookSite(hook, as: HasOne<Child>.self).field
            let key = field.keyColumn(for: Record.self)
            if !Record.primaryKey.isAutoincrement { return try Self.preloadKeyedHasOne(owners, hook: hook, field: field, key: key) }
            let keyReader = ChildKeyReader(Child.self, key: key)
            let condition = RelationKeyCondition(column: key)
            var ids: [Int64] = []
            for owner in owners { if let id = owner.id { ids.append(id) } }
            var children: [Int64: Child] = [:]
            for chunk in chunked(ids) {
                // By key, then the scope's order, then id: each owner's child is the first of its run.
                var query = Child.query().where(condition, in: chunk).order(by: key)
                if let scope = field.scope { query = query.scoped(by: scope) }
                let rows = try query.order(by: "id").fetch().asModels
                for index in rows.indices {
                    guard let id = try keyReader.key(in: rows, at: index), children[id] == nil else { continue }
                    children[id] = unsafeDowncast(rows[index], to: Child.self)
                }
            }
            for owner in owners {
                guard let id = owner.id else { continue }
                owner.hookSite(hook, as: HasOne<Child>.self).modify { field in
                    // An assignment not saved yet stays.
                    guard field.state != .assigned else { return }
                    field.child = children[id]
                    field.state = .loaded
                }
            }
        }
    }

    /// ``includingHasOne(_:)``'s loading for owners keyed by a `UUID` or `String` column: their
    /// children by that key (one query per 10,000 owners), each owner's child the first of its run.
    private static func preloadKeyedHasOne<Child: Model>(
        _ owners: [Model], hook: ModelMapping.Hook, field: HasOne<Child>, key: String
    ) throws {
        let keys = owners.compactMap { $0.id == nil ? nil : $0.primaryKeyValue.keyText }
        let index = try Child.mapping().columnIndex(key)
        var children: [DatabaseValue: Child] = [:]
        for chunk in chunked(keys) {
            // A UUID key compared as a UUID (PostgreSQL's `uuid` column), a String as text.
            let condition: FieldCondition =
                Record.primaryKey.kind == .uuid ? .in(chunk.compactMap(UUID.init(uuidString:))) : .in(chunk)
            var query = Child.query().where(key, condition).order(by: key)
            if let scope = field.scope { query = query.scoped(by: scope) }
            for row in try query.order(by: "id").fetch() {
                let owner = try row.currentValue(index)
                if children[owner] == nil { children[owner] = row }
            }
        }
        for owner in owners where owner.id != nil {
            let child = children[owner.primaryKeyValue]
            owner.hookSite(hook, as: HasOne<Child>.self).modify { field in
                guard field.state != .assigned else { return }  // an assignment not saved yet stays
                field.child = child
                field.state = .loaded
            }
        }
    }

    /// Keeps the owners that have a child in the has-one `relation` (within its scope):
    /// `WHERE EXISTS (SELECT 1 FROM … "Profile"."userId" = "User"."id")`, in the same statement.
    ///
    /// ```swift
    /// let withProfile = try User.query().whereExists(\.profile).fetch()
    /// ```
    /// - Note: the terminal call throws `.misuse` when `relation` is not a `@HasOne` of `Record`
    ///   (for a belongs-to, filter on its key: `where(\.$group.id != nil)`).
    public consuming func whereExists<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Child?>) -> Query {
        whereExists({ try Self.hasOneAssociation(relation) }, negated: false)
    }

    /// Keeps the owners without a child in the has-one `relation`: `NOT EXISTS (…)`.
    ///
    /// ```swift
    /// let withoutProfile = try User.query().whereNotExists(\.profile).fetch()
    /// ```
    public consuming func whereNotExists<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Child?>) -> Query {
        whereExists({ try Self.hasOneAssociation(relation) }, negated: true)
    }

    /// The has-one `relation` as the owners' queries see it.
    /// - Throws: `.misuse` when it is not a `@HasOne` of `Record`.
    private static func hasOneAssociation<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Child?>) throws -> AssociationDescription<Child> {
        guard let hook = hasOneHook(relation) else {
            throw ActiveRecordError(
                .misuse, "\(relation) is not a @HasOne relation of \(Record.self); for a @BelongsTo, filter on its key (where(\\.$…id != nil))")
        }
        let field = Record().hookSite(hook, as: HasOne<Child>.self).field
        var children = Child.query()
        if let scope = field.scope { children = children.scoped(by: scope) }
        return AssociationDescription(children: children, key: field.keyColumn(for: Record.self))
    }

    /// The hook of the has-one field `relation` names, if it is one: the only `HasOne<Child>`
    /// of the class, or, with several, the one a write through `relation` on a scratch record
    /// changes.
    private static func hasOneHook<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Child?>) -> ModelMapping.Hook? {
        guard let mapping = try? Record.mapping() else { return nil }
        let candidates = mapping.hooks.filter { $0.kind == HasOne<Child>.self }
        guard !candidates.isEmpty else { return nil }
        let scratch = Record()
        scratch.adopt(mapping)
        let probe = Child()
        scratch[keyPath: relation] = probe
        return candidates.first { scratch.hookSite($0, as: HasOne<Child>.self).field.child === probe }
    }
}
