@_spi(Engines) import ARCore
import ARQuery

/// Declares a many-to-many relation through a join model that holds both
/// keys: `<lowerCamel(Owner)>Id` and `<lowerCamel(Child)>Id` by default.
///
/// ```swift
/// final class UserProject: Model {                    // the join model
///     @BelongsTo var user: User?
///     @BelongsTo var project: Project?
/// }
/// final class User: Model {
///     @HasManyThrough(UserProject.self, dependency: .nullify) var projects: Query<Project>
/// }
/// final class Project: Model {
///     @HasManyThrough(UserProject.self, dependency: .destroy) var users: Query<User>
/// }
/// try alex.projects.add(swift)      // one join row, even when added twice
/// try alex.projects.remove(swift)   // deletes the join row
/// ```
///
/// With `dependency: .destroy`, destroying the owner destroys the related records
/// and the join rows; with `.nullify`, only the join rows.
@propertyWrapper
public struct HasManyThrough<Child: Model, Join: Model> {
    package var pending: [Child] = []
    package var preloaded: [Child]?
    package let ownerKey: String?
    package let childKey: String?
    package let dependency: Dependency

    /// Declares the relation.
    /// - Parameters:
    ///   - join: the join model.
    ///   - ownerKey: the join model's column holding the owner's id; default `<lowerCamel(Owner)>Id`.
    ///   - childKey: the join model's column holding the child's id; default `<lowerCamel(Child)>Id`.
    ///   - dependency: what destroying the owner does (default: nothing).
    public init(_ join: Join.Type, ownerKey: String? = nil, childKey: String? = nil, dependency: Dependency = .none) {
        self.ownerKey = ownerKey
        self.childKey = childKey
        self.dependency = dependency
    }

    /// The related records' query, through the owning record.
    public static subscript<Owner: Model>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Query<Child>>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, HasManyThrough>
    ) -> Query<Child> {
        get {
            let context = ThroughContext(owner: owner, storage: storageKeyPath)
            return context.query().related(by: context)
        }
        set {
            preconditionFailure("\(Owner.self).\(wrappedKeyPath) is a relation: use add(_:) and remove(_:)")
        }
    }

    /// Use the property through its model; this is never called.
    @available(*, unavailable, message: "@HasManyThrough works only on a property of a Model")
    public var wrappedValue: Query<Child> {
        get { fatalError() }
        set { fatalError() }  // swiftlint:disable:this unused_setter_value
    }

    func keys(for owner: Model.Type) -> (owner: String, child: String) {
        (ownerKey ?? foreignKey(for: owner), childKey ?? foreignKey(for: Child.self))
    }
}

/// The join-table work of a has-many-through relation, shared by the context and the hooks.
struct ThroughJoin<Child: Model, Join: Model> {
    let ownerKey: String
    let childKey: String
    let ownerType: Model.Type

    /// The join table's name (the dialect quotes it).
    private var tableName: String { get throws { try Join.schema().name } }

    private func checkKeys() throws {
        let schema = try Join.schema()
        for key in [ownerKey, childKey] where schema.columnIndex(named: key) == nil {
            throw missingKey(key, in: Join.self, for: "\(ownerType)'s has-many-through")
        }
    }

    /// The owner's related records.
    func query(ownerID: Int64) -> Query<Child> {
        Child.query().join(Join.self, .inner, on: "id", childKey)
            .where("\(quoteIdentifier(ModelMapping.modelName(Join.self))).\(quoteIdentifier(ownerKey)) = ?", ownerID)
            .distinct()
    }

    /// Saves the child if needed and creates the join row unless the pair exists.
    func link(ownerID: Int64, _ child: Child, owner: Model? = nil) throws {
        try checkKeys()
        try Database.current.transaction {
            if child.id == nil {
                if let owner { try saveRelated(child, of: owner) } else { try child.save() }
            }
            guard let childID = child.id else { return }
            let exists = try Join.query().where(ownerKey, .equal(ownerID)).where(childKey, .equal(childID)).exists()
            if !exists { try Join.create([ownerKey: ownerID, childKey: childID]) }
        }
    }

    /// Deletes the join rows of the pair.
    func unlink(ownerID: Int64, childID: Int64) throws {
        try checkKeys()
        let database = try Database.current
        try database.execute(
            database.dialect.deleteSQL(from: try tableName, where: [.equals(ownerKey), .equals(childKey)]), [.integer(ownerID), .integer(childID)])
    }

    /// Deletes every join row of the owner.
    func unlinkAll(ownerID: Int64) throws {
        try checkKeys()
        let database = try Database.current
        try database.execute(database.dialect.deleteSQL(from: try tableName, where: [.equals(ownerKey)]), [.integer(ownerID)])
    }
}

/// A has-many-through relation of one owner record.
struct ThroughContext<Owner: Model, Child: Model, Join: Model>: ToManyContext {
    let owner: Owner
    let storage: ReferenceWritableKeyPath<Owner, HasManyThrough<Child, Join>>

    var join: ThroughJoin<Child, Join> {
        let keys = owner[keyPath: storage].keys(for: Owner.self)
        return ThroughJoin(ownerKey: keys.owner, childKey: keys.child, ownerType: Owner.self)
    }

    func query() -> Query<Child> {
        guard let id = owner.id else { return Child.query().where("0 = 1") }
        return join.query(ownerID: id)
    }

    /// Saves the child if needed and creates the join row unless the pair exists.
    func link(_ child: Child) throws {
        guard let id = owner.id else { return }
        try join.link(ownerID: id, child)
    }

    /// Deletes the join row (an unsaved child has none).
    func unlink(_ child: Child) throws {
        guard let id = owner.id, let childID = child.id else { return }
        try join.unlink(ownerID: id, childID: childID)
    }

    func preload(_ owners: [Model]) throws {
        let owners = ownersOfType(Owner.self, owners)
        let join = self.join
        // As `HasMany`'s preload: the key's column found once, buckets of a concrete type.
        let keyIndex = try? Join.mapping().columnIndex(join.ownerKey)
        var children: [Int64: [Model]] = [:]
        let joinName = ModelMapping.modelName(Join.self)
        let owner = "\(quoteIdentifier(joinName)).\(quoteIdentifier(join.ownerKey))"
        for chunk in chunked(owners.compactMap { $0.id }) {
            // A condition in code: its list is bound as one parameter (one statement for
            // every chunk's length).
            let rows = try Child.query().join(Join.self, .inner, on: "id", join.childKey)
                .where(column: join.ownerKey, of: joinName, .in(chunk)).order(by: owner).order(by: "id")
                .fetchJoined(Join.self)
            for case let (child?, joinRow?) in rows {
                if case .integer(let id) = try keyValue(of: joinRow, at: keyIndex, named: join.ownerKey) {
                    children[id, default: []].append(child)
                }
            }
        }
        for owner in owners where owner.id != nil {
            owner[keyPath: storage].preloaded = (children[owner.id!] ?? []).asRecords(of: Child.self)
        }
    }
}

extension HasManyThrough: RecordHookField {
    private static func join(_ relation: HasManyThrough, _ record: Model) -> ThroughJoin<Child, Join> {
        let keys = relation.keys(for: type(of: record))
        return ThroughJoin(ownerKey: keys.owner, childKey: keys.child, ownerType: type(of: record))
    }

    package static func hasPendingWork(_ field: HasManyThrough) -> Bool { !field.pending.isEmpty }

    package static func willSave(_ site: HookFieldSite<HasManyThrough>) throws {}

    package static func hasDestroyWork(_ field: HasManyThrough) -> Bool { field.dependency != .none }

    /// Links the records queued on the unsaved owner (saving them if needed).
    package static func didSave(_ site: HookFieldSite<HasManyThrough>) throws {
        let record = site.record
        guard let id = record.id else { return }
        let join = join(site.field, record)
        let pending = site.field.pending
        for child in pending { try join.link(ownerID: id, child, owner: record) }
        try site.emptyQueue(saved: pending)
    }

    package static func willDestroy(_ site: HookFieldSite<HasManyThrough>) throws {
        let relation = site.field, record = site.record
        guard let id = record.id, relation.dependency != .none else { return }
        let join = join(relation, record)
        if relation.dependency == .destroy {
            for child in try join.query(ownerID: id).fetch() { try child.destroy() }
        }
        try join.unlinkAll(ownerID: id)
    }
}
