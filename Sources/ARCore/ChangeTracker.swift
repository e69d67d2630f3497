/// The tables a connection's writes changed, for observers: per transaction level (published
/// when the outermost level commits, dropped when its level rolls back), and the changes
/// committed (or made outside a transaction) that observers have not heard of yet.
package struct ChangeTracker {
    /// Per transaction level, the tables its writes changed.
    package var byLevel: [TableChanges] = []
    /// Changes committed (or made outside a transaction) that observers have not heard of yet.
    package var unpublished: TableChanges {
        get { unpublishedDropped ? TableChanges() : storedUnpublished }
        set {
            if unpublishedDropped { forgetNotedTable() }
            storedUnpublished = newValue
            hasUnpublished = !newValue.isEmpty
        }
        _modify {
            if unpublishedDropped { forgetNotedTable() }
            yield &storedUnpublished
            hasUnpublished = !storedUnpublished.isEmpty
        }
    }
    /// ``unpublished``, unless ``unpublishedDropped``.
    private var storedUnpublished = TableChanges()
    /// Whether ``storedUnpublished`` (the one table noted last, outside a transaction) was
    /// dropped unpublished (nobody observed it): ``unpublished`` is empty, and the next write to
    /// that table marks it unpublished again without noting it anew (``dropUnpublished()``).
    /// Only while that table stays noted: forgetting it (a transaction level begins or ends)
    /// empties it for good.
    private var unpublishedDropped = false
    /// Whether ``unpublished`` holds any (checked after every write: a flag, not a set).
    package private(set) var hasUnpublished = false
    /// The table ``note(_:inTransaction:)-(String,_)`` noted last into the set it goes to now:
    /// a loop of writes to one table compares its name (the same string, so at once) instead
    /// of hashing it.
    private var lastNotedTable: String?
    /// The serial of the ``TableOperations`` noted last (0: none, or a name), compared first;
    /// with ``droppedBit`` set while its changes are dropped unpublished
    /// (``unpublishedDropped``), so that the check of a transaction's writes stays one
    /// comparison.
    private var lastNotedSerial: UInt64 = 0
    /// Set in ``lastNotedSerial`` while the changes to its table are dropped unpublished (no
    /// serial has it: they count from 1).
    private static let droppedBit: UInt64 = 1 << 63

    package init() {}

    /// Notes that a write changed `table`, into the innermost level's set in a transaction.
    @inline(__always)
    package mutating func note(_ table: String, inTransaction: Bool) {
        if table == lastNotedTable { return noteAgain() }
        if inTransaction, !byLevel.isEmpty {
            byLevel[byLevel.count - 1].insert(table)
        } else {
            unpublished.insert(table)
        }
        lastNotedTable = table
        lastNotedSerial = 0
    }

    /// ``note(_:inTransaction:)-(String,_)`` for one of the library's tables: a loop of writes
    /// to it compares a number, without reading (and retaining) its name.
    @inline(__always)
    package mutating func note(_ table: TableOperations, inTransaction: Bool) {
        if table.serial == lastNotedSerial { return }
        noteAnother(table, inTransaction: inTransaction)
    }

    /// ``note(_:inTransaction:)-(TableOperations,_)`` of a table other than the one noted last,
    /// or of that one after its changes were dropped unpublished: out of line, off the inlined
    /// check of a transaction's writes.
    @inline(never)
    private mutating func noteAnother(_ table: TableOperations, inTransaction: Bool) {
        if table.serial | Self.droppedBit == lastNotedSerial { return noteAgain() }
        note(table.schema.name, inTransaction: inTransaction)
        lastNotedSerial = table.serial
    }

    /// A write to the table noted last, into the same set: nothing to note, but for changes
    /// dropped unpublished since its last write (``dropUnpublished()``), which are that table
    /// alone, outside a transaction (a level's beginning would have emptied them): unpublished
    /// again.
    @inline(__always)
    private mutating func noteAgain() {
        guard unpublishedDropped else { return }
        unpublishedDropped = false
        hasUnpublished = true
        lastNotedSerial &= ~Self.droppedBit
    }

    /// Drops the unpublished changes, which nobody observes. When they are the one table noted
    /// last outside a transaction (a loop of writes, each its own transaction), they are only
    /// marked dropped, the table still noted: the next write to it marks them unpublished again
    /// (``noteAgain()``), with no set emptied and filled again per write.
    package mutating func dropUnpublished() {
        if byLevel.isEmpty, !unpublishedDropped, let table = lastNotedTable, storedUnpublished.holdsOnly(table) {
            unpublishedDropped = true
            hasUnpublished = false
            if lastNotedSerial != 0 { lastNotedSerial |= Self.droppedBit }
            return
        }
        unpublished = TableChanges()
        forgetNotedTable()
    }

    /// Forgets the table noted last: the set changes go to changed. Changes dropped
    /// unpublished (which held that table) are then gone for good.
    package mutating func forgetNotedTable() {
        lastNotedTable = nil
        lastNotedSerial = 0
        if unpublishedDropped {
            unpublishedDropped = false
            storedUnpublished = TableChanges()
        }
    }

    /// Notes that SQL the library did not write ran: it may have changed any table.
    package mutating func noteAnyTable(inTransaction: Bool) {
        if inTransaction, !byLevel.isEmpty {
            byLevel[byLevel.count - 1].everyTable = true
        } else {
            unpublished.everyTable = true
        }
    }
}

/// The tables a transaction (or a write outside one) changed, for observers: the first in a
/// property of its own (most writes change one table: no set to allocate and hash into), any
/// others in a set.
package struct TableChanges: Sendable {
    private var first: String?
    private var others: Set<String> = []
    /// SQL the library did not write ran (raw `execute`): any table may have changed.
    package var everyTable = false

    package init() {}

    package var isEmpty: Bool { first == nil && !everyTable }

    /// Whether the changes are to `table` alone.
    @inline(__always)
    package func holdsOnly(_ table: String) -> Bool { first == table && others.isEmpty && !everyTable }

    /// The tables changed (apart from ``everyTable``).
    package var tables: Set<String> { first.map { others.union([$0]) } ?? others }

    @inline(__always)
    package mutating func insert(_ table: String) {
        guard let first else { return self.first = table }
        if table != first { others.insert(table) }
    }

    package mutating func formUnion(_ other: TableChanges) {
        if let table = other.first { insert(table) }
        for table in other.others { insert(table) }
        everyTable = everyTable || other.everyTable
    }

    /// Whether a reader of `read` should look again.
    package func touches(_ read: Set<String>) -> Bool {
        guard !everyTable else { return true }
        guard let first else { return false }
        return read.contains(first) || !others.isDisjoint(with: read)
    }
}
