/// The database models use: configured once, or scoped to a task with `use`.
extension Database {
    private static let configured = Lock<Database?>(nil)

    @TaskLocal private static var scoped: Database?

    /// Configures the database that models use, replacing any earlier one.
    ///
    /// The new database is opened first: if that fails, the error is thrown
    /// and the earlier configuration stays in force. Once replaced, the old
    /// database closes when the last reference to it is gone.
    /// - Returns: the new database.
    @discardableResult
    public static func configure(
        _ location: DatabaseLocation = .default, automaticMigrations: Bool = true, readOnly: Bool = false
    ) throws -> Database {
        let database = try Database(location, automaticMigrations: automaticMigrations, readOnly: readOnly)
        install(database)
        return database
    }

    /// Makes `database` the configured one (for configuring variants in other targets).
    package static func install(_ database: Database) {
        configured.withLock { $0 = database }
    }

    /// The database models use: the one of an enclosing `use(_:)`, else the
    /// configured one, else the default file (opened on first use).
    /// - Throws: when the default database cannot be opened.
    public static var current: Database {
        get throws {
            if let scoped { return scoped }
            return try configured.withLock { database in
                if let database { return database }
                let opened = try Database(.default)
                database = opened
                return opened
            }
        }
    }

    /// Runs `body` with this database as ``current`` for the calling task or
    /// thread (and tasks it creates), whatever is configured globally.
    @discardableResult
    public func use<R>(_ body: () throws -> R) rethrows -> R {
        try Database.$scoped.withValue(self, operation: body)
    }

    /// The async form of ``use(_:)``.
    @discardableResult
    public func use<R>(_ body: () async throws -> R) async rethrows -> R {
        try await Database.$scoped.withValue(self, operation: body)
    }
}
