import Foundation
import Synchronization

/// A SQLite database: where records are saved and fetched.
///
/// Most programs configure one database at start-up and let the models use
/// it; nothing at all needs configuring to use the default file:
///
/// ```swift
/// try Database.configure(.file(path))         // or .inMemory, .temporary, or nothing
/// let user = User(); user.name = "Alex"; try user.save()
/// ```
///
/// A `Database` value can also be used for a scope (each test its own database):
///
/// ```swift
/// let db = try Database(.inMemory)
/// try db.use { try User.create(["name": "Alex"]) }
/// ```
///
/// A `Database` is `Sendable`: use it from any thread or task. Writes go
/// through one connection, serialized; a transaction holds it for its thread
/// until it ends, so another thread's work never runs inside it. Reads outside
/// a transaction use reader connections (for a file database), so they do not
/// wait for a writer.
public final class Database: @unchecked Sendable {
    // @unchecked Sendable: `connection` (the writer), `lockDepth` and `logHandler` are
    // only touched while `lock` is held; `owner`, `preparedTables` and `readers` are
    // atomic or mutex-guarded. The lock is recursive so that a transaction's thread
    // can save and fetch inside its own transaction.
    let lock = RecursiveLock()
    let connection: Connection
    var lockDepth = 0
    /// The thread holding `lock` (0: none), so that its reads go through the writer.
    let owner = Atomic<UInt>(0)
    /// The tables automatic migration checked on this database (by ``TableEngine/serial``).
    let preparedTables = Lock<Set<UInt64>>([])
    /// Reader connections, for a file database opened for writing (`nil` otherwise).
    let readers: ReaderPool?
    var logHandler: (@Sendable (String) -> Void)? = { message in
        FileHandle.standardError.write(Data("activerecord: \(message)\n".utf8))
    }

    /// The file path, or `:memory:`.
    public let path: String
    /// Where the database was asked to be.
    public let location: DatabaseLocation
    /// Whether missing tables and indexes are created on first use.
    public let automaticMigrations: Bool
    /// Whether the database was opened without write access.
    public let isReadOnly: Bool

    /// Opens (and for a new file creates) a database.
    ///
    /// - Parameters:
    ///   - location: where the database lives; `.default` is a file in the data directory.
    ///   - automaticMigrations: create missing tables and indexes on first use
    ///     (the default); when `false`, nothing is checked or changed.
    ///   - readOnly: open without write access.
    /// - Throws: `.cannotOpen` (bad path), `.notADatabase` (garbage file, left
    ///   untouched), `.readOnly` (a read-only file opened for writing).
    public init(_ location: DatabaseLocation = .default, automaticMigrations: Bool = true, readOnly: Bool = false) throws {
        self.location = location
        self.automaticMigrations = automaticMigrations
        isReadOnly = readOnly
        let resolved = try location.resolve()
        path = resolved.path
        connection = try Connection(path: path, readOnly: readOnly, uri: resolved.isURI)
        readers = resolved.isMemory || resolved.isURI || readOnly ? nil : ReaderPool(path: path)
        for note in resolved.notes { log(note) }
    }
}
