@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Versioned migrations: named steps for what automatic migration cannot do
/// (rename a table or column, drop a column, change a column's type, or any SQL).
///
/// ```swift
/// var migrator = Migrator()
/// migrator.register("rename Bookmark.link to url") { try $0.renameColumn("link", to: "url", in: "Bookmark") }
/// migrator.register("drop User.legacy") { try $0.dropColumn("legacy", from: "User") }
/// let db = try Database.configure(.file(path), migrator: migrator)   // the steps run here
/// ```
///
/// The migrator is given to the database when it opens, and its steps run then, before
/// any model uses the database, so before automatic migration looks at any table: a
/// rename finds the old column, not an empty new one that automatic migration added. On a
/// database with no tables yet nothing runs: the models create the latest schema (the
/// classes describe the end state), and every step is recorded as applied. The database
/// records which steps ran (in the table `activerecord_migrations`), so each runs once.
/// Each step runs in its own transaction (on SQLite with foreign keys checked at its end
/// rather than enforced on the way, since a table rebuild drops and remakes tables): a
/// failing step leaves the database as it was before that step, and the error names it.
public struct Migrator: Sendable {
    /// The table where the database records the steps it ran.
    public static let tableName = Database.migrationsTableName

    var steps: [(name: String, run: @Sendable (MigrationContext) throws -> Void, down: (@Sendable (MigrationContext) throws -> Void)?)] = []

    /// An empty migrator.
    public init() {}

    /// Adds a step; steps run in the order registered. Names must be unique. ``revert(last:on:)``
    /// reverts it by computing its inverse, when all its schema steps are reversible (see
    /// ``MigrationContext``) and it writes no data: the inverse is computed by running the
    /// closure again against a recording context, where only the context's steps are recorded
    /// instead of run. A step that also writes rows (a model's `create`, `updateAll`,
    /// `db.execute`) needs ``register(_:up:down:)`` to be reverted.
    ///
    /// ```swift
    /// migrator.register("index titles") { try $0.addIndex(on: "Post", columns: ["title"]) }
    /// ```
    public mutating func register(_ name: String, _ step: @escaping @Sendable (MigrationContext) throws -> Void) {
        precondition(!steps.contains { $0.name == name }, "a migration named '\(name)' is registered twice")
        steps.append((name, step, nil))
    }

    /// Adds a step with its explicit inverse, `down`, which ``revert(last:on:)`` runs instead
    /// of computing one (for steps that have none: raw SQL, a dropped column).
    ///
    /// ```swift
    /// migrator.register("backfill slugs", up: { try $0.execute("UPDATE \"Post\" SET slug = lower(title)") },
    ///                   down: { try $0.execute("UPDATE \"Post\" SET slug = ''") })
    /// ```
    public mutating func register(
        _ name: String, up: @escaping @Sendable (MigrationContext) throws -> Void,
        down: @escaping @Sendable (MigrationContext) throws -> Void
    ) {
        precondition(!steps.contains { $0.name == name }, "a migration named '\(name)' is registered twice")
        steps.append((name, up, down))
    }

    /// The names of the steps this database has run (or recorded as applied), in order.
    public func appliedMigrations(in database: Database) throws -> [String] {
        guard try database.tableNames().contains(Self.tableName) else { return [] }
        let order = database.dialect.migrationsOrder
        let sql = database.dialect.selectSQL([.column("name")], from: Self.tableName, where: [], order: [.expression(order)], limitOne: false)
        return try database.rows(sql).compactMap { row in
            if case .text(let name) = row.first { name } else { nil }
        }
    }

    /// Brings `database` up to date: on a database without tables, records every step as
    /// applied; otherwise runs, in order, every step it has not run. Called when the
    /// database opens (`Database(_:automaticMigrations:readOnly:migrator:)`), or on a
    /// database opened without one, before any model uses it (after setting its logger, say).
    /// - Returns: the names of the steps it ran.
    /// - Throws: `.migrationFailed` naming the step; that step's changes are rolled back,
    ///   the steps before it stay applied. `.readOnly` when steps are pending on a database
    ///   opened read-only.
    @discardableResult
    public func apply(to database: Database) throws -> [String] {
        guard !database.isReadOnly else {
            let applied = Set(try appliedMigrations(in: database))
            let pending = steps.map(\.name).filter { !applied.contains($0) }
            let hasTables = !(try database.tableNames().isEmpty)
            guard pending.isEmpty || !hasTables else {
                throw ActiveRecordError(
                    .readOnly, "the database is open read-only, but migrations are pending: \(pending.joined(separator: ", "))")
            }
            return []
        }
        try database.execute(database.dialect.migrationsTableSQL(Self.tableName))
        // A new database: the models will create the latest schema, so no step has anything to do.
        var isNew = false
        try database.transaction {
            guard try MigrationContext(database: database).tableNames().isEmpty else { return }
            isNew = true
            for step in steps { try record(step.name, in: database) }
        }
        if isNew {
            database.log(.info, "a new database: \(steps.count) migrations recorded as applied (the models create the latest schema)")
        }
        guard !isNew else { return [] }
        var ran: [String] = []
        for (position, step) in steps.enumerated() {
            do {
                var didRun = false
                try database.aroundMigrationStep {
                    try database.transaction {
                        // Read under the write lock: another process may have run it meanwhile.
                        guard !(try isApplied(step.name, in: database)) else { return }
                        try step.run(MigrationContext(database: database))
                        try record(step.name, in: database)
                        didRun = true
                    }
                }
                if didRun {
                    ran.append(step.name)
                    database.log(.info, "migration '\(step.name)' applied (step \(position + 1) of \(steps.count))")
                }
            } catch {
                let reason = (error as? ActiveRecordError)?.message ?? "\(error)"
                let message = "migration '\(step.name)' (step \(position + 1) of \(steps.count)) failed: \(reason); "
                    + "the database is as it was before this step"
                throw (error as? ActiveRecordError)?.with(code: .migrationFailed, message: message)
                    ?? ActiveRecordError(.migrationFailed, message)
            }
        }
        if !ran.isEmpty { database.forgetCheckedTables() }
        return ran
    }

    private func isApplied(_ name: String, in database: Database) throws -> Bool {
        let sql = database.dialect.selectSQL([.one], from: Self.tableName, where: [.equals("name")], order: [], limitOne: false)
        return try database.rows(sql, [.text(name)]).isEmpty == false
    }

    private func record(_ name: String, in database: Database) throws {
        try database.execute(
            database.dialect.insertIgnoringConflictsSQL(into: Self.tableName, columns: ["name", "appliedAt"]),
            [.text(name), .real(Date().timeIntervalSince1970)])
    }
}

extension Database {
    /// Opens a database and brings it up to date with `migrator`'s steps before anything
    /// else uses it (see ``Migrator``).
    ///
    /// ```swift
    /// let db = try Database(.file(path), migrator: migrator)
    /// ```
    /// - Throws: what opening throws; `.migrationFailed` naming the step that failed (the
    ///   database is not opened).
    public convenience init(
        _ location: DatabaseLocation = .default, automaticMigrations: Bool = true, readOnly: Bool = false, migrator: Migrator
    ) throws {
        try self.init(location, automaticMigrations: automaticMigrations, readOnly: readOnly)
        try migrator.apply(to: self)
    }

    /// `configure(_:automaticMigrations:readOnly:)` with versioned migrations: the new
    /// database is opened and brought up to date with `migrator`'s steps before it replaces
    /// the configured one (which stays if either fails).
    @discardableResult
    public static func configure(
        _ location: DatabaseLocation = .default, automaticMigrations: Bool = true, readOnly: Bool = false, migrator: Migrator
    ) throws -> Database {
        let database = try Database(location, automaticMigrations: automaticMigrations, readOnly: readOnly, migrator: migrator)
        install(database)
        return database
    }
}
