@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded locations: SQLite in memory, in a file, or in a file of a standard directory.
extension DatabaseLocation {
    /// A private in-memory database, gone when it is closed.
    public static let inMemory = sqlite("in memory", identity: "memory") { _ in SQLiteLocation(path: ":memory:", isMemory: true) }

    /// A database file at `path`, created when missing (its directory must exist). The path
    /// is a file's path, whatever it looks like: `":memory:"` and `"file:…"` name files
    /// (use ``inMemory`` or ``uri(_:)`` for those meanings).
    public static func file(_ path: String) -> DatabaseLocation {
        sqlite(path, identity: "file:" + path) { _ in SQLiteLocation(path: try checkedFilePath(path)) }
    }

    /// An SQLite URI filename, such as `"file:data.sqlite?mode=ro"` (see SQLite's "URI
    /// Filenames"): only this location reads a `file:` string as a URI. Reads go through
    /// the writer connection (no reader connections).
    public static func uri(_ uri: String) -> DatabaseLocation {
        sqlite(uri, identity: "uri:" + uri) { _ in
            try requireNoNUL(uri)
            return SQLiteLocation(path: uri, isURI: true)
        }
    }

    /// `fileName` in the program's data directory (see `Database.dataDirectory()`).
    public static func dataDirectory(_ fileName: String) -> DatabaseLocation {
        if fileName == "\(Database.programName).sqlite" { return .default }
        return sqlite("data directory/\(fileName)", identity: "data:" + fileName) { _ in
            SQLiteLocation(path: try checkedFilePath(try Database.dataDirectory() + "/" + fileName))
        }
    }

    /// `fileName` in the program's cache directory (see `Database.cachesDirectory()`),
    /// which users and cleaning tools may empty: for data that can be rebuilt.
    public static func cachesDirectory(_ fileName: String) -> DatabaseLocation {
        sqlite("caches directory/\(fileName)", identity: "caches:" + fileName) { _ in
            SQLiteLocation(path: try checkedFilePath(try Database.cachesDirectory() + "/" + fileName))
        }
    }

    /// `fileName` in the program's documents directory (see `Database.documentsDirectory()`).
    public static func documentsDirectory(_ fileName: String) -> DatabaseLocation {
        sqlite("documents directory/\(fileName)", identity: "documents:" + fileName) { _ in
            SQLiteLocation(path: try checkedFilePath(try Database.documentsDirectory() + "/" + fileName))
        }
    }

    /// The default location of the embedded engine (SQLite): ``DatabaseLocation/default``.
    static var sqliteDefault: DatabaseLocation {
        let fileName = "\(Database.programName).sqlite"
        return sqlite("data directory/\(fileName)", identity: "data:" + fileName) { _ in
            try adoptingOldDefault(SQLiteLocation(path: try checkedFilePath(try Database.dataDirectory() + "/" + fileName)))
        }
    }

    /// A separate test database: a new, empty file in a fresh temporary
    /// directory (a file rather than memory, so WAL and several connections work).
    ///
    /// The directory and its files are removed when the `Database` is released (its last
    /// reference goes), so tests leave nothing behind; copy the file first to keep it.
    public static let temporary = sqlite("temporary file", identity: "temporary") { _ in
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("activerecord-\(UUID().uuidString)").path
        try Database.createDirectory(directory)
        return SQLiteLocation(path: directory + "/test.sqlite", temporaryDirectory: TemporaryDirectory(path: directory))
    }

    /// An SQLite location: its description and identity, and how its path is resolved
    /// (standard directories created as needed) and checked when the database opens.
    private static func sqlite(
        _ description: String, identity: String, resolve: @escaping @Sendable (_ readOnly: Bool) throws -> SQLiteLocation
    ) -> DatabaseLocation {
        .engine(description: description, identity: "sqlite:" + identity) { readOnly in
            let resolved = try resolve(readOnly)
            return SQLiteEngine(
                path: resolved.path, isURI: resolved.isURI, isMemory: resolved.isMemory, readOnly: readOnly,
                notes: resolved.notes, temporaryDirectory: resolved.temporaryDirectory)
        }
    }

    /// What opening a file needs: the path (or URI) and whether it is one, plus lines to log.
    private struct SQLiteLocation {
        var path: String
        var isURI = false
        var isMemory = false
        var notes: [String] = []
        var temporaryDirectory: TemporaryDirectory?
    }

    private static func requireNoNUL(_ path: String) throws {
        guard !path.utf8.contains(0) else {
            throw ActiveRecordError(
                .cannotOpen, "the database path holds a NUL byte, which no file name can; it would name another file")
        }
    }

    /// `path`, checked, as SQLite must read it: a file name, never a URI or `:memory:`.
    private static func checkedFilePath(_ path: String) throws -> String {
        try requireNoNUL(path)
        guard !path.isEmpty else {
            throw ActiveRecordError(.cannotOpen, "the database path is empty; name a file (or use .inMemory or .temporary)")
        }
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
            throw ActiveRecordError(
                .cannotOpen,
                "\(path) is not a regular file (a directory, device or pipe); point the database at a file")
        }
        // SQLite reads "file:…" as a URI (when built to) and ":memory:" as memory: a path
        // relative to the working directory written with "./" is always a file.
        if path.hasPrefix("file:") || path == ":memory:" { return "./" + path }
        return path
    }

    /// For ``default``: the database of the old default location (the cache directory),
    /// moved to the data directory when it holds none, else noted.
    private static func adoptingOldDefault(_ resolved: SQLiteLocation) throws -> SQLiteLocation {
        let fileManager = FileManager.default
        let old = try Database.standardDirectory(variable: "XDG_CACHE_HOME", fallback: ".cache", create: false)
            + "/\(Database.programName).sqlite"
        guard old != resolved.path, fileManager.fileExists(atPath: old) else { return resolved }
        var result = resolved
        if fileManager.fileExists(atPath: resolved.path) {
            result.notes.append(
                "the default database is \(resolved.path); another database at the old default location \(old) "
                    + "(the cache directory) is left alone")
            return result
        }
        do {
            for suffix in ["", "-wal", "-shm"] where fileManager.fileExists(atPath: old + suffix) {
                try fileManager.moveItem(atPath: old + suffix, toPath: resolved.path + suffix)
            }
            result.notes.append(
                "moved the database from the old default location \(old) (the cache directory, which cleaning tools "
                    + "empty) to \(resolved.path)")
        } catch {
            result.path = old
            result.notes.append(
                "using the database at the old default location \(old): it could not be moved to \(resolved.path) "
                    + "(\(systemErrorDescription(error))); move it by hand")
        }
        return result
    }
}

/// ``DatabaseLocation/default``, which ARCore reads through this symbol: the embedded engine is
/// linked into every program that imports ActiveRecord, and ARCore names no engine.
@_silgen_name("$s12ActiveRecord31embeddedDefaultDatabaseLocation")
package func embeddedDefaultLocation() -> DatabaseLocation { .sqliteDefault }
