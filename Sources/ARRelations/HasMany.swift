@_spi(Engines) import ARCore
import ARQuery
import Foundation

/// Declares that a model has many children, which hold its id in a foreign
/// key column, `<lowerCamel(Owner)>Id` by default (`Group` → `groupId`).
///
/// ```swift
/// final class Group: Model {
///     @Column var title: String = ""
///     @HasMany(dependency: .destroy) var users: Query<User>
/// }
/// try group.users.add(john)                          // sets john.groupId and saves john
/// try group.users.where("name LIKE 'J%'").fetch()    // ANDed with the relation's own filter
/// try group.users.remove(john)                       // clears john.groupId and saves john
/// ```
///
/// The property is a query over the children. Records added to an unsaved
/// owner are queued, answered by the relation (`fetch()`, `count()`, …) and
/// saved by the owner's `save()`. With `dependency: .destroy`, destroying the
/// owner destroys its children; with `.nullify`, it clears their keys.
@propertyWrapper
public struct HasMany<Child: Model> {
    // Usable from inline, as the initializer is: a model's initializer (run for every record
    // made, each fetched row's included) then sets these in place, with no call.
    @usableFromInline package var pending: [Child] = []
    @usableFromInline package var preloaded: [Child]?
    @usableFromInline package let key: String?
    @usableFromInline package let dependency: Dependency

    /// Declares the relation.
    /// - Parameters:
    ///   - key: the children's foreign key column; default `<lowerCamel(Owner)>Id`.
    ///   - dependency: what destroying the owner does to the children (default: nothing).
    @inlinable
    public init(key: String? = nil, dependency: Dependency = .none) {
        self.key = key
        self.dependency = dependency
    }

    /// The children's query, through the owning record.
    public static subscript<Owner: Model>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Query<Child>>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, HasMany>
    ) -> Query<Child> {
        get {
            let context = HasManyContext(owner: owner, storage: storageKeyPath)
            return context.query().related(by: context)
        }
        set {
            preconditionFailure("\(Owner.self).\(wrappedKeyPath) is a relation: use add(_:) and remove(_:)")
        }
    }

    /// Use the property through its model; this is never called.
    @available(*, unavailable, message: "@HasMany works only on a property of a Model")
    public var wrappedValue: Query<Child> {
        get { fatalError() }
        set { fatalError() }  // swiftlint:disable:this unused_setter_value
    }

    func keyColumn(for owner: Model.Type) -> String { key ?? foreignKey(for: owner) }
}

/// A has-many relation of one owner record.
struct HasManyContext<Owner: Model, Child: Model>: ToManyContext {
    let owner: Owner
    let storage: ReferenceWritableKeyPath<Owner, HasMany<Child>>

    var key: String { owner[keyPath: storage].keyColumn(for: Owner.self) }

    /// `"Child"."<key>" = owner.id`; nothing for an unsaved owner.
    func query() -> Query<Child> {
        guard let id = owner.id else { return Child.query().where("0 = 1") }
        return Child.query().where(key, .equal(id))
    }

    /// Sets the child's key to the owner's id and saves the child.
    func link(_ child: Child) throws {
        do {
            try child.set([key: owner.id])
        } catch let error as ActiveRecordError where error.code == .unknownColumn {
            throw missingKey(key, in: Child.self, for: "\(Owner.self)'s has-many")
        }
        try child.save()
    }

    /// Clears the child's key and saves the child.
    func unlink(_ child: Child) throws {
        try child.set([key: nil])
        try child.save()
    }

    func preload(_ owners: [Model]) throws {
        let owners = ownersOfType(Owner.self, owners)
        let ids = owners.compactMap { $0.id }
        let key = self.key
        // The key's column found once, not by name per child; the buckets hold `Model`, a
        // concrete type (a dictionary of `[Child]` looked up its generic metadata on every
        // child; see Benchmarks/README.md, Hot-path notes).
        let keyIndex = try? Child.mapping().columnIndex(key)
        var children: [Int64: [Model]] = [:]
        for chunk in chunked(ids) {
            // Ordered by key, then id: the key's index gives that order without a sort, and
            // each owner's children come in one run, taken as one slice of the rows (no
            // dictionary look-up, no append, per child).
            let rows = try Child.query().where(key, .in(chunk)).order(by: key).order(by: "id").fetch().asModels
            var run: (key: Int64, start: Int)?
            for index in rows.indices {
                let id: Int64? = if case .integer(let id) = try keyValue(of: rows[index], at: keyIndex, named: key) { id } else { nil }
                if let current = run, current.key == id { continue }
                // A key that is no integer ends the run without starting one: the child is left out.
                if let finished = run { gather(finished.key, rows[finished.start..<index], into: &children) }
                run = id.map { ($0, index) }
            }
            if let finished = run { gather(finished.key, rows[finished.start...], into: &children) }
        }
        for owner in owners where owner.id != nil {
            owner[keyPath: storage].preloaded = (children[owner.id!] ?? []).asRecords(of: Child.self)
        }
    }
}

/// Puts one owner's run of children into `children`: after the earlier ones when the owner
/// has some (not in a query's rows, where each owner's children come in one run).
private func gather(_ key: Int64, _ run: ArraySlice<Model>, into children: inout [Int64: [Model]]) {
    if let earlier = children.removeValue(forKey: key) {
        children[key] = earlier + run
    } else {
        children[key] = Array(run)
    }
}

/// The records of `owners` that are `Owner`s, in order. Records of exactly that class (a
/// query's, always) are taken without a dynamic cast, which cost more than the rest of a
/// preload's per-owner work; a subclass's are cast.
func ownersOfType<Owner: Model>(_ type: Owner.Type, _ owners: [Model]) -> [Owner] {
    var typed: [Owner] = []
    typed.reserveCapacity(owners.count)
    for owner in owners {
        if ObjectIdentifier(Swift.type(of: owner)) == ObjectIdentifier(Owner.self) {
            typed.append(unsafeDowncast(owner, to: Owner.self))
        } else if let owner = owner as? Owner {
            typed.append(owner)
        }
    }
    return typed
}

extension HasMany: RecordHookField {
    package static func hasPendingWork(_ field: HasMany) -> Bool { !field.pending.isEmpty }

    package static func willSave(_ site: HookFieldSite<HasMany>) throws {}

    package static func hasDestroyWork(_ field: HasMany) -> Bool { field.dependency != .none }

    /// Saves the children queued on the unsaved owner, with the owner's new id.
    package static func didSave(_ site: HookFieldSite<HasMany>) throws {
        let record = site.record
        let key = site.field.keyColumn(for: type(of: record))
        let pending = site.field.pending
        for child in pending {
            do {
                try child.set([key: record.id])
            } catch let error as ActiveRecordError where error.code == .unknownColumn {
                throw missingKey(key, in: Child.self, for: "\(type(of: record))'s has-many")
            }
            try saveRelated(child, of: record)
        }
        try site.emptyQueue(saved: pending)
    }

    package static func willDestroy(_ site: HookFieldSite<HasMany>) throws {
        let relation = site.field, record = site.record
        guard let id = record.id else { return }
        let key = relation.keyColumn(for: type(of: record))
        switch relation.dependency {
        case .none:
            return
        case .destroy:
            for child in try Child.query().where(key, .equal(id)).fetch() { try child.destroy() }
        case .nullify:
            let table = try Child.schema()
            guard table.columnIndex(named: key) != nil else { throw missingKey(key, in: Child.self, for: "\(type(of: record))'s has-many") }
            let database = try Database.current
            try database.execute(
                database.dialect.updateSQL(table.name, setting: [.null(key), .bound("updatedAt")], where: [.equals(key)]),
                [.real(Date().timeIntervalSince1970), .integer(id)])
        }
    }
}

extension Query {
    /// Loads a has-many or has-many-through relation for every fetched record
    /// with one more query: `Group.query().includes(\.users)`. Walking the
    /// owners' relations then runs no SQL (until one of them changes).
    public func includes<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Query<Child>>) -> Query {
        preloading { owners in
            guard let first = owners.first else { return }
            guard let context = first[keyPath: relation].relation else {
                throw ActiveRecordError(.misuse, "\(relation) is not a relation of \(Record.self)")
            }
            try context.preload(owners)
        }
    }
}
