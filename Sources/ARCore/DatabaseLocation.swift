import Foundation

/// Where a database lives: in memory, a file, a file in a standard directory, or (with the
/// `ActiveRecordPostgreSQL` library) a PostgreSQL server.
///
/// ```swift
/// try Database.configure(.inMemory)
/// try Database.configure(.file("/var/lib/myapp/data.sqlite"))
/// try Database.configure(.cachesDirectory("data.sqlite"))
/// try Database.configure()            // .default: <data dir>/<program>/<program>.sqlite
/// try Database.configure(.postgres("postgresql://app@db.example.com/app"))   // import ActiveRecordPostgreSQL
/// ```
public struct DatabaseLocation: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case memory
        case file(String)
        case uri(String)
        case dataDirectory(String)
        case cachesDirectory(String)
        case documentsDirectory(String)
        case temporary
        case engine(EngineLocation)
    }

    /// A database of an engine that a library of its own provides (PostgreSQL): how to
    /// open it, and what it is called. Two are equal when their identities are. Its mirror
    /// (`dump`, a debugger) shows the description only: the identity may hold a password.
    package struct EngineLocation: Sendable, Hashable, CustomReflectable {
        /// What the location shows (a server's address without its password).
        let description: String
        /// What makes two locations the same (the full connection string).
        let identity: String
        let open: @Sendable (_ readOnly: Bool) throws -> any DatabaseEngine

        package static func == (lhs: Self, rhs: Self) -> Bool { lhs.identity == rhs.identity }
        package func hash(into hasher: inout Hasher) { hasher.combine(identity) }
        package var customMirror: Mirror { Mirror(self, children: ["description": description]) }
    }

    let kind: Kind

    /// A private in-memory database, gone when it is closed.
    public static let inMemory = DatabaseLocation(kind: .memory)

    /// A database file at `path`, created when missing (its directory must exist). The path
    /// is a file's path, whatever it looks like: `":memory:"` and `"file:…"` name files
    /// (use ``inMemory`` or ``uri(_:)`` for those meanings).
    public static func file(_ path: String) -> DatabaseLocation { DatabaseLocation(kind: .file(path)) }

    /// An SQLite URI filename, such as `"file:data.sqlite?mode=ro"` (see SQLite's "URI
    /// Filenames"): only this location reads a `file:` string as a URI. Reads go through
    /// the writer connection (no reader connections).
    public static func uri(_ uri: String) -> DatabaseLocation { DatabaseLocation(kind: .uri(uri)) }

    /// `fileName` in the program's data directory (see ``Database/dataDirectory()``).
    public static func dataDirectory(_ fileName: String) -> DatabaseLocation {
        DatabaseLocation(kind: .dataDirectory(fileName))
    }

    /// `fileName` in the program's cache directory (see ``Database/cachesDirectory()``),
    /// which users and cleaning tools may empty: for data that can be rebuilt.
    public static func cachesDirectory(_ fileName: String) -> DatabaseLocation {
        DatabaseLocation(kind: .cachesDirectory(fileName))
    }

    /// `fileName` in the program's documents directory (see ``Database/documentsDirectory()``).
    public static func documentsDirectory(_ fileName: String) -> DatabaseLocation {
        DatabaseLocation(kind: .documentsDirectory(fileName))
    }

    /// The default: `<program>.sqlite` in the program's data directory,
    /// `$XDG_DATA_HOME/<program>/` or `~/.local/share/<program>/`.
    ///
    /// The default was once in the cache directory: when the data directory holds no
    /// database but `$XDG_CACHE_HOME/<program>/<program>.sqlite` (or `~/.cache/…`) exists, that
    /// file (with its `-wal` and `-shm`) is moved to the data directory when the database
    /// opens, and a line says so on standard error; if it cannot be moved, it is used where
    /// it is, and a line says why. When both exist, the data directory's is used and a line
    /// names the one left in the cache directory.
    public static var `default`: DatabaseLocation { .dataDirectory("\(Database.programName).sqlite") }

    /// A separate test database: a new, empty file in a fresh temporary
    /// directory (a file rather than memory, so WAL and several connections work).
    public static let temporary = DatabaseLocation(kind: .temporary)

    /// A database of another engine (for the library that provides it).
    /// - Parameters:
    ///   - description: what the location shows (no password).
    ///   - identity: what makes two locations the same.
    ///   - open: makes the engine, for a database opened read-only or not.
    package static func engine(
        description: String, identity: String, open: @escaping @Sendable (_ readOnly: Bool) throws -> any DatabaseEngine
    ) -> DatabaseLocation {
        DatabaseLocation(kind: .engine(EngineLocation(description: description, identity: identity, open: open)))
    }

    /// What opening a file needs: the path (or URI) and whether it is one, plus lines to log.
    struct Resolved {
        var path: String
        var isURI = false
        var isMemory = false
        var notes: [String] = []
    }

    /// The engine of the location: SQLite for a path, which is resolved (standard
    /// directories created as needed) and checked to be one: no NUL byte, not empty, and not
    /// something other than a regular file (a device such as `/dev/null`, a directory, a pipe).
    /// - Throws: `.cannotOpen` saying what is wrong with the path.
    func engine(readOnly: Bool) throws -> any DatabaseEngine {
        if case .engine(let location) = kind { return try location.open(readOnly) }
        let resolved = try resolve()
        return SQLiteEngine(
            path: resolved.path, isURI: resolved.isURI, isMemory: resolved.isMemory, readOnly: readOnly, notes: resolved.notes)
    }

    private func resolve() throws -> Resolved {
        switch kind {
        case .memory: return Resolved(path: ":memory:", isMemory: true)
        case .uri(let uri):
            try Self.requireNoNUL(uri)
            return Resolved(path: uri, isURI: true)
        case .file(let path): return Resolved(path: try Self.checkedFilePath(path))
        case .dataDirectory(let name):
            let path = try Database.dataDirectory() + "/" + name
            var resolved = Resolved(path: try Self.checkedFilePath(path))
            if self == .default { resolved = try Self.adoptingOldDefault(resolved) }
            return resolved
        case .cachesDirectory(let name): return Resolved(path: try Self.checkedFilePath(try Database.cachesDirectory() + "/" + name))
        case .documentsDirectory(let name):
            return Resolved(path: try Self.checkedFilePath(try Database.documentsDirectory() + "/" + name))
        case .temporary:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("activerecord-\(UUID().uuidString)").path
            try Database.createDirectory(directory)
            return Resolved(path: directory + "/test.sqlite")
        case .engine(let location):
            preconditionFailure("\(location.description) is not a file")
        }
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
    private static func adoptingOldDefault(_ resolved: Resolved) throws -> Resolved {
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
                    + "(\(error.localizedDescription)); move it by hand")
        }
        return result
    }

    /// `in memory`, or the path or directory named.
    public var description: String {
        switch kind {
        case .memory: "in memory"
        case .file(let path): path
        case .uri(let uri): uri
        case .dataDirectory(let name): "data directory/\(name)"
        case .cachesDirectory(let name): "caches directory/\(name)"
        case .documentsDirectory(let name): "documents directory/\(name)"
        case .temporary: "temporary file"
        case .engine(let location): location.description
        }
    }
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

    static func standardDirectory(variable: String, fallback: String, create: Bool = true) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let base: String
        if let value = environment[variable], value.hasPrefix("/") {
            base = value
        } else {
            base = (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/" + fallback
        }
        let directory = base + "/" + programName
        if create { try createDirectory(directory) }
        return directory
    }

    static func createDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw ActiveRecordError(
                .cannotOpen, "cannot create the directory \(path): \(error.localizedDescription)")
        }
    }
}
