@_spi(Engines) import ARCore
import ARQuery

/// What a to-many relation keeps inside its owner: records queued while the
/// owner is unsaved, and records loaded eagerly.
protocol ToManyStorage {
    associatedtype Child: Model
    var pending: [Child] { get set }
    var preloaded: [Child]? { get set }
}

extension HasMany: ToManyStorage {}
extension HasManyThrough: ToManyStorage {}

extension HookFieldSite where Field: ToManyStorage {
    /// After the owner's save linked the queued records: empties the queue (put back if the
    /// transaction rolls back) and forgets records loaded before.
    func emptyQueue(saved pending: [Field.Child]) throws {
        modify { relation in
            relation.pending = []
            relation.preloaded = nil
        }
        try onRollback { $0.pending = pending }
    }
}

/// A to-many relation of one owner record. The shared part answers from
/// memory and queues records on an unsaved owner; each relation says how to
/// link and unlink a child once the owner is saved.
protocol ToManyContext: QueryRelation {
    associatedtype Owner: Model
    associatedtype Storage: ToManyStorage
    var owner: Owner { get }
    var storage: ReferenceWritableKeyPath<Owner, Storage> { get }
    /// Relates a child to the saved owner, in the database.
    func link(_ child: Storage.Child) throws
    /// Ends the relation of a child and the saved owner, in the database.
    func unlink(_ child: Storage.Child) throws
}

extension ToManyContext {
    func recordsInMemory<Record: Model>(as type: Record.Type) -> [Record]? {
        let records = owner.id == nil ? owner[keyPath: storage].pending : owner[keyPath: storage].preloaded
        return records.map { castRecords($0) }
    }

    func add(_ record: Model) throws {
        let child = try cast(record)
        guard owner.id != nil else {
            if !owner[keyPath: storage].pending.contains(where: { $0 === child }) {
                owner[keyPath: storage].pending.append(child)
            }
            return
        }
        try link(child)
        owner[keyPath: storage].preloaded = nil
    }

    func remove(_ record: Model) throws {
        let child = try cast(record)
        guard owner.id != nil else {
            owner[keyPath: storage].pending.removeAll { $0 === child }
            return
        }
        try unlink(child)
        owner[keyPath: storage].preloaded = nil
    }

    private func cast(_ record: Model) throws -> Storage.Child {
        guard let child = record as? Storage.Child else {
            throw ActiveRecordError(
                .misuse, "\(Owner.self)'s relation holds \(Storage.Child.self) records, not \(type(of: record))")
        }
        return child
    }
}
