import Foundation

/// Reader connections of a file database: opened on demand (up to a few),
/// each used by one thread at a time, `PRAGMA query_only` so they cannot write.
final class ReaderPool: Sendable {
    /// A connection, moved between threads only through the pool.
    /// `@unchecked Sendable`: a reader is used by the one thread that checked it out.
    final class Reader: @unchecked Sendable {
        let connection: Connection
        /// How many of the pool's settings this reader has applied.
        var applied: Int
        init(_ connection: Connection, applied: Int) {
            self.connection = connection
            self.applied = applied
        }
    }

    private struct State {
        var idle: [Reader] = []
        var opened = 0
        /// Settings to apply to every reader (tracer, error verbosity), in order.
        var settings: [@Sendable (Connection) -> Void] = []
    }

    static let maximumReaders = 4
    let path: String
    private let state = Lock(State())

    init(path: String) { self.path = path }

    /// An idle reader, or a new one; `nil` when all are busy (the caller reads through the writer).
    func checkOut(configuredLike database: Database) throws -> Reader? {
        enum Next { case reader(Reader, [@Sendable (Connection) -> Void]), open([@Sendable (Connection) -> Void]), none }
        let next: Next = state.withLock { state in
            if let reader = state.idle.popLast() {
                // Settings that arrived while this reader was busy.
                return .reader(reader, Array(state.settings[reader.applied...]))
            }
            guard state.opened < Self.maximumReaders else { return .none }
            state.opened += 1
            return .open(state.settings)
        }
        switch next {
        case .reader(let reader, let pending):
            for apply in pending { apply(reader.connection) }
            reader.applied += pending.count
            return reader
        case .none: return nil
        case .open(let settings):
            do {
                let connection = try Connection(path: path)
                try connection.execute("PRAGMA query_only=1")
                for apply in settings { apply(connection) }
                return Reader(connection, applied: settings.count)
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
