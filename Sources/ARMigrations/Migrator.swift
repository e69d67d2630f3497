import ARCore
import Foundation

/// Versioned migrations: named steps for what automatic migration cannot do
/// (rename a table or column, drop a column, change a column's type, or any SQL).
///
/// ```swift
/// var migrator = Migrator()
/// migrator.register("rename Client to Customer") { try $0.renameTable("Client", to: "Customer") }
/// migrator.register("drop User.legacy") { try $0.dropColumn("legacy", from: "User") }
/// try migrator.migrate(db)     // runs the steps this database has not run, in order
/// ```
///
/// The database records which steps ran (in the table `activerecord_migrations`),
/// so each runs once. Each step runs in its own transaction: a failing step
/// leaves the database as it was before that step and the error names it.
public struct Migrator: Sendable {
    /// The table where the database records the steps it ran.
    public static let tableName = "activerecord_migrations"

    private var steps: [(name: String, run: @Sendable (MigrationContext) throws -> Void)] = []

    /// An empty migrator.
    public init() {}

    /// Adds a step; steps run in the order registered. Names must be unique.
    public mutating func register(_ name: String, _ step: @escaping @Sendable (MigrationContext) throws -> Void) {
        precondition(!steps.contains { $0.name == name }, "a migration named '\(name)' is registered twice")
        steps.append((name, step))
    }

    /// The names of the steps this database has run, in the order they ran.
    public func appliedMigrations(in database: Database) throws -> [String] {
        try ensureTable(database)
        return try database.rows("SELECT name FROM \(Self.tableName.quotedIdentifier) ORDER BY rowid").compactMap { row in
            if case .text(let name) = row.first { name } else { nil }
        }
    }

    /// Runs, in order, every registered step the database has not run yet.
    /// - Returns: the names of the steps it ran.
    /// - Throws: `.migrationFailed` naming the step; that step's changes are rolled back,
    ///   the steps before it stay applied.
    @discardableResult
    public func migrate(_ database: Database) throws -> [String] {
        let applied = Set(try appliedMigrations(in: database))
        var ran: [String] = []
        for (position, step) in steps.enumerated() where !applied.contains(step.name) {
            do {
                try database.withForeignKeysDeferredToCheck {
                    try database.transaction {
                        try step.run(MigrationContext(database: database))
                        try database.execute(
                            "INSERT INTO \(Self.tableName.quotedIdentifier) (name, appliedAt) VALUES (?, ?)",
                            [.text(step.name), .real(Date().timeIntervalSince1970)])
                    }
                }
            } catch {
                let reason = (error as? ActiveRecordError)?.message ?? "\(error)"
                throw ActiveRecordError(
                    .migrationFailed,
                    "migration '\(step.name)' (step \(position + 1) of \(steps.count)) failed: \(reason); "
                        + "the database is as it was before this step",
                    resultCode: (error as? ActiveRecordError)?.resultCode, sql: (error as? ActiveRecordError)?.sql)
            }
            ran.append(step.name)
        }
        if !ran.isEmpty { database.forgetCheckedTables() }
        return ran
    }

    private func ensureTable(_ database: Database) throws {
        try database.execute(
            "CREATE TABLE IF NOT EXISTS \(Self.tableName.quotedIdentifier) (name TEXT PRIMARY KEY, appliedAt REAL NOT NULL)")
    }
}

extension ActiveRecordError.Code {
    /// A versioned migration step failed; the message names it.
    public static let migrationFailed = ActiveRecordError.Code(rawValue: "migrationFailed")
}
