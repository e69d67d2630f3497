import Foundation

/// Where a database lives: in memory, a file, or a file in a standard directory.
///
/// ```swift
/// try Database.configure(.inMemory)
/// try Database.configure(.file("/var/lib/myapp/data.sqlite"))
/// try Database.configure(.cachesDirectory("data.sqlite"))
/// try Database.configure()            // .default: <cache dir>/<program>/<program>.sqlite
/// ```
public struct DatabaseLocation: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case memory
        case file(String)
        case cachesDirectory(String)
        case documentsDirectory(String)
        case temporary
    }

    let kind: Kind

    /// A private in-memory database, gone when it is closed.
    public static let inMemory = DatabaseLocation(kind: .memory)

    /// A database file at `path`, created when missing (its directory must exist).
    public static func file(_ path: String) -> DatabaseLocation { DatabaseLocation(kind: .file(path)) }

    /// `fileName` in the program's cache directory (see ``Database/cachesDirectory()``).
    public static func cachesDirectory(_ fileName: String) -> DatabaseLocation {
        DatabaseLocation(kind: .cachesDirectory(fileName))
    }

    /// `fileName` in the program's documents directory (see ``Database/documentsDirectory()``).
    public static func documentsDirectory(_ fileName: String) -> DatabaseLocation {
        DatabaseLocation(kind: .documentsDirectory(fileName))
    }

    /// The default: `<program>.sqlite` in the program's cache directory,
    /// `$XDG_CACHE_HOME/<program>/` or `~/.cache/<program>/`.
    public static var `default`: DatabaseLocation { .cachesDirectory("\(Database.programName).sqlite") }

    /// A separate test database: a new, empty file in a fresh temporary
    /// directory (a file rather than memory, so WAL and several connections work).
    public static let temporary = DatabaseLocation(kind: .temporary)

    /// Resolves the location to a path, creating standard directories as needed.
    func resolvePath() throws -> String {
        switch kind {
        case .memory: return ":memory:"
        case .file(let path): return path
        case .cachesDirectory(let name): return try Database.cachesDirectory() + "/" + name
        case .documentsDirectory(let name): return try Database.documentsDirectory() + "/" + name
        case .temporary:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("activerecord-\(UUID().uuidString)").path
            try Database.createDirectory(directory)
            return directory + "/test.sqlite"
        }
    }

    /// `in memory`, or the path or directory named.
    public var description: String {
        switch kind {
        case .memory: "in memory"
        case .file(let path): path
        case .cachesDirectory(let name): "caches directory/\(name)"
        case .documentsDirectory(let name): "documents directory/\(name)"
        case .temporary: "temporary file"
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

    private static func standardDirectory(variable: String, fallback: String) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let base: String
        if let value = environment[variable], value.hasPrefix("/") {
            base = value
        } else {
            base = (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/" + fallback
        }
        let directory = base + "/" + programName
        try createDirectory(directory)
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
