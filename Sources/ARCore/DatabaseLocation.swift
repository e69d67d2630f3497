#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a database lives, and which engine opens it: with `import ActiveRecord`, SQLite in
/// memory, a file, or a file in a standard directory (`.inMemory`, `.file(_:)`, `.temporary`,
/// `.default`: the `ARSQLite` engine); with the `ActiveRecordPostgreSQL` library, a PostgreSQL
/// server; an engine of another library makes its own.
///
/// ```swift
/// try Database.configure(.inMemory)
/// try Database.configure(.file("/var/lib/myapp/data.sqlite"))
/// try Database.configure(.cachesDirectory("data.sqlite"))
/// try Database.configure()            // .default: <data dir>/<program>/<program>.sqlite
/// try Database.configure(.postgres("postgresql://app@db.example.com/app"))   // import ActiveRecordPostgreSQL
/// ```
public struct DatabaseLocation: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// What the location shows (a path; a server's address without its password).
    public let description: String
    /// What makes two locations the same (a path, a full connection string).
    let identity: String
    /// Makes the engine, for a database opened read-only or not.
    let open: @Sendable (_ readOnly: Bool) throws -> any DatabaseEngine

    /// A database of an engine: how to open it, and what it is called. Two are equal when
    /// their identities are. Its mirror (`dump`, a debugger) shows the description only: the
    /// identity may hold a password.
    /// - Parameters:
    ///   - description: what the location shows (no password).
    ///   - identity: what makes two locations the same.
    ///   - open: makes the engine, for a database opened read-only or not (a path is
    ///     resolved and checked here, when the database opens).
    package static func engine(
        description: String, identity: String, open: @escaping @Sendable (_ readOnly: Bool) throws -> any DatabaseEngine
    ) -> DatabaseLocation {
        DatabaseLocation(description: description, identity: identity, open: open)
    }

    /// The default: the embedded engine's database, `<program>.sqlite` in the program's data
    /// directory (`$XDG_DATA_HOME/<program>/` or `~/.local/share/<program>/`).
    ///
    /// The default was once in the cache directory: when the data directory holds no
    /// database but `$XDG_CACHE_HOME/<program>/<program>.sqlite` (or `~/.cache/…`) exists, that
    /// file (with its `-wal` and `-shm`) is moved to the data directory when the database
    /// opens, and a line says so on standard error; if it cannot be moved, it is used where
    /// it is, and a line says why. When both exist, the data directory's is used and a line
    /// names the one left in the cache directory.
    public static var `default`: DatabaseLocation { embeddedDefaultLocation() }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.identity == rhs.identity }
    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }

    /// The engine of the location.
    /// - Throws: `.cannotOpen` (or the engine's more specific code) saying what is wrong.
    func engine(readOnly: Bool) throws -> any DatabaseEngine { try open(readOnly) }
}

extension Database {
    /// The running program's name, used for default directory and file names.
    public static var programName: String {
        let name = ProcessInfo.processInfo.processName
        let safe = name.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" }
        return safe.isEmpty ? "activerecord" : String(safe)
    }

    /// The program's data directory, created when missing, where the default database lives:
    /// `$XDG_DATA_HOME/<program>` or `~/.local/share/<program>`.
    /// - Throws: `.cannotOpen` when it cannot be created.
    public static func dataDirectory() throws -> String {
        try standardDirectory(variable: "XDG_DATA_HOME", fallback: ".local/share")
    }

    /// The program's cache directory, created when missing:
    /// `$XDG_CACHE_HOME/<program>` or `~/.cache/<program>`.
    /// - Throws: `.cannotOpen` when it cannot be created.
    public static func cachesDirectory() throws -> String {
        try standardDirectory(variable: "XDG_CACHE_HOME", fallback: ".cache")
    }

    /// The program's documents directory, created when missing:
    /// `$XDG_DOCUMENTS_DIR/<program>` or `~/Documents/<program>`.
    /// - Throws: `.cannotOpen` when it cannot be created.
    public static func documentsDirectory() throws -> String {
        try standardDirectory(variable: "XDG_DOCUMENTS_DIR", fallback: "Documents")
    }

    package static func standardDirectory(variable: String, fallback: String, create: Bool = true) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let base: String
        if let value = environment[variable], value.hasPrefix("/") {
            base = value
        } else {
            base = (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? homeDirectory()) + "/" + fallback
        }
        let directory = base + "/" + programName
        if create { try createDirectory(directory) }
        return directory
    }

    package static func createDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw ActiveRecordError(
                .cannotOpen, "cannot create the directory \(path): \(systemErrorDescription(error))")
        }
    }
}

/// The embedded engine's default location (see ``DatabaseLocation/default``), defined by the
/// embedded engine's module (linked with every program that imports ActiveRecord).
@_silgen_name("$s12ActiveRecord31embeddedDefaultDatabaseLocation")
func embeddedDefaultLocation() -> DatabaseLocation

/// The user's home directory (from the user database, when `HOME` says none).
private func homeDirectory() -> String {
    #if canImport(FoundationEssentials)
    FileManager.default.homeDirectoryForCurrentUser.path
    #else
    NSHomeDirectory()
    #endif
}
