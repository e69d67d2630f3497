import ARCore
import ARQuery
import Foundation
import Synchronization

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
/// With `dependency: .destroy`, dropping the record drops its parent too.
@propertyWrapper
public struct BelongsTo<Parent: Model> {
    /// The foreign key column (first, so that reflection can find it).
    package var key: Column<Int64?>
    /// The parent as assigned or loaded.
    package var parent: Parent?
    package let dependency: Dependency

    /// Declares the relation.
    /// - Parameters:
    ///   - key: the foreign key column; default `<lowerCamel(Parent)>Id`.
    ///   - dependency: what dropping this record does to the parent (default: nothing).
    public init(key: String? = nil, dependency: Dependency = .none) {
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
            owner[keyPath: storageKeyPath].parent = newValue
            owner[keyPath: storageKeyPath].key.value = newValue?.id
        }
    }

    /// Use the property through its model; this is never called.
    @available(*, unavailable, message: "@BelongsTo works only on a property of a Model")
    public var wrappedValue: Parent? {
        get { fatalError() }
        set { fatalError() }  // swiftlint:disable:this unused_setter_value
    }
}

extension BelongsTo: EmbeddedColumnField {
    package static var embeddedColumn: (offset: Int, kind: any ColumnField.Type) {
        (MemoryLayout<BelongsTo>.offset(of: \BelongsTo.key)!, Column<Int64?>.self)
    }

    package static var defaultColumnName: String? { foreignKey(for: Parent.self) }
}

extension BelongsTo: RecordHookField {
    private static func field(_ pointer: UnsafeRawPointer) -> BelongsTo {
        pointer.assumingMemoryBound(to: BelongsTo.self).pointee
    }

    package static func hasPendingWork(_ field: UnsafeRawPointer) -> Bool {
        guard let parent = self.field(field).parent else { return false }
        return parent.id == nil
    }

    package static func willSave(_ field: UnsafeMutableRawPointer, of record: Model) throws {
        let pointer = field.assumingMemoryBound(to: BelongsTo.self)
        guard let parent = pointer.pointee.parent, parent.id == nil else { return }
        try saveRelated(parent, of: record)
        pointer.pointee.key.value = parent.id
    }

    package static func didSave(_ field: UnsafeMutableRawPointer, of record: Model) throws {}

    package static func willDrop(_ field: UnsafeMutableRawPointer, of record: Model) throws {
        let relation = self.field(field)
        guard relation.dependency == .destroy, let id = relation.key.original ?? relation.key.value,
              let parent = try Parent.find(id) else { return }
        try parent.drop()
    }
}

extension Query {
    /// Loads a belongs-to relation for every fetched record with one more
    /// query: `User.query().includes(\.group)`.
    public func includes<Parent: Model>(_ relation: ReferenceWritableKeyPath<Record, Parent?>) -> Query {
        preloading { owners in
            guard !owners.isEmpty else { return }
            let (key, offset) = try BelongsToKeys.field(of: relation)
            var ids: [Int64] = []
            for owner in owners { if case .integer(let id) = try owner.value(of: key) { ids.append(id) } }
            var parents: [Int64: Parent] = [:]
            for chunk in chunked(Array(Set(ids))) {
                for parent in try Parent.query().where("id", .in(chunk)).fetch() { parents[parent.id!] = parent }
            }
            for owner in owners {
                guard case .integer(let id) = try owner.value(of: key), let parent = parents[id] else { continue }
                // Write the relation's storage directly: assigning through the key path
                // would read (and lazily load) the parent first.
                let field = Unmanaged.passUnretained(owner).toOpaque() + offset
                field.assumingMemoryBound(to: BelongsTo<Parent>.self).pointee.parent = parent
            }
        }
    }
}

/// Splits values into lists short enough to bind in one `IN`.
func chunked<T>(_ values: [T], size: Int = 10_000) -> [[T]] {
    stride(from: 0, to: values.count, by: size).map { Array(values[$0..<Swift.min($0 + size, values.count)]) }
}

/// Finds which belongs-to field a key path names, by assigning a probe parent on a scratch record.
enum BelongsToKeys {
    /// Key paths as dictionary keys. `@unchecked Sendable`: key paths are immutable objects.
    private struct Key: Hashable, @unchecked Sendable { let keyPath: AnyKeyPath }
    private static let cache = Mutex<[Key: (column: String, offset: Int)]>([:])

    /// The key column and the field's offset inside the record.
    static func field<Owner: Model, Parent: Model>(
        of relation: ReferenceWritableKeyPath<Owner, Parent?>
    ) throws -> (column: String, offset: Int) {
        if let found = cache.withLock({ $0[Key(keyPath: relation)] }) { return found }
        let mapping = try Owner.mapping()
        let owner = Owner()
        let probe = Parent()
        probe.header.id = Int64.min + 7
        owner[keyPath: relation] = probe
        let base = Unmanaged.passUnretained(owner).toOpaque()
        for hook in mapping.hooks where hook.kind == BelongsTo<Parent>.self {
            let field = (base + hook.offset).assumingMemoryBound(to: BelongsTo<Parent>.self).pointee
            if field.key.value == Int64.min + 7 {
                let found = (field.key.name ?? foreignKey(for: Parent.self), hook.offset)
                cache.withLock { $0[Key(keyPath: relation)] = found }
                return found
            }
        }
        throw ActiveRecordError(.misuse, "\(relation) is not a @BelongsTo relation of \(Owner.self)")
    }
}
