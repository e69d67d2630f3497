@_spi(Engines) import ARCore

extension Database {
    /// What differs between these models and the database, without changing anything:
    /// tables, columns and indexes automatic migration would add, and extra columns and
    /// type mismatches it would leave alone.
    ///
    /// ```swift
    /// for drift in try db.drift(of: [User.self, Group.self]) where !drift.isEmpty {
    ///     print(drift)     // "User: add columns email; columns not in the model, left alone: legacy"
    /// }
    /// ```
    /// - Throws: `.invalidModel` for a class that cannot be a table; SQLite errors.
    public func drift(of models: [Model.Type]) throws -> [TableDrift] {
        let schemas = try models.map { try $0.schema() }
        return try drift(ofSchemas: schemas)
    }

    /// Applies automatic migration to every model's table now, in ONE transaction:
    /// creates missing tables, adds missing columns and indexes — for all of them, or,
    /// if any step fails, for none. (Without this call each table is migrated, on its
    /// own, the first time a model uses it.)
    ///
    /// ```swift
    /// let db = try Database.configure(.file(path))
    /// try db.migrate([User.self, Group.self, Project.self])
    /// ```
    /// - Returns: what differed before, per table.
    @discardableResult
    public func migrate(_ models: [Model.Type]) throws -> [TableDrift] {
        try migrateAutomatically(models.map { try $0.mapping().table })
    }

    /// ``drift(of:)`` for schemas built at run time.
    public func drift(ofSchemas schemas: [TableSchema]) throws -> [TableDrift] {
        try withConnection { connection in try schemas.map { try $0.drift(in: connection) } }
    }
}
