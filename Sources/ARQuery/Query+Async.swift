@_spi(Engines) import ARCore

/// The query's results in async form: each runs on one of the database's own threads (see
/// `Database.write(isolation:timeout:_:)` for waiting, cancellation and deadlines), on the
/// database passed, and hands its records back to the caller (`sending`).
///
/// ```swift
/// let page = try await Post.query()
///     .where(\.published == true)
///     .order(by: "id").limit(20).offset(40)
///     .fetch(on: db)
/// let author = try await Author.query().where("id = %@", id).includes(\.posts).first(on: db)
/// ```
extension Query {
    /// Runs `work` with this query on a thread of `database`'s reads.
    nonisolated(nonsending) private func reading<R>(on database: Database, _ work: sending @escaping (Transferred<Query>) throws -> sending R) async throws -> sending R {
        let query = Transferred(self)
        return try await database.perform(.reads, .reads, timeout: nil) { try work(query) }
    }

    /// Runs `work` with this query on the thread of `database`'s writes.
    nonisolated(nonsending) private func writing<R>(on database: Database, _ work: sending @escaping (Transferred<Query>) throws -> sending R) async throws -> sending R {
        let query = Transferred(self)
        return try await database.perform(.writes, .writes, timeout: nil) { try work(query) }
    }

    /// ``fetch()`` on `database`, from async code (eager loading with `includes` too).
    nonisolated(nonsending) public func fetch(on database: Database) async throws -> sending [Record] {
        try await reading(on: database) { try $0.value.fetch() }
    }

    /// ``first()`` on `database`, from async code.
    nonisolated(nonsending) public func first(on database: Database) async throws -> sending Record? {
        try await reading(on: database) { try $0.value.first() }
    }

    /// ``last()`` on `database`, from async code.
    nonisolated(nonsending) public func last(on database: Database) async throws -> sending Record? {
        try await reading(on: database) { try $0.value.last() }
    }

    /// ``count()`` on `database`, from async code.
    nonisolated(nonsending) public func count(on database: Database) async throws -> Int {
        try await reading(on: database) { try $0.value.count() }
    }

    /// ``exists()`` on `database`, from async code.
    nonisolated(nonsending) public func exists(on database: Database) async throws -> Bool {
        try await reading(on: database) { try $0.value.exists() }
    }

    /// ``deleteAll()`` on `database`, from async code.
    @discardableResult
    nonisolated(nonsending) public func deleteAll(on database: Database) async throws -> Int {
        try await writing(on: database) { try $0.value.deleteAll() }
    }

    /// ``updateAll(_:)`` on `database`, from async code.
    @discardableResult
    nonisolated(nonsending) public func updateAll(_ values: [String: (any ColumnValue)?], on database: Database) async throws -> Int {
        let values = Transferred(values)
        return try await writing(on: database) { try $0.value.updateAll(values.value) }
    }

    /// ``pluck(_:)`` on `database`, from async code.
    nonisolated(nonsending) public func pluck<each Value: ColumnValue & SendableMetatype>(
        _ keyPaths: repeat KeyPath<Record, each Value>, on database: Database
    ) async throws -> sending [(repeat each Value)] {
        let keyPaths = Transferred((repeat each keyPaths))
        return try await reading(on: database) { query in try query.value.pluck(repeat each keyPaths.value) }
    }

    /// `pluck(_:as:)` (one column by name) on `database`, from async code.
    nonisolated(nonsending) public func pluck<Value: ColumnValue & SendableMetatype>(_ column: String, as type: Value.Type, on database: Database) async throws -> sending [Value] {
        try await reading(on: database) { try $0.value.pluck(column, as: type) }
    }

    /// ``sum(_:)-(String)`` on `database`, from async code.
    nonisolated(nonsending) public func sum(_ column: String, on database: Database) async throws -> Double {
        try await reading(on: database) { try $0.value.sum(column) }
    }

    /// ``average(_:)-(String)`` on `database`, from async code.
    nonisolated(nonsending) public func average(_ column: String, on database: Database) async throws -> Double? {
        try await reading(on: database) { try $0.value.average(column) }
    }

    /// ``min(_:as:)`` on `database`, from async code.
    nonisolated(nonsending) public func min<Value: ColumnValue & SendableMetatype>(_ column: String, as type: Value.Type, on database: Database) async throws -> sending Value? {
        try await reading(on: database) { try $0.value.min(column, as: type) }
    }

    /// ``max(_:as:)`` on `database`, from async code.
    nonisolated(nonsending) public func max<Value: ColumnValue & SendableMetatype>(_ column: String, as type: Value.Type, on database: Database) async throws -> sending Value? {
        try await reading(on: database) { try $0.value.max(column, as: type) }
    }

    /// ``values(_:)`` on `database`, from async code: aggregates and expressions, grouped.
    nonisolated(nonsending) public func values(_ expressions: String, on database: Database) async throws -> [[DatabaseValue]] {
        try await reading(on: database) { try $0.value.values(expressions) }
    }

    /// The query's records as an async sequence, read in pages from a cursor (constant memory
    /// for large results): see ``AsyncRecordSequence``.
    public func records(on database: Database, pageSize: Int = 64) -> AsyncRecordSequence<Record> {
        AsyncRecordSequence(query: self, database: database, pageSize: pageSize)
    }
}

/// A query's records, for `for try await`: a cursor opened by the first `next()` on one of
/// the database's threads, read there a page at a time (`pageSize` records per hop), and
/// closed when the rows run out, the loop ends early, or the iterating task is cancelled
/// (`next()` then throws `CancellationError`).
///
/// ```swift
/// for try await post in Post.query().order(by: "id").records(on: db) {
///     try await send(post)
/// }
/// ```
///
/// Outside a transaction the cursor reads through a connection of its own for its whole
/// life (as ``RecordCursor`` does): it sees the rows as they were at its first page.
public struct AsyncRecordSequence<Record: Model>: AsyncSequence {
    public typealias Element = Record
    public typealias Failure = any Error

    let query: Query<Record>
    let database: Database
    let pageSize: Int

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(query: query, database: database, pageSize: Swift.max(1, pageSize))
    }

    /// Reads the records a page at a time.
    public final class AsyncIterator: AsyncIteratorProtocol {
        private var query: Query<Record>?
        private let database: Database
        private let pageSize: Int
        private var cursor: RecordCursor<Record>?
        private var page: [Record] = []
        private var index = 0
        private var isDone = false

        init(query: Query<Record>, database: Database, pageSize: Int) {
            self.query = query
            self.database = database
            self.pageSize = pageSize
        }

        deinit { cursor?.close() }

        /// The next record; `nil` once the rows ran out.
        nonisolated(nonsending) public func next() async throws -> Record? {
            if index < page.count {
                defer { index += 1 }
                return page[index]
            }
            if isDone { return nil }
            do {
                try Task.checkCancellation()
                let state = Transferred((query, cursor, pageSize))
                let (opened, records) = try await database.perform(.reads, .reads, timeout: nil) {
                    () throws -> sending (RecordCursor<Record>, [Record]) in
                    let (query, existing, pageSize) = state.value
                    let cursor = try existing ?? query.unsafelyUnwrapped.cursor()
                    var records: [Record] = []
                    records.reserveCapacity(pageSize)
                    while records.count < pageSize, let record = try cursor.next() { records.append(record) }
                    return (cursor, records)
                }
                query = nil
                cursor = opened
                page = records
                index = 0
                if records.count < pageSize { finish() }
                guard !records.isEmpty else { return nil }
                index = 1
                return records[0]
            } catch {
                finish()
                throw error
            }
        }

        private func finish() {
            isDone = true
            cursor?.close()
            cursor = nil
        }
    }
}
