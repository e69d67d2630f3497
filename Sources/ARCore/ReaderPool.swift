import Foundation

/// Reader connections of a ``ConnectionSharing/singleWriter(readers:)`` database: opened on
/// demand (up to a few), each used by one thread at a time, unable to write.
final class ReaderPool: Sendable {
    /// A connection, moved between threads only through the pool.
    /// `@unchecked Sendable`: a reader is used by the one thread that checked it out.
    final class Reader: @unchecked Sendable {
        let connection: Connection
        init(_ connection: Connection) { self.connection = connection }
    }

    private struct State {
        var idle: [Reader] = []
        var opened = 0
        /// Settings to apply to every reader (tracer, error verbosity), in order.
        var settings: [@Sendable (Connection) -> Void] = []
    }

    private let engine: any DatabaseEngine
    private let dialect: any SQLDialect
    let maximum: Int
    private let state = Lock(State())

    init(engine: any DatabaseEngine, maximum: Int) {
        self.engine = engine
        dialect = engine.dialect
        self.maximum = maximum
    }

    /// An idle reader, or a new one; `nil` when all are busy (the caller reads through the writer).
    func checkOut() throws -> Reader? {
        enum Next { case reader(Reader, [@Sendable (Connection) -> Void]), open([@Sendable (Connection) -> Void]), none }
        let next: Next = state.withLock { state in
            if let reader = state.idle.popLast() {
                // Settings that arrived while this reader was busy.
                return .reader(reader, Array(state.settings[reader.connection.appliedSettings...]))
            }
            guard state.opened < maximum else { return .none }
            state.opened += 1
            return .open(state.settings)
        }
        switch next {
        case .reader(let reader, let pending):
            for apply in pending { apply(reader.connection) }
            reader.connection.appliedSettings += pending.count
            return reader
        case .none: return nil
        case .open(let settings):
            do {
                let connection = Connection(try engine.connect(.reader), dialect: dialect)
                for apply in settings { apply(connection) }
                connection.appliedSettings = settings.count
                connection.eventLogger?.debug("opened a reader connection", metadata: ["maximum": "\(maximum)"])
                return Reader(connection)
            } catch {
                state.withLock { $0.opened -= 1 }
                throw error
            }
        }
    }

    func checkIn(_ reader: Reader) {
        state.withLock { $0.idle.append(reader) }
    }

    /// Applies a setting (tracing, error verbosity) to every reader, each before its next use.
    func configure(_ apply: @escaping @Sendable (Connection) -> Void) {
        state.withLock { $0.settings.append(apply) }
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
        if let held = pool.heldByCaller(), held.transactionDepth > 0 {
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
