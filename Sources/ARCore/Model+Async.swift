/// The model's finders and persistence in async form: each runs on one of the database's own
/// threads (see ``Database/write(isolation:timeout:_:)`` for waiting, cancellation and
/// deadlines), on the database passed, and hands its records back to the caller (`sending`).
///
/// ```swift
/// guard let author = try await Author.find(id, on: db) else { throw NotFound() }
/// author.name = "Ada Lovelace"
/// try await author.save(on: db)
/// ```
///
/// A record passed to an instance method (`save(on:)`) goes to the database's thread while
/// the caller awaits, and comes back: the caller's task is the only one that uses it
/// meanwhile (a record is not `Sendable`, so no other task can hold it).
extension ModelClassMethods where Self: Model {
    /// ``find(_:)-(Int64)`` on `database`, from async code.
    ///
    /// Where it runs is the database's ``Database/awaitedFinds``: by default
    /// (``AwaitedFindPolicy/automatic``) on SQLite at once on the calling thread when one of
    /// the database's readers is idle (one indexed look-up; see `UsingItInAServer`); on
    /// PostgreSQL so too when a pooled connection is idle, no other find runs on a calling
    /// thread and the server has been answering quickly (the calling thread then waits for the
    /// round trip); otherwise on one of the database's own threads.
    nonisolated(nonsending) public static func find(_ id: Int64, on database: Database) async throws -> sending Self? {
        let atOnce = try ModelMapping.unretained(self).with { mapping in
            try database.readingAtOnce(mapping.table) { connection in
                try mapping.table.findRecord(id: id, in: connection, of: self, mapping: mapping)
            }
        }
        if let atOnce {
            guard let found = atOnce else { return nil }
            return unsafeDowncast(found, to: Self.self)
        }
        return try await database.perform(.reads, .reads, timeout: nil) { try database.measuringAwaitedFind { try find(id) } }
    }

    /// ``all()`` on `database`, from async code.
    nonisolated(nonsending) public static func all(on database: Database) async throws -> sending [Self] {
        try await database.perform(.reads, .reads, timeout: nil) { try all() }
    }

    /// ``first()`` on `database`, from async code.
    nonisolated(nonsending) public static func first(on database: Database) async throws -> sending Self? {
        try await database.perform(.reads, .reads, timeout: nil) { try first() }
    }

    /// ``count()`` on `database`, from async code.
    nonisolated(nonsending) public static func count(on database: Database) async throws -> Int {
        try await database.perform(.reads, .reads, timeout: nil) { try count() }
    }

    /// ``exists(id:)`` on `database`, from async code.
    nonisolated(nonsending) public static func exists(id: Int64, on database: Database) async throws -> Bool {
        try await database.perform(.reads, .reads, timeout: nil) { try exists(id: id) }
    }

    /// ``create(_:)`` on `database`, from async code.
    @discardableResult
    nonisolated(nonsending) public static func create(_ values: [String: (any ColumnValue)?] = [:], on database: Database) async throws -> sending Self {
        let values = Transferred(values)
        return try await database.perform(.writes, .writes, timeout: nil) { try create(values.value) }
    }

    /// ``delete(id:)`` on `database`, from async code.
    @discardableResult
    nonisolated(nonsending) public static func delete(id: Int64, on database: Database) async throws -> Bool {
        try await database.perform(.writes, .writes, timeout: nil) { try delete(id: id) }
    }

    /// ``destroyAll()`` on `database`, from async code.
    @discardableResult
    nonisolated(nonsending) public static func destroyAll(on database: Database) async throws -> Int {
        try await database.perform(.writes, .writes, timeout: nil) { try destroyAll() }
    }

    /// `insertAll(_:)` of records on `database`, from async code: the records get their ids.
    nonisolated(nonsending) public static func insertAll(_ records: [Self], on database: Database) async throws {
        nonisolated(unsafe) let records = records
        try await database.perform(.writes, .writes, timeout: nil) { try insertAll(records) }
    }

    /// `insertAll(_:)` of rows of column values on `database`,
    /// from async code.
    @discardableResult
    nonisolated(nonsending) public static func insertAll(_ rows: [[String: (any ColumnValue)?]], on database: Database) async throws -> sending [Self] {
        let rows = Transferred(rows)
        return try await database.perform(.writes, .writes, timeout: nil) { try insertAll(rows.value) }
    }

    /// ``upsertAll(_:onConflict:updating:)`` on `database`, from async code.
    @discardableResult
    nonisolated(nonsending) public static func upsertAll(
        _ records: [Self], onConflict conflict: [String], updating: [String]? = nil, on database: Database
    ) async throws -> [UpsertOutcome] {
        nonisolated(unsafe) let records = records
        return try await database.perform(.writes, .writes, timeout: nil) {
            try upsertAll(records, onConflict: conflict, updating: updating)
        }
    }

}

extension Model {
    /// ``save()`` on `database`, from async code.
    nonisolated(nonsending) public func save(on database: Database) async throws {
        nonisolated(unsafe) let record = self
        try await database.perform(.writes, .writes, timeout: nil) { try record.save() }
    }

    /// ``destroy()`` on `database`, from async code.
    nonisolated(nonsending) public func destroy(on database: Database) async throws {
        nonisolated(unsafe) let record = self
        try await database.perform(.writes, .writes, timeout: nil) { try record.destroy() }
    }

    /// ``reload()`` from `database`, from async code.
    nonisolated(nonsending) public func reload(on database: Database) async throws {
        nonisolated(unsafe) let record = self
        try await database.perform(.reads, .reads, timeout: nil) { try record.reload() }
    }

    /// ``upsert(onConflict:updating:)`` on `database`, from async code.
    @discardableResult
    nonisolated(nonsending) public func upsert(onConflict conflict: [String], updating: [String]? = nil, on database: Database) async throws -> UpsertOutcome {
        nonisolated(unsafe) let record = self
        return try await database.perform(.writes, .writes, timeout: nil) {
            try record.upsert(onConflict: conflict, updating: updating)
        }
    }
}
