import Dispatch

extension Database {
    /// Runs `body` in a transaction of this database, on a background thread, and
    /// returns its result: the async way to write.
    ///
    /// ```swift
    /// let id = try await db.write {
    ///     let user = try User.create(["name": "Alex"])
    ///     return user.id!
    /// }
    /// ```
    /// Inside `body` this database is ``current``. Records are not `Sendable`: return
    /// ids or values, and fetch again where you need the records.
    /// - Parameters:
    ///   - isolation: the transaction's isolation level (`nil`: the engine's default); see
    ///     ``TransactionIsolation``.
    ///   - body: the work, run in the transaction.
    /// - Throws: what `body` throws, after rolling back (``Rollback`` too: there is no result).
    public func write<R: Sendable>(
        isolation: TransactionIsolation? = nil, _ body: @escaping @Sendable () throws -> R
    ) async throws -> R {
        try await onBackgroundThread { try self.withTransaction(isolation: isolation, body) }
    }

    /// Runs `body` on a background thread with this database as ``current`` and
    /// returns its result: the async way to read (no transaction; reads use reader
    /// connections and do not wait for writers).
    public func read<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await onBackgroundThread(body)
    }

    /// ``write(isolation:_:)`` on the ``current`` database.
    public static func write<R: Sendable>(
        isolation: TransactionIsolation? = nil, _ body: @escaping @Sendable () throws -> R
    ) async throws -> R {
        try await current.write(isolation: isolation, body)
    }

    /// ``read(_:)`` on the ``current`` database.
    public static func read<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await current.read(body)
    }

    /// Database work blocks its thread, so it runs on a dispatch queue rather than on
    /// the cooperative pool of Swift concurrency.
    private func onBackgroundThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.use(body) })
            }
        }
    }
}
