import ARCore

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

    /// ``drift(of:)`` for schemas built at run time.
    public func drift(ofSchemas schemas: [TableSchema]) throws -> [TableDrift] {
        try withConnection { connection in try schemas.map { try $0.drift(in: connection) } }
    }
}
