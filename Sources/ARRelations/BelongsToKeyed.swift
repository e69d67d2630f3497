@_spi(Engines) import ARCore
import ARQuery
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A belongs-to relation to a parent keyed by a `UUID` (``BelongsToUUID``) or a `String`
/// (``BelongsToString``) column (see `PrimaryKey`): the foreign key column holds the
/// parent's key, of its type, and `REFERENCES "Parent"("<key>")`.
///
/// ```swift
/// final class Reading: Model {
///     @Column var celsius: Double = 0
///     @BelongsToUUID var device: Device?                       // column "deviceId", a UUID
///     @BelongsToString(key: "countryCode") var country: Country?
/// }
/// reading.device = phone          // sets deviceId (at the next save if `phone` is unsaved)
/// reading.$device.id              // the UUID, without loading the device
/// ```
///
/// It behaves as ``BelongsTo`` does (lazy loading, an unsaved parent saved first, `.destroy`
/// dependency, `includes`); ``BelongsTo`` stays the relation to a parent with an integer key,
/// its key an `Int64?` column read in place.
@propertyWrapper
public struct BelongsToKeyed<Parent: Model, Key: ColumnValue & Hashable & Sendable> {
    /// The foreign key column (first, so that reflection can find it).
    @usableFromInline package var key: Column<Key?>
    /// The parent as assigned or loaded.
    @usableFromInline package var parent: Parent?
    @usableFromInline package let dependency: BelongsToDependency

    /// Declares the relation.
    /// - Parameters:
    ///   - key: the foreign key column; default `<lowerCamel(Parent)>Id`.
    ///   - dependency: what destroying this record does to the parent (default: nothing).
    @inlinable
    public init(key: String? = nil, dependency: BelongsToDependency = .none) {
        self.key = Column(wrappedValue: nil, key, index: .index)
        self.dependency = dependency
    }

    /// The parent, through the owning record.
    public static subscript<Owner: Model>(
        _enclosingInstance owner: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Parent?>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, BelongsToKeyed>
    ) -> Parent? {
        get {
            let field = owner[keyPath: storageKeyPath]
            if let parent = field.parent, parent.isNewRecord || Self.key(of: parent) == field.key.value { return parent }
            guard let key = field.key.value else { return nil }
            let loaded = try? Parent.find(key: key)
            owner[keyPath: storageKeyPath].parent = loaded
            return loaded
        }
        set {
            owner.captureOriginals()
            owner[keyPath: storageKeyPath].parent = newValue
            owner[keyPath: storageKeyPath].key.value = newValue.flatMap { Self.key(of: $0) }
        }
    }

    /// The relation's key, `reading.$device`: its ``BelongsToKeyValue/id`` is the foreign key
    /// column's value. Setting it changes the key (at the next save), and the parent follows.
    public static subscript<Owner: Model>(
        _enclosingInstance owner: Owner,
        projected projectedKeyPath: ReferenceWritableKeyPath<Owner, BelongsToKeyValue<Key>>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, BelongsToKeyed>
    ) -> BelongsToKeyValue<Key> {
        get { owner[keyPath: storageKeyPath].projectedValue }
        set {
            owner.captureOriginals()
            owner[keyPath: storageKeyPath].projectedValue = newValue
        }
    }

    /// The relation's key (`subscript(_enclosingInstance:projected:storage:)` on a model).
    public var projectedValue: BelongsToKeyValue<Key> {
        get { BelongsToKeyValue(id: key.value) }
        set {
            if newValue.id == nil || parent.flatMap({ Self.key(of: $0) }) != newValue.id { parent = nil }
            key.value = newValue.id
        }
    }

    /// Use the property through its model; this is never called.
    @available(*, unavailable, message: "@BelongsToUUID and @BelongsToString work only on a property of a Model")
    public var wrappedValue: Parent? {
        get { fatalError() }
        set { fatalError() }  // swiftlint:disable:this unused_setter_value
    }

    /// The parent's key as `Key`; `nil` while it has none.
    static func key(of parent: Parent) -> Key? {
        let value = parent.primaryKeyValue
        return value.isNull ? nil : try? Key.fromSQL(value)
    }
}

/// A belongs-to relation to a parent keyed by a `UUID` column.
///
/// ```swift
/// @BelongsToUUID var device: Device?       // column "deviceId" holds the device's UUID
/// ```
public typealias BelongsToUUID<Parent: Model> = BelongsToKeyed<Parent, UUID>

/// A belongs-to relation to a parent keyed by a `String` column.
///
/// ```swift
/// @BelongsToString(key: "countryCode") var country: Country?
/// ```
public typealias BelongsToString<Parent: Model> = BelongsToKeyed<Parent, String>

/// The key of a ``BelongsToKeyed`` relation, its projected value (`reading.$device`): the
/// parent's key as the foreign key column holds it, without loading the parent.
public struct BelongsToKeyValue<Key: Hashable & Sendable>: Sendable, Hashable {
    /// The parent's key; `nil` for no parent (or a parent assigned but not saved yet).
    public var id: Key?
}

extension BelongsToKeyed: EmbeddedColumnField {
    package static var embeddedColumn: WritableKeyPath<BelongsToKeyed, Column<Key?>> { \.key }

    package static var defaultColumnName: String? { foreignKey(for: Parent.self) }

    package static var referencedModel: Model.Type? { Parent.self }
}

extension BelongsToKeyed: RecordHookField {
    package static func hasPendingWork(_ field: BelongsToKeyed) -> Bool {
        guard let parent = field.parent else { return false }
        return parent.isNewRecord
    }

    /// Saves an unsaved parent first (a UUID key is made then), then sets the key to its key.
    package static func willSave(_ site: HookFieldSite<BelongsToKeyed>) throws {
        guard let parent = site.field.parent, parent.isNewRecord else { return }
        try saveRelated(parent, of: site.record)
        site.record.captureOriginals()
        site.modify { $0.key.value = key(of: parent) }
    }

    package static func didSave(_ site: HookFieldSite<BelongsToKeyed>) throws {}

    package static func hasDestroyWork(_ field: BelongsToKeyed) -> Bool { field.dependency == .destroy }

    package static func willDestroy(_ site: HookFieldSite<BelongsToKeyed>) throws {
        let relation = site.field
        guard relation.dependency == .destroy, let key = site.originalKey(Key.self) ?? relation.key.value,
              let parent = try Parent.find(key: key) else { return }
        try parent.destroy()
    }
}

/// `includes(_:)` of a ``BelongsToKeyed`` relation (column `index`, field `hook`): the parents
/// of every owner with one more query per 10,000 keys.
func preloadKeyedParents<Parent: Model, Key: ColumnValue & Hashable & Sendable>(
    _ owners: [Model], column index: Int, hook: ModelMapping.Hook, parent: Parent.Type, key: Key.Type
) throws {
    var keys = Set<Key>()
    for owner in owners {
        if let key = try? Key.fromSQL(owner.currentValue(index)) { keys.insert(key) }
    }
    var parents: [DatabaseValue: Parent] = [:]
    let keyName = try Parent.mapping().table.schema.primaryKey.name
    for chunk in chunked(Array(keys)) {
        for parent in try Parent.query().where(keyName, .in(chunk)).fetch() { parents[parent.primaryKeyValue] = parent }
    }
    for owner in owners {
        guard let parent = parents[try owner.currentValue(index)] else { continue }
        // Into the relation's storage: assigning through the key path would load the parent first.
        owner.hookSite(hook, as: BelongsToKeyed<Parent, Key>.self).modify { $0.parent = parent }
    }
}
