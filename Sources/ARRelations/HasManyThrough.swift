@_spi(Engines) import ARCore
import ARQuery
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
        Child.query().join(Join.self, .inner, on: childColumn, childKey)
            .where("\(quoteIdentifier(ModelMapping.modelName(Join.self))).\(quoteIdentifier(ownerKey)) = ?", ownerID)
            .distinct()
    }

    /// The related records of an owner keyed by a `UUID` or `String` (``keyedOwnerValue(_:)``).
    func query(ownerKeyValue: any ColumnValue) -> Query<Child> {
        Child.query().join(Join.self, .inner, on: childColumn, childKey)
            .where(column: ownerKey, of: ModelMapping.modelName(Join.self), .equal(ownerKeyValue))
            .distinct()
    }

    /// The child's column the join model's ``childKey`` holds: `id`, or the column of a
    /// `UUID` or `String` key.
    var childColumn: String { throughKeyColumn(of: Child.self) }

    /// Saves the child if needed and creates the join row unless the pair exists.
    /// `ownerID` is the owner's id, or the key of an owner keyed by a `UUID` or `String`.
    func link(ownerID: any ColumnValue, _ child: Child, owner: Model? = nil) throws {
        try checkKeys()
        try Database.current.transaction {
            if child.id == nil {
                if let owner { try saveRelated(child, of: owner) } else { try child.save() }
            }
            guard let childID = ownerLinkValue(child) else { return }
            let exists = try Join.query().where(ownerKey, .equal(ownerID)).where(childKey, .equal(childID)).exists()
            if !exists { try Join.create([ownerKey: ownerID, childKey: childID]) }
        }
    }

    /// Deletes the join rows of the pair (ids, or the keys of models keyed by a `UUID` or `String`).
    func unlink(ownerID: any ColumnValue, childID: any ColumnValue) throws {
        try checkKeys()
        let database = try Database.current
        try database.execute(
            database.dialect.deleteSQL(from: try tableName, where: [.equals(ownerKey), .equals(childKey)]),
            [try ownerID.toSQL(), try childID.toSQL()])
    }

    /// Deletes every join row of the owner (its id, or its `UUID` or `String` key).
    func unlinkAll(ownerID: any ColumnValue) throws {
        try checkKeys()
        let database = try Database.current
        try database.execute(database.dialect.deleteSQL(from: try tableName, where: [.equals(ownerKey)]), [try ownerID.toSQL()])
    }

    /// The owner's related records, whatever its key (``ownerLinkValue(_:)``).
    func query(owner value: any ColumnValue) -> Query<Child> {
        if let id = value as? Int64 { return query(ownerID: id) }
        return query(ownerKeyValue: value)
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
        // An owner keyed by a UUID or String column (its header's id is 0): by that key.
        if id == 0, let keyed = keyedOwnerValue(owner) { return join.query(ownerKeyValue: keyed) }
        return join.query(ownerID: id)
    }

    /// Saves the child if needed and creates the join row unless the pair exists.
    func link(_ child: Child) throws {
        guard let id = ownerLinkValue(owner) else { return }
        try join.link(ownerID: id, child)
    }

    /// Deletes the join row (an unsaved child has none).
    func unlink(_ child: Child) throws {
        guard let id = ownerLinkValue(owner), let childID = ownerLinkValue(child) else { return }
        try join.unlink(ownerID: id, childID: childID)
    }

    func preload(_ owners: [Model]) throws {
        if !Owner.primaryKey.isAutoincrement { return try preloadKeyed(owners) }
        let owners = ownersOfType(Owner.self, owners)
        let join = self.join
        // As `HasMany`'s preload: the key's column found once, buckets of a concrete type.
        let keyIndex = try? Join.mapping().columnIndex(join.ownerKey)
        var children: [Int64: [Model]] = [:]
        let joinName = ModelMapping.modelName(Join.self)
        let owner = "\(quoteIdentifier(joinName)).\(quoteIdentifier(join.ownerKey))"
        let childColumn = join.childColumn
        for chunk in chunked(owners.compactMap { $0.id }) {
            // A condition in code: its list is bound as one parameter (one statement for
            // every chunk's length).
            let rows = try Child.query().join(Join.self, .inner, on: childColumn, join.childKey)
                .where(column: join.ownerKey, of: joinName, .in(chunk)).order(by: owner).order(by: childColumn)
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
        guard let id = ownerLinkValue(record) else { return }
        let join = join(site.field, record)
        let pending = site.field.pending
        for child in pending { try join.link(ownerID: id, child, owner: record) }
        try site.emptyQueue(saved: pending)
    }

    package static func willDestroy(_ site: HookFieldSite<HasManyThrough>) throws {
        let relation = site.field, record = site.record
        guard relation.dependency != .none, let id = ownerLinkValue(record) else { return }
        let join = join(relation, record)
        if relation.dependency == .destroy {
            for child in try join.query(owner: id).fetch() { try child.destroy() }
        }
        try join.unlinkAll(ownerID: id)
    }
}

extension ThroughContext {
    /// ``preload(_:)`` of owners keyed by a `UUID` or `String` column: the related records by
    /// the join rows holding that key, one query per 10,000 owners, each owner's in key then
    /// child order.
    func preloadKeyed(_ owners: [Model]) throws {
        let owners = ownersOfType(Owner.self, owners)
        let join = self.join
        let keyIndex = try Join.mapping().columnIndex(join.ownerKey)
        let joinName = ModelMapping.modelName(Join.self)
        let ownerColumn = "\(quoteIdentifier(joinName)).\(quoteIdentifier(join.ownerKey))"
        let keys = owners.compactMap { $0.id == nil ? nil : $0.primaryKeyValue.keyText }
        var children: [DatabaseValue: [Model]] = [:]
        for chunk in chunked(keys) {
            // A UUID key compared as a UUID (PostgreSQL's `uuid` column), a String as text.
            let condition: FieldCondition = Owner.primaryKey.kind == .uuid ? .in(chunk.compactMap(UUID.init(uuidString:))) : .in(chunk)
            let rows = try Child.query().join(Join.self, .inner, on: join.childColumn, join.childKey)
                .where(column: join.ownerKey, of: joinName, condition).order(by: ownerColumn).order(by: join.childColumn)
                .fetchJoined(Join.self)
            for case let (child?, joinRow?) in rows {
                children[try joinRow.currentValue(keyIndex), default: []].append(child)
            }
        }
        for owner in owners where keyedOwnerValue(owner) != nil {
            owner[keyPath: storage].preloaded = (children[owner.primaryKeyValue] ?? []).asRecords(of: Child.self)
        }
    }
}

/// The column of `model` a relation's foreign key points at: `id`, or the column of a `UUID`
/// or `String` key.
func throughKeyColumn(of model: Model.Type) -> String {
    let key = model.primaryKey
    return key.isAutoincrement ? "id" : key.name
}
