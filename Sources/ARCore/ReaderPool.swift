#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Reader connections of a ``ConnectionSharing/singleWriter(readers:)`` database: opened on
/// demand (up to a few), each used by one thread at a time, unable to write.
///
/// Checking a reader out and in takes no lock and, for threads that read in turn, writes no
/// memory another thread writes:
/// - Each reader has its own state word, on cache lines of its own (idle, busy, not yet
///   opened). A reader is taken by moving its word from idle to busy (compare-and-exchange)
///   and given back by storing idle.
/// - A thread tries "its" reader first, chosen by a hash of the thread, and opens it if it is
///   not open yet; only when that one is busy does it try the others. So two reading threads
///   each keep to a reader of their own, whose page cache stays on their core.
///
/// A mutex here was taken and given back on every read, and the one lock word two readers
/// shared moved between cores on every read (see Benchmarks/README.md, Hot-path notes).
/// Only a pending setting takes the lock now.
final class ReaderPool: @unchecked Sendable {
    // `@unchecked Sendable`: `slots` is raw memory, written in `init` only and read-only
    // after; it points at the readers `readers` keeps. The rest is atomic or behind a lock.

    /// A reader connection's place in the pool, moved between threads only through the pool.
    ///
    /// `@unchecked Sendable`: `opened` is written once, by the thread that moved ``state``
    /// from `unopened` to `opening`, before the reader is first idle (a releasing store); any
    /// other thread reads it only after moving `state` from idle to busy (an acquiring
    /// exchange). The connection is used by the one thread that holds the reader busy.
    final class Reader: @unchecked Sendable {
        static let unopened = 0, opening = 1, idle = 2, busy = 3

        let state = Atomic<Int>(Reader.unopened)
        private var opened: Connection?
        // Keeps the next object off the cache line of `state`: a neighbour written by another
        // core would move the line back and forth (false sharing).
        private let padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

        /// The connection; only while the reader is held.
        var connection: Connection { opened.unsafelyUnwrapped }

        /// Sets the connection of a reader in the `opening` state.
        fileprivate func open(_ connection: Connection) { opened = connection }
    }

    // What readers load on every read (the slots, the settings count) lies between paddings:
    // not on a cache line with whatever was allocated before or after the pool (the writer's
    // connection, which every save writes, is allocated just before it).
    private let leadingPadding = cacheLinePadding
    /// The readers, opened on demand; ``slots`` holds them without retain and release.
    private let readers: [Reader]
    /// ``readers``, unretained, on cache lines of their own (see ``init(engine:maximum:instrumentation:)``).
    private let slots: UnsafeMutableBufferPointer<Unretained<Reader>>
    /// How many settings ``configure(_:)`` has added: a reader that applied fewer catches up
    /// when it is checked out.
    private let settingsCount = Atomic<Int>(0)
    private let trailingPadding = cacheLinePadding
    private let engine: any DatabaseEngine
    private let dialect: any SQLDialect
    var maximum: Int { readers.count }
    /// Settings to apply to every reader (tracer, error verbosity), in order.
    private let settings = Lock<[@Sendable (Connection) -> Void]>([])

    /// Where the readers opened are counted.
    private let instrumentation: DatabaseInstrumentation

    init(engine: any DatabaseEngine, maximum: Int, instrumentation: DatabaseInstrumentation) {
        self.engine = engine
        self.instrumentation = instrumentation
        dialect = engine.dialect
        readers = (0..<max(maximum, 1)).map { _ in Reader() }
        // Whole cache lines, aligned: what is allocated next to them (the writer, whose
        // fields every save writes) cannot share their line.
        let bytes = (readers.count * MemoryLayout<Unretained<Reader>>.stride + cacheLineSize - 1) / cacheLineSize * cacheLineSize
        let memory = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: cacheLineSize)
        slots = UnsafeMutableBufferPointer(
            start: memory.bindMemory(to: Unretained<Reader>.self, capacity: readers.count), count: readers.count)
        _ = slots.initialize(from: readers.map(Unretained.init))
    }

    deinit { slots.deallocate() }

    /// An idle reader, or a new one; `nil` when all are busy (the caller reads through the writer).
    func checkOut() throws -> Reader? {
        try checkOutUnretained(routing: ThreadRouting.word.value)?.object
    }

    /// ``checkOut()`` for a caller that gives the reader back while the pool is alive (the
    /// pool keeps its readers), and has read the calling thread's ``ThreadRouting/word``.
    @inline(__always)
    func checkOutUnretained(routing: UInt) throws -> Unretained<Reader>? {
        let own = ownSlot(routing)
        if let reader = try take(slots[own]) { return reader }
        return try takeAnother(than: own)
    }

    /// The slot the calling thread tries first: the one it took last (in `routing`), else one
    /// chosen by a hash of the thread. Two threads whose hashes collide would otherwise take
    /// turns at one reader, each read moving its state word and its page cache to the other core.
    @inline(__always)
    private func ownSlot(_ routing: UInt) -> Int {
        let taken = routing & ThreadRouting.slotMask
        if taken != 0 { return Int(truncatingIfNeeded: taken - 1) % slots.count }
        return Int(truncatingIfNeeded: (currentThreadNumber &* 0x9E37_79B9_7F4A_7C15) >> 40) % slots.count
    }

    func checkIn(_ reader: Reader) {
        reader.state.store(Reader.idle, ordering: .releasing)
    }

    @inline(__always)
    func checkIn(_ reader: Unretained<Reader>) {
        reader.with { $0.state.store(Reader.idle, ordering: .releasing) }
    }

    /// Applies a setting (tracing, error verbosity) to every reader, each before its next use.
    func configure(_ apply: @escaping @Sendable (Connection) -> Void) {
        settings.withLock { settings in
            settings.append(apply)
            settingsCount.store(settings.count, ordering: .releasing)
        }
    }

    /// `reader`, held, if it is idle or not yet opened (then it opens); `nil` when busy.
    @inline(__always)
    private func take(_ reader: Unretained<Reader>) throws -> Unretained<Reader>? {
        let taken = reader.with { reader in
            reader.state.compareExchange(expected: Reader.idle, desired: Reader.busy, ordering: .acquiring).exchanged
        }
        if taken {
            let applied = reader.with { $0.connection.appliedSettings }
            if applied != settingsCount.load(ordering: .acquiring) { applyPendingSettings(reader) }
            return reader
        }
        return try open(reader) ? reader : nil
    }

    /// Another reader than the thread's own (busy): an idle one, else one not yet opened.
    private func takeAnother(than own: Int) throws -> Unretained<Reader>? {
        for step in 1..<slots.count {
            let slot = (own + step) % slots.count
            if let reader = try take(slots[slot]) {
                let word = ThreadRouting.word
                word.value = word.value & ~ThreadRouting.slotMask | UInt(slot + 1)
                return reader
            }
        }
        return nil
    }

    /// Opens `reader` and holds it, if nobody opened it yet.
    private func open(_ unmanaged: Unretained<Reader>) throws -> Bool {
        let reader = unmanaged.object
        guard reader.state.compareExchange(
            expected: Reader.unopened, desired: Reader.opening, ordering: .acquiring
        ).exchanged else { return false }
        do {
            let connection = Connection(try engine.connect(.reader), dialect: dialect)
            let settings = settings.withLock { $0 }
            for apply in settings { apply(connection) }
            connection.appliedSettings = settings.count
            connection.eventLogger?.debug("opened a reader connection", metadata: ["maximum": "\(maximum)"])
            instrumentation.connectionsOpen(delta: 1)
            reader.open(connection)
            reader.state.store(Reader.busy, ordering: .releasing)
            return true
        } catch {
            reader.state.store(Reader.unopened, ordering: .releasing)
            throw error
        }
    }

    /// Settings that arrived while `reader` was idle or busy.
    private func applyPendingSettings(_ reader: Unretained<Reader>) {
        let connection = reader.object.connection
        let pending = settings.withLock { Array($0[connection.appliedSettings...]) }
        for apply in pending { apply(connection) }
        connection.appliedSettings += pending.count
    }
}

/// A reader connection held across calls, for a ``RowCursor`` that a caller steps at its own
/// pace: the reader goes back to its pool when the lease is released. Finalize the lease's
/// statements before releasing it.
package final class ReaderLease {
    package let connection: Connection
    private let pool: ReaderPool
    private let reader: ReaderPool.Reader

    init(pool: ReaderPool, reader: ReaderPool.Reader) {
        self.pool = pool
        self.reader = reader
        connection = reader.connection
    }

    deinit { pool.checkIn(reader) }
}

@available(*, unavailable, message: "A leased reader is used by one thread at a time")
extension ReaderLease: Sendable {}

/// A pooled connection held across calls by a ``RowCursor``: in a transaction, the
/// transaction's connection (held once more, so that it stays the thread's until the cursor
/// closes); otherwise one of its own, in a read-only transaction of its own (a cursor needs
/// one on such engines), which ends when the lease is released. Finalize the lease's
/// statements before releasing it.
package final class PooledLease {
    package let connection: Connection
    private let pool: ConnectionPool
    /// Whether the connection is the thread's transaction's (held once more by the lease).
    private let isThreads: Bool
    /// Whether the lease began a transaction of its own, to end when it is released.
    private let beganTransaction: Bool

    init(pool: ConnectionPool, dialect: any SQLDialect) throws {
        self.pool = pool
        if let held = pool.heldByCaller(), held.transaction.depth > 0 {
            connection = try pool.hold()
            isThreads = true
            beganTransaction = false
            return
        }
        connection = try pool.checkOut()
        isThreads = false
        guard let begin = dialect.beginCursorTransactionSQL else {
            beganTransaction = false
            return
        }
        do {
            try connection.execute(begin)
        } catch {
            pool.checkIn(connection)
            throw error
        }
        beganTransaction = true
    }

    deinit {
        if isThreads {
            pool.release()
            return
        }
        if beganTransaction {
            // Read-only: ending it changes nothing; a failure leaves it to be rolled back.
            if (try? connection.execute(connection.isInFailedTransaction ? "ROLLBACK" : "COMMIT")) == nil {
                try? connection.execute("ROLLBACK")
            }
        }
        pool.checkIn(connection)
    }
}

@available(*, unavailable, message: "A leased connection is used by one thread at a time")
extension PooledLease: Sendable {}
