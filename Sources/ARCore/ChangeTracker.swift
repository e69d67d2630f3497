/// The tables a connection's writes changed, for observers: per transaction level (published
/// when the outermost level commits, dropped when its level rolls back), and the changes
/// committed (or made outside a transaction) that observers have not heard of yet.
package struct ChangeTracker {
    /// Per transaction level, the tables its writes changed.
    package var byLevel: [TableChanges] = []
    /// Changes committed (or made outside a transaction) that observers have not heard of yet.
    package var unpublished = TableChanges() {
        didSet { hasUnpublished = !unpublished.isEmpty }
    }
    /// Whether ``unpublished`` holds any (checked after every write: a flag, not a set).
    package private(set) var hasUnpublished = false
    /// The table ``note(_:inTransaction:)-(String,_)`` noted last into the set it goes to now:
    /// a loop of writes to one table compares its name (the same string, so at once) instead
    /// of hashing it.
    private var lastNotedTable: String?
    /// The serial of the ``TableOperations`` noted last (0: none, or a name), compared first.
    private var lastNotedSerial: UInt64 = 0

    package init() {}

    /// Notes that a write changed `table`, into the innermost level's set in a transaction.
    @inline(__always)
    package mutating func note(_ table: String, inTransaction: Bool) {
        if table == lastNotedTable { return }
        lastNotedTable = table
        lastNotedSerial = 0
        if inTransaction, !byLevel.isEmpty {
            byLevel[byLevel.count - 1].insert(table)
        } else {
            unpublished.insert(table)
        }
    }

    /// ``note(_:inTransaction:)-(String,_)`` for one of the library's tables: a loop of writes
    /// to it compares a number, without reading (and retaining) its name.
    @inline(__always)
    package mutating func note(_ table: TableOperations, inTransaction: Bool) {
        if table.serial == lastNotedSerial { return }
        note(table.schema.name, inTransaction: inTransaction)
        lastNotedSerial = table.serial
    }

    /// Forgets the table noted last: the set changes go to changed.
    package mutating func forgetNotedTable() {
        lastNotedTable = nil
        lastNotedSerial = 0
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
