import Foundation

/// Who uses which connection: the writer (one thread at a time, recursively for its
/// transaction) and the reader connections (reads outside a transaction).
extension Database {
    /// The calling thread, as a number.
    static var currentThread: UInt { UInt(pthread_self()) }

    /// Takes the writer for the calling thread (recursively).
    func acquireWriter() {
        lock.lock()
        if lockDepth == 0 { owner.store(Database.currentThread, ordering: .relaxed) }
        lockDepth += 1
    }

    /// Gives back one level of ``acquireWriter()``.
    func releaseWriter() {
        lockDepth -= 1
        if lockDepth == 0 { owner.store(0, ordering: .relaxed) }
        lock.unlock()
    }

    /// Runs `body` with exclusive use of the writer connection.
    package func withConnection<R>(_ body: (Connection) throws -> R) throws -> R {
        acquireWriter()
        defer { releaseWriter() }
        return try body(connection)
    }

    /// Whether the calling thread holds the writer (in a transaction, a save, a cascade).
    var callerHoldsWriter: Bool { owner.load(ordering: .relaxed) == Database.currentThread }

    /// Runs `body` with the writer connection, after making sure the table and its
    /// indexes exist (when automatic migrations are on).
    package func withTable<R>(_ table: TableEngine, _ body: (Connection) throws -> R) throws -> R {
        try prepare(table)
        return try withConnection(body)
    }

    /// Runs a read: through a reader connection, or through the writer when the calling
    /// thread holds it (so that a transaction reads its own writes) or there is no reader.
    package func withReader<R>(_ table: TableEngine, _ body: (Connection) throws -> R) throws -> R {
        try withReader([table], body)
    }

    /// ``withReader(_:_:)-(TableEngine,_)`` for a query over several tables.
    package func withReader<R>(_ tables: [TableEngine], _ body: (Connection) throws -> R) throws -> R {
        for table in tables { try prepare(table) }
        guard let reader = try checkOutReader() else { return try withConnection(body) }
        defer { readers?.checkIn(reader) }
        return try body(reader.connection)
    }

    /// A reader connection for the calling thread, or `nil` when it must use the writer:
    /// it holds the writer (a transaction reads its own writes), the database has no
    /// readers (in memory, read-only), or every reader is in use.
    private func checkOutReader() throws -> ReaderPool.Reader? {
        guard let readers, !callerHoldsWriter else { return nil }
        return try readers.checkOut(configuredLike: self)
    }

    /// Opens a cursor over the rows of `sql`, for a caller that steps it at its own pace:
    /// the one cursor strategy of the library (Swift's `RecordCursor` and the C API's
    /// `ar_query_next` both use it).
    ///
    /// Outside a transaction, on a file database, the cursor reads through a reader
    /// connection leased for its life: it sees the data as its first step found it, and
    /// holds no lock, so other threads write meanwhile. Otherwise (the calling thread is in
    /// a transaction, which must read its own writes; the database is in memory; or every
    /// reader is in use) it steps on the writer, taking the writer's lock for each step
    /// only: rows changed between steps may or may not be seen.
    /// - Parameter tables: the tables the query reads (prepared by automatic migration first).
    package func openCursor(_ sql: String, _ arguments: [DatabaseValue], tables: [TableEngine]) throws -> RowCursor {
        for table in tables { try prepare(table) }
        if let readers, let reader = try checkOutReader() {
            let lease = ReaderLease(pool: readers, reader: reader)
            return try RowCursor(on: .reader(lease), sql, arguments)
        }
        return try withConnection { _ in try RowCursor(on: .writer(self), sql, arguments) }
    }
}
