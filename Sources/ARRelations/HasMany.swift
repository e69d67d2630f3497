@_spi(Engines) import ARCore
import ARQuery
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
///
/// A scoped relation has a fixed condition and order, as Rails' `has_many :adults, -> { … }`:
///
/// ```swift
/// @HasMany(scope: { $0.where(\.age >= 18).order(by: \.name) }) var adults: Query<User>
/// ```
/// Reading it, eager loading it (`includes(\.adults)`), its dependency and the owners'
/// queries about it (`withCount(\.adults)`, `whereExists(\.adults)`) all keep to the scope.
@propertyWrapper
public struct HasMany<Child: Model> {
    // Usable from inline, as the initializer is: a model's initializer (run for every record
    // made, each fetched row's included) then sets these in place, with no call.
    @usableFromInline package var pending: [Child] = []
    @usableFromInline package var preloaded: [Child]?
    @usableFromInline package let key: String?
    @usableFromInline package let dependency: Dependency
    /// The scope: conditions and orderings every query of the relation adds (`nil`: none).
    @usableFromInline package let scope: ((Query<Child>) -> Query<Child>)?

    /// Declares the relation.
    /// - Parameters:
    ///   - key: the children's foreign key column; default `<lowerCamel(Owner)>Id`.
    ///   - dependency: what destroying the owner does to the children (default: nothing);
    ///     with a scope, to the children in the scope.
    ///   - scope: conditions and orderings of the relation's children, applied to the
    ///     children's query: `{ $0.where(\.age >= 18).order(by: \.name) }`. It runs each time
    ///     the relation is queried (a date in it is current). A scope that limits, joins or
    ///     groups makes the relation's queries throw `.misuse`.
    @inlinable
    public init(key: String? = nil, dependency: Dependency = .none, scope: ((Query<Child>) -> Query<Child>)? = nil) {
        self.key = key
        self.dependency = dependency
        self.scope = scope
    }

    /// The children's query, through the owning record.
    public static subscript<Owner: Model>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Query<Child>>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, HasMany>
    ) -> Query<Child> {
        get { HasManyContext(owner: owner, storage: storageKeyPath).query() }
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
    /// The property's plan (``HasManyPlan``), when it found the field in the owner and its key
    /// is the owner's: then the field is read at its offset and the key's condition is made
    /// once. `nil`: both through ``storage``, per call.
    let plan: HasManyPlan?

    init(owner: Owner, storage: ReferenceWritableKeyPath<Owner, HasMany<Child>>) {
        self.owner = owner
        self.storage = storage
        let plan = HasManyPlan.of(storage, owner: owner)
        if let offset = plan.offset, plan.fits(withHasManyField(of: owner, at: offset, { $0.key })) {
            self.plan = plan
        } else {
            self.plan = nil
        }
    }

    var key: String { plan?.key ?? owner[keyPath: storage].keyColumn(for: Owner.self) }

    /// The relation's query: `"Child"."<key>" = owner.id`, nothing for an unsaved owner;
    /// answering from memory while unchanged (queued or eager-loaded children).
    func query() -> Query<Child> {
        guard let id = owner.id else { return Child.query().where("0 = 1").related(by: self) }
        // An owner keyed by a UUID or String column (its header's id is 0): by that key.
        let keyed = id == 0 ? keyedOwnerValue(owner) : nil
        let scope = owner[keyPath: storage].scope
        if keyed == nil, let plan { return Query(relation: self, where: plan.condition, equals: id) }
        // No plan for a scoped relation (see `HasManyPlan.of`): its scope is read here.
        let children = keyed.map { Child.query().where(key, .equal($0)) } ?? Child.query().where(key, .equal(id))
        guard let scope else { return children.related(by: self) }
        return children.scoped(by: scope).related(by: self)
    }

    /// The children queued (unsaved owner) or eager-loaded (saved owner), if any.
    func recordsInMemory<Record: Model>(as type: Record.Type) -> [Record]? {
        if let offset = plan?.offset {
            // As `Model`s, cast once: the relation's own query asks (`Record` is `Child`), and
            // a generic cast of the array, or `map` on the optional, looked up metadata per call.
            guard let records = withHasManyField(of: owner, at: offset, { owner.id == nil ? $0.pending : $0.preloaded }) else {
                return nil
            }
            return Record.self == Child.self ? records.asRecords(of: Record.self) : castRecords(records.asRecords(of: Child.self))
        }
        let records = owner.id == nil ? owner[keyPath: storage].pending : owner[keyPath: storage].preloaded
        return records.map { castRecords($0) }
    }

    /// Sets the child's key to the owner's id and saves the child.
    func link(_ child: Child) throws {
        let key = self.key
        do {
            try child.set([key: ownerLinkValue(owner)])
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
        if !Owner.primaryKey.isAutoincrement { return try preloadKeyed(owners) }
        let owners = ownersOfType(Owner.self, owners)
        var ids: [Int64] = []
        ids.reserveCapacity(owners.count)
        for owner in owners { if let id = owner.id { ids.append(id) } }
        let key = self.key
        // The key's column found once, not by name per child; the buckets hold `Model`, a
        // concrete type (a dictionary of `[Child]` looked up its generic metadata on every
        // child; see Benchmarks/README.md, Hot-path notes).
        let keyReader = ChildKeyReader(Child.self, key: key)
        let condition = plan?.condition ?? RelationKeyCondition(column: key)
        var children: [Int64: [Model]] = [:]
        for chunk in chunked(ids) {
            // Ordered by key, then id: the key's index gives that order without a sort, and
            // each owner's children come in one run of the rows (no dictionary look-up, no
            // append, per child).
            var query = Child.query().where(condition, in: chunk).order(by: key)
            if plan == nil, let scope = owner[keyPath: storage].scope { query = query.scoped(by: scope) }
            var rows = try query.order(by: "id").fetch().asModels
            var runs: [(key: Int64, range: Range<Int>)] = []
            var run: (key: Int64, start: Int)?
            for index in rows.indices {
                let id = try keyReader.key(in: rows, at: index)
                if let current = run, current.key == id { continue }
                // A key that is no integer ends the run without starting one: the child is left out.
                if let finished = run { runs.append((finished.key, finished.start..<index)) }
                run = id.map { ($0, index) }
            }
            if let finished = run { runs.append((finished.key, finished.start..<rows.count)) }
            // Each run moved out of the rows, from the last (`removeLast(taking:)` hands the
            // references over). The keys of one chunk's runs differ: their order does not matter.
            for run in runs.reversed() {
                if rows.count > run.range.upperBound { rows.removeSubrange(run.range.upperBound...) }
                gather(run.key, rows.removeLast(taking: run.range.count), into: &children)
            }
        }
        if let offset = plan?.offset {
            // Into each owner's field at its offset: through the key path, each write cost
            // more than the rest of the owner's share of the preload.
            for owner in owners {
                guard let id = owner.id else { continue }
                let loaded = children[id] ?? []
                withHasManyField(of: owner, at: offset) { $0.preloaded = loaded }
            }
            return
        }
        for owner in owners where owner.id != nil {
            owner[keyPath: storage].preloaded = (children[owner.id!] ?? []).asRecords(of: Child.self)
        }
    }
}

/// How a preload reads each child's key: in place when the key column is an `Int64` (a
/// `@BelongsTo` key is), else as a database value, by the column's index when it was found
/// (a look-up by name per child costs a dictionary search), else by name.
struct ChildKeyReader {
    private let key: String
    private let index: Int?
    private let integer: IntegerColumnReader?

    init(_ child: Model.Type, key: String) {
        self.key = key
        let mapping = try? child.mapping()
        let index = try? mapping?.columnIndex(key)
        self.index = index
        integer = mapping.flatMap { mapping in index.flatMap { IntegerColumnReader(mapping, column: $0) } }
    }

    /// The key of `rows[position]`, `nil` when it holds no integer: one of the preload's rows,
    /// a record of the class this reader was made for.
    @inline(__always)
    func key(in rows: [Model], at position: Int) throws -> Int64? {
        if let integer { return integer.value(in: rows, at: position) }
        if case .integer(let id) = try keyValue(of: rows[position], at: index, named: key) { return id }
        return nil
    }
}

/// Puts one owner's run of children into `children`: after the earlier ones when the owner
/// has some (not in a query's rows, where each owner's children come in one run).
private func gather(_ key: Int64, _ run: [Model], into children: inout [Int64: [Model]]) {
    if let earlier = children.removeValue(forKey: key) {
        children[key] = earlier + run
    } else {
        children[key] = run
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
            try saveChild(child, key: key, of: record, for: "\(type(of: record))'s has-many")
        }
        try site.emptyQueue(saved: pending)
    }

    package static func willDestroy(_ site: HookFieldSite<HasMany>) throws {
        let relation = site.field, record = site.record
        guard let id = record.id else { return }
        try applyDependency(
            relation.dependency, toChildrenOf: id == 0 ? keyedOwnerValue(record) ?? id : id,
            key: relation.keyColumn(for: type(of: record)), scope: relation.scope, for: "\(type(of: record))'s has-many")
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

extension HasManyContext {
    /// ``preload(_:)`` of owners keyed by a `UUID` or `String` column: their children by that
    /// key, one query per 10,000 owners, each owner's in key then child order.
    func preloadKeyed(_ owners: [Model]) throws {
        let owners = ownersOfType(Owner.self, owners)
        let keys = owners.compactMap { $0.id == nil ? nil : $0.primaryKeyValue.keyText }
        let key = self.key
        let index = try Child.mapping().columnIndex(key)
        var children: [DatabaseValue: [Model]] = [:]
        for chunk in chunked(keys) {
            // A UUID key compared as a UUID (PostgreSQL's `uuid` column), a String as text.
            let condition: FieldCondition = Owner.primaryKey.kind == .uuid ? .in(chunk.compactMap(UUID.init(uuidString:))) : .in(chunk)
            let rows = try Child.query().where(key, condition).order(by: key).order(by: "id").fetch()
            for row in rows { children[try row.currentValue(index), default: []].append(row) }
        }
        for owner in owners {
            guard keyedOwnerValue(owner) != nil else { continue }
            owner[keyPath: storage].preloaded = (children[owner.primaryKeyValue] ?? []).asRecords(of: Child.self)
        }
    }
}

extension DatabaseValue {
    /// The text a UUID or String key holds (`nil` for another value).
    var keyText: String? {
        if case .text(let text) = self { return text }
        return nil
    }
}

/// The key of an owner keyed by a `UUID` or `String` column, as a value a child's foreign key
/// column takes; `nil` for an owner with an integer key, or none yet.
func keyedOwnerValue(_ owner: Model) -> (any ColumnValue)? {
    let kind = type(of: owner).primaryKey.kind
    guard kind != .autoincrement, owner.id != nil, case .text(let text) = owner.primaryKeyValue else { return nil }
    return kind == .uuid ? UUID(uuidString: text) : text
}

/// What a child's key column takes to point at `owner`: its key (``keyedOwnerValue(_:)``), or
/// its id.
func ownerLinkValue(_ owner: Model) -> (any ColumnValue)? {
    if owner.id == 0, let keyed = keyedOwnerValue(owner) { return keyed }
    return owner.id
}
