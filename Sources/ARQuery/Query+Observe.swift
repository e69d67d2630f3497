@_spi(Engines) import ARCore

extension Database {
    /// Calls `onChange` with the query's records now, and again after every committed
    /// transaction that changed a table the query reads (its model's, and those it joins):
    /// this database's, and those of other processes and `Database` values (see
    /// `Database.observe(tables:fetch:onChange:)` for how each engine hears them). Many
    /// commits landing at once make one fetch; a rolled-back transaction makes none.
    ///
    /// ```swift
    /// let observation = db.observe(Bookmark.query().where(\.starred == true)) { result in
    ///     if case .success(let starred) = result { show(starred) }
    /// }
    /// ```
    /// The records are fetched on the observation's own queue, new for each call (not
    /// shared with any other thread). Tables read by eager loading (`includes`) do not count.
    /// - Returns: the observation: it runs until cancelled or released.
    public func observe<Record: Model>(
        _ query: Query<Record>, onChange: @escaping @Sendable (Result<[Record], any Error>) -> Void
    ) -> DatabaseObservation {
        let box = QueryBox(query)
        let tables = (try? use { try query.compile().tables.map(\.table.schema.name) }) ?? []
        return observe(tables: tables, fetch: { try box.query.fetch() }, onChange: onChange)
    }

    /// The query's records now, and again after every committed transaction that changed a
    /// table it reads, as an `AsyncSequence` (see ``observe(_:onChange:)``). A consumer that
    /// falls behind gets the latest records only. Leaving the loop (or cancelling its task)
    /// stops the observation.
    ///
    /// ```swift
    /// for try await starred in db.observe(Bookmark.query().where(\.starred == true)) {
    ///     show(starred)
    /// }
    /// ```
    public func observe<Record: Model>(_ query: Query<Record>) -> AsyncThrowingStream<[Record], any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let observation = observe(query) { result in
                switch result {
                case .success(let records):
                    nonisolated(unsafe) let fresh = records  // made for this delivery alone
                    continuation.yield(fresh)
                case .failure(let error):
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }
}

/// A query, shared with an observation's queue, which alone uses it (one fetch at a time).
private final class QueryBox<Record: Model>: @unchecked Sendable {
    let query: Query<Record>
    init(_ query: Query<Record>) { self.query = query }
}
