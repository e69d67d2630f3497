#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Read scopes: ``Database/read(_:)`` holds one connection and one snapshot for a block.
extension Database {
    /// Runs `body` with every read of this database on one connection, in one read
    /// transaction: the block sees the data as its first read found it, and a loop of finds
    /// pays for one transaction instead of one each.
    ///
    /// ```swift
    /// let (users, groups) = try db.read {
    ///     (try User.query().where("age > %@", 30).fetch(), try Group.all())   // one snapshot
    /// }
    /// ```
    ///
    /// - Reads go through a reader connection of a file database (other threads write
    ///   meanwhile; the block does not see their commits), or, on PostgreSQL, a pooled
    ///   connection in a `REPEATABLE READ READ ONLY` transaction.
    /// - Writes inside the block run as they would outside it (committed at once, or in the
    ///   block's own `transaction { }`), and the block's later reads do not see them.
    /// - A database without reader connections (in memory, or every reader busy) holds its
    ///   one connection for the block instead: other threads wait to write, and the block
    ///   sees its own writes.
    /// - Inside a transaction, or another `read`, the block simply runs: its reads already
    ///   share one connection.
    /// - A cursor opened inside the block reads on a connection of its own.
    ///
    /// - Throws: what `body` throws; the engine's error if the read transaction cannot begin.
    public func read<R>(_ body: () throws -> R) throws -> R {
        if readScope != nil || heldByCaller != nil { return try use(body) }
        if let writer {
            guard let readers = writer.readers, let reader = try readers.checkOut() else {
                writer.acquire()
                defer { writer.release() }
                return try use(body)
            }
            defer { readers.checkIn(reader) }
            return try reading(on: reader.connection, body)
        }
        let pool = pool.unsafelyUnwrapped
        func onPrimary() throws -> R {
            let connection = try pool.checkOut()
            defer { pool.checkIn(connection) }
            return try reading(on: connection, body)
        }
        guard let replicas else { return try onPrimary() }
        // On a replica; if its read transaction cannot begin there (the replica went away
        // meanwhile), on the next server: the block has not run yet.
        var started = false
        return try readOnReplica(
            replicas,
            { connection in
                try reading(on: connection) {
                    started = true
                    return try body()
                }
            }, canRunAgain: { !started }, primary: onPrimary)
    }

    /// Runs `body` as a read scope on `connection`, in a read transaction: a deferred one on
    /// SQLite (its snapshot starts at the first read), a read-only one on PostgreSQL.
    /// `inside` wraps the block's own work (an async call arms its job around it, so that
    /// ending the read transaction is never interrupted).
    func reading<R>(
        on connection: Connection, _ body: () throws -> R, inside: ((() throws -> R) throws -> R)? = nil
    ) throws -> R {
        try connection.execute(dialect.beginCursorTransactionSQL ?? "BEGIN")
        defer {
            // A read transaction: ending it changes nothing; if it cannot commit, roll it back.
            if (try? connection.execute("COMMIT")) == nil { try? connection.execute("ROLLBACK") }
        }
        return try pinning(to: connection) {
            guard let inside else { return try use(body) }
            return try withoutActuallyEscaping(body) { body in try inside { try use(body) } }
        }
    }

    /// Runs `body` with the reads of this database on the calling thread going to
    /// `connection` (a read scope without a transaction of its own).
    func pinning<R>(to connection: Connection, _ body: () throws -> R) rethrows -> R {
        let outer = Self.innermostReadScope.value
        var scope = ReadScope(database: ObjectIdentifier(self), connection: connection, outer: outer)
        return try withUnsafeMutablePointer(to: &scope) { scope in
            // The scope lives on this stack frame, the thread's word pointing to it while the
            // block runs: blocks nest on a thread, so each ends before the one around it.
            Self.innermostReadScope.value = UInt(bitPattern: scope)
            openReadScopes.add(1, ordering: .relaxed)
            defer {
                openReadScopes.subtract(1, ordering: .relaxed)
                Self.innermostReadScope.value = outer
            }
            return try body()
        }
    }

    /// The connection of the calling thread's ``read(_:)`` block on this database, if any.
    /// One relaxed atomic load when no block is open anywhere; else one thread-specific read
    /// and a walk from the innermost block out. Unretained: the block's scope keeps the
    /// connection, and the block outlasts any use of it on its thread.
    @inline(__always)
    var readScope: Unretained<Connection>? {
        guard openReadScopes.load(ordering: .relaxed) > 0 else { return nil }
        let key = ObjectIdentifier(self)
        var address = Self.innermostReadScope.value
        // Innermost first; a thread has a block or two open at once, one per database.
        while let scope = UnsafePointer<ReadScope>(bitPattern: address) {
            if scope.pointee.database == key { return Unretained(scope.pointee.connection) }
            address = scope.pointee.outer
        }
        return nil
    }

    /// An open ``read(_:)`` block: its database, the connection its snapshot is on, and the
    /// address of the block around it on the thread (0 for none).
    private struct ReadScope {
        let database: ObjectIdentifier
        let connection: Connection
        let outer: UInt
    }

    /// The address of each thread's innermost open read scope (0 for none), a list through
    /// their `outer`: a find in a block looks its connection up without hashing or a lazily
    /// made global (see Benchmarks/README.md, Hot-path notes).
    private static let innermostReadScope = LazyPerThreadWord()
}
