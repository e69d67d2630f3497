#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The writer of a ``ConnectionSharing/singleWriter(readers:)`` database, behind a recursive
/// lock held by one thread at a time (for a transaction, until it ends), and its readers.
///
/// Reads do not look at it (see ``Database/withReadConnection(_:)``): what a save writes here
/// (``owner``, ``lockDepth``, the lock's mutex) stays on cache lines that reading threads never
/// load, so a writer's saves do not make readers on other cores miss.
final class SingleWriter: @unchecked Sendable {
    // @unchecked Sendable: `connection` and `lockDepth` are only touched while `lock` is held;
    // `owner` is atomic, `readers` mutex-guarded.
    let lock = RecursiveLock()
    let connection: Connection
    /// ``connection``, for ``Database/withConnection(_:)``: passed on without a retain and release.
    let unretainedConnection: Unretained<Connection>
    /// Reader connections (`nil` when the engine has none for this database).
    let readers: ReaderPool?
    /// Where a wait for the lock is reported.
    let instrumentation: DatabaseInstrumentation
    // What every save writes, on a cache line of its own: not the line of the fields above,
    // nor of whatever was allocated just before or after this object.
    private let leadingPadding = cacheLinePadding
    var lockDepth = 0
    /// The thread holding `lock` (0: none), so that its reads go through the writer.
    let owner = Atomic<UInt>(0)
    private let trailingPadding = cacheLinePadding

    init(_ connection: Connection, readers: ReaderPool?, instrumentation: DatabaseInstrumentation) {
        self.connection = connection
        self.instrumentation = instrumentation
        unretainedConnection = Unretained(connection)
        self.readers = readers
    }

    /// Takes the writer for the calling thread (recursively).
    ///
    /// A thread that holds it already (a transaction's writes) only counts one more level:
    /// `owner` is this thread's number only while this thread holds the lock (it stores it
    /// after locking and clears it before unlocking), so reading it needs no lock, and the
    /// mutex is taken and given back once per outermost level, not per write (see
    /// Benchmarks/README.md, Hot-path notes).
    @inline(__always)
    func acquire() {
        if callerHolds {
            lockDepth += 1
        } else {
            takeLock()
        }
    }

    /// Gives back one level of ``acquire()``.
    @inline(__always)
    func release() {
        lockDepth -= 1
        if lockDepth == 0 { giveBackLock() }
    }

    @inline(never)
    private func takeLock() {
        // Another thread holds it: a wait, timed when a metrics backend is there.
        if !lock.tryLock() { waitForLock() }
        owner.store(currentThreadNumber, ordering: .relaxed)
        lockDepth = 1
        ThreadRouting.word.value &+= ThreadRouting.writerHeld
    }

    /// Takes the lock another thread holds, reporting the wait.
    @inline(never)
    private func waitForLock() {
        guard instrumentation.isReporting else { return lock.lock() }
        let started = monotonicNanoseconds()
        lock.lock()
        instrumentation.recordConnectionWait(since: started)
    }

    @inline(never)
    private func giveBackLock() {
        ThreadRouting.word.value &-= ThreadRouting.writerHeld
        owner.store(0, ordering: .relaxed)
        lock.unlock()
    }

    /// Whether the calling thread holds the writer (in a transaction, a save, a cascade).
    var callerHolds: Bool { owner.load(ordering: .relaxed) == currentThreadNumber }
}

/// What a read asks of the calling thread, in one thread-specific word read once per read:
/// whether the thread holds a single writer (of any database), and the reader it took last.
///
/// A thread that holds no writer (the count is 0) reads through a reader without looking at
/// any writer's ``SingleWriter/owner``: that word is written by every save, and reading it
/// from another core would fetch its cache line again after each one.
enum ThreadRouting {
    /// Bits 32 and up: how many single writers the thread holds (``writerHeld`` each); bits
    /// 0–31: the reader slot the thread took last, plus one (0: none yet; see
    /// ``ReaderPool/checkOutUnretained(routing:)``). One key for every database: a thread
    /// reading two shares the hint, which only orders the slots it tries.
    static let word = PerThreadWord()
    /// One writer held, in ``word``.
    static let writerHeld: UInt = 1 << 32
    /// The slot hint's bits of ``word``.
    static let slotMask: UInt = writerHeld - 1
}

/// Who uses which connection: the writer (one thread at a time, recursively for its
/// transaction) and the reader connections (reads outside a transaction); or, on a pooled
/// engine, the connection each thread holds.
extension Database {
    /// Holds a connection for the calling thread (recursively): the writer, or a pooled one.
    /// Give it back with ``release()``.
    func hold() throws -> Connection {
        if let writer {
            writer.acquire()
            return writer.connection
        }
        return try pool.unsafelyUnwrapped.hold()
    }

    /// Gives back one level of ``hold()``.
    @inline(__always)
    func release() {
        if let writer { writer.release() } else { pool.unsafelyUnwrapped.release() }
    }

    /// The connection the calling thread holds (in a transaction, a save, a cascade), if any.
    var heldByCaller: Connection? {
        if let writer { writer.callerHolds ? writer.connection : nil } else { pool.unsafelyUnwrapped.heldByCaller() }
    }

    /// Runs `body` with exclusive use of a connection that can write: the writer, or the
    /// calling thread's pooled connection.
    package func withConnection<R>(_ body: (Connection) throws -> R) throws -> R {
        // The single writer's path, once per save and fetch: the writer and its connection are
        // reached without a retain and release (the database keeps both alive).
        if let unretained = unretainedWriter {
            return try unretained.with { writer in
                writer.acquire()
                defer { writer.release() }
                return try writer.unretainedConnection.with { connection in
                    try publishingChanges(of: connection, body)
                }
            }
        }
        // The pool's path, as the writer's: the pool, and the connection held (which the
        // thread's storage keeps while it is held), reached without a retain and release.
        let pool = unretainedPool.unsafelyUnwrapped.unmanaged
        let held = try pool._withUnsafeGuaranteedRef { try $0.holdUnretained() }
        defer { pool._withUnsafeGuaranteedRef { $0.release() } }
        return try held.with { connection in try publishingChanges(of: connection, body) }
    }

    /// Runs a read on the primary of a database with replicas, when no replica can serve it:
    /// checked out rather than held, so that its end records no position for the session (it
    /// wrote nothing).
    private func withPrimaryForRead<R>(_ body: (Connection) throws -> R) throws -> R {
        let pool = pool.unsafelyUnwrapped
        let connection = try pool.checkOut()
        defer { pool.checkIn(connection) }
        return try body(connection)
    }

    /// Runs `body`, then tells observers what its writes outside a transaction changed.
    @inline(__always)
    private func publishingChanges<R>(of connection: Connection, _ body: (Connection) throws -> R) throws -> R {
        let result: R
        do {
            result = try body(connection)
        } catch {
            if connection.changes.hasUnpublished { publishChanges(of: connection) }
            throw error
        }
        if connection.changes.hasUnpublished { publishChanges(of: connection) }
        return result
    }

    /// Runs `body` with the writer connection, after making sure the table and its
    /// indexes exist (when automatic migrations are on).
    package func withWriter<R>(_ table: TableOperations, _ body: (Connection) throws -> R) throws -> R {
        try prepare(table)
        return try withConnection(body)
    }

    /// Runs `body` with the writer connection (a pooled connection on PostgreSQL), after making
    /// sure every table of `tables` exists: a write that reads other tables (a batch `UPDATE`
    /// through a join).
    package func withWriter<R>(_ tables: [TableOperations], _ body: (Connection) throws -> R) throws -> R {
        for table in tables { try prepare(table) }
        return try withConnection(body)
    }

    /// Runs a read: through a reader connection, or through the writer when the calling
    /// thread holds it (so that a transaction reads its own writes) or there is no reader.
    /// On a pooled engine, through the calling thread's connection.
    package func withReader<R>(_ table: TableOperations, _ body: (Connection) throws -> R) throws -> R {
        // Not through the array form: an array per read is an allocation, and one more
        // retain of the shared table, whose reference count every reading thread writes.
        try prepare(table)
        return try withReadConnection(body)
    }

    /// ``withReader(_:_:)-(TableOperations,_)`` for a query over several tables.
    package func withReader<R>(_ tables: [TableOperations], _ body: (Connection) throws -> R) throws -> R {
        for table in tables { try prepare(table) }
        return try withReadConnection(body)
    }

    /// Runs `body` on the connection a read uses (see ``withReader(_:_:)-(TableOperations,_)``).
    private func withReadConnection<R>(_ body: (Connection) throws -> R) throws -> R {
        if let connection = readScope { return try connection.with(body) }
        // The database keeps its pool and the pool its readers alive: each is reached without a
        // retain and release (see Benchmarks/README.md, Hot-path notes). A thread that holds no
        // writer reads through a reader without reading the writer's fields, which every save
        // writes (see ``ThreadRouting``).
        guard let unretainedReaders else {
            if unretainedWriter == nil, let replicas, pool.unsafelyUnwrapped.heldByCaller() == nil {
                return try readOnReplica(replicas, body) { try withPrimaryForRead(body) }
            }
            return try withConnection(body)
        }
        let routing = ThreadRouting.word.value
        if routing >= ThreadRouting.writerHeld, unretainedWriter.unsafelyUnwrapped.with({ $0.callerHolds }) {
            return try withConnection(body)
        }
        return try unretainedReaders.with { readers in
            guard let reader = try readers.checkOutUnretained(routing: routing) else { return try withConnection(body) }
            defer { readers.checkIn(reader) }
            return try reader.with { try body($0.connection) }
        }
    }

    /// Opens a cursor over the rows of `sql`, for a caller that steps it at its own pace:
    /// the one cursor strategy of the library (Swift's `RecordCursor` and the C API's
    /// `ar_query_next` both use it).
    ///
    /// Outside a transaction the cursor reads through a connection leased for its life (a
    /// reader of a file database, or a pooled connection in a read-only transaction of its
    /// own): it sees the data as its first step found it, and holds no lock, so other threads
    /// write meanwhile. In a transaction it reads through the transaction's connection (and
    /// sees its writes). On the single writer of a database without readers, or with every
    /// reader in use, it takes the writer's lock for each step only: rows changed between
    /// steps may or may not be seen.
    /// - Parameter tables: the tables the query reads (prepared by automatic migration first).
    package func openCursor(_ sql: String, _ arguments: [DatabaseValue], tables: [TableOperations]) throws -> RowCursor {
        for table in tables { try prepare(table) }
        if let pool { return try RowCursor(on: .pooled(PooledLease(pool: pool, dialect: dialect)), sql, arguments) }
        if let writer, let readers = writer.readers, !writer.callerHolds, let reader = try readers.checkOut() {
            return try RowCursor(on: .reader(ReaderLease(pool: readers, reader: reader)), sql, arguments)
        }
        return try withConnection { _ in try RowCursor(on: .writer(self), sql, arguments) }
    }
}
