/// The transaction running on a connection: how deep it is and at which isolation level,
/// what to undo in memory if a level rolls back (records' ids, saved values, destroys), the
/// records whose `afterCommit`/`afterRollback` callbacks wait for its outcome, and the tables
/// automatic migration created inside it.
package struct TransactionState {
    /// How deep the current transaction is: 0 outside, 1 in `BEGIN`, 2+ in savepoints.
    package var depth = 0
    /// The isolation level the current top-level transaction runs at.
    package var isolation = TransactionIsolation.serializable
    /// What to undo in memory if the transaction rolls back, in the order written: one log
    /// for every level, so that a write appends to one log.
    package var undoLog = ChunkedLog<UndoEntry>()
    /// The records destroyed in the current transaction, in the order destroyed: when their
    /// level rolls back, they are not destroyed any more. Apart from ``undoLog``, since that is
    /// all a destroy has to undo (see the benchmark notes: a reference here is cheaper than an
    /// ``UndoEntry``). Each entry holds its record retained by hand, given up by
    /// ``forgetDestroyed()`` (a commit) or ``undestroy(from:)`` (a rollback).
    package private(set) var destroyed = DestroyedLog()
    /// Per level, where its entries in ``undoLog`` and ``destroyed`` start.
    package var levelStarts: [UndoLevelStart] = []
    /// Per level, the records whose `afterCommit`/`afterRollback` callbacks wait for it to end.
    package var recordsAwaitingOutcome: [[Model]] = []
    /// Tables automatic migration created inside the current transaction: published to every
    /// thread when it commits, forgotten when any level rolls back.
    package var migratedTables: Set<UInt64> = []
    /// Whether the engine ended the current transaction by itself, under a nested level: its
    /// savepoints are gone, and the outer levels run in a transaction begun again that can only
    /// roll back, as a PostgreSQL transaction after a failed statement.
    package var endedByEngine = false

    package init() {}

    /// Registers `entry` to undo if the current level rolls back; outside a transaction there
    /// is nothing to undo and the entry is dropped.
    @inline(__always)
    package mutating func onRollback(_ entry: consuming UndoEntry) {
        guard depth > 0, !levelStarts.isEmpty else { return }
        undoLog.append(entry)
    }

    /// Registers that `record` was destroyed: if the current level rolls back, it is not
    /// destroyed any more.
    @inline(__always)
    package mutating func undestroyOnRollback(_ record: any RecordStorage) {
        guard depth > 0, !levelStarts.isEmpty else { return }
        destroyed.append(record)
    }

    /// Forgets every destroyed record: the transaction committed, their destroys stay.
    package mutating func forgetDestroyed() {
        destroyed.releaseAll()
    }

    /// The records destroyed from position `start` of ``destroyed`` on are not destroyed any
    /// more: their level rolled back.
    package mutating func undestroy(from start: Int) {
        destroyed.undestroy(from: start)
    }

    /// Keeps `record` for its `afterCommit` or `afterRollback` callback (nothing outside a transaction).
    package mutating func awaitOutcome(_ record: Model) {
        guard depth > 0, !recordsAwaitingOutcome.isEmpty else { return }
        recordsAwaitingOutcome[recordsAwaitingOutcome.count - 1].append(record)
    }
}

/// A record destroyed in the current transaction, kept for its level's rollback, retained by
/// hand: a log of plain words, which a commit empties with one release per record, where a log
/// of `any RecordStorage` called the existential's value witness for each as well (issue 35:
/// a destroy in a transaction).
package struct DestroyedRecord {
    private let object: Unmanaged<AnyObject>

    /// Retains `record` until ``release()`` or ``undestroy()``.
    @inline(__always)
    init(_ record: any RecordStorage) { object = .passRetained(record) }

    /// Gives the record up: its destroy committed.
    @inline(__always)
    func release() { object.release() }

    /// Marks the record not destroyed (its destroy rolled back) and gives it up.
    func undestroy() {
        // Only a RecordStorage is ever stored (``init(_:)``).
        let record = object.takeRetainedValue() as! any RecordStorage
        record.header.isDestroyed = false
    }
}

/// ``TransactionState/destroyed``: the records destroyed in the current transaction, in one
/// buffer of plain words that grows by doubling (copying words is cheap; a chunked array
/// checked its uniqueness on every append). Freed when it empties, as every top-level
/// transaction's end empties it. Used in place only (``Connection/transaction``): a copy
/// would share the buffer.
package struct DestroyedLog {
    private var base: UnsafeMutablePointer<DestroyedRecord>?
    private var capacity = 0
    /// How many records the log holds.
    package private(set) var count = 0

    package init() {}

    /// Adds `record`, retained until ``releaseAll()`` or ``undestroy(from:)``.
    @inline(__always)
    package mutating func append(_ record: any RecordStorage) {
        if count == capacity { grow() }
        (base.unsafelyUnwrapped + count).initialize(to: DestroyedRecord(record))
        count &+= 1
    }

    @inline(never)
    private mutating func grow() {
        let grown = UnsafeMutablePointer<DestroyedRecord>.allocate(capacity: Swift.max(16, capacity * 2))
        if let base {
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
        }
        base = grown
        capacity = Swift.max(16, capacity * 2)
    }

    /// Gives up every record (their destroys committed) and empties the log.
    package mutating func releaseAll() {
        guard let base else { return }
        for index in 0..<count { base[index].release() }
        count = 0
        free()
    }

    /// Marks the records from position `start` on not destroyed (their level rolled back),
    /// gives them up and removes them.
    package mutating func undestroy(from start: Int) {
        precondition(start >= 0 && start <= count, "destroyed records' position \(start) out of 0...\(count)")
        guard let base else { return }
        for index in start..<count { base[index].undestroy() }
        count = start
        if count == 0 { free() }
    }

    private mutating func free() {
        base?.deallocate()
        base = nil
        capacity = 0
    }
}
