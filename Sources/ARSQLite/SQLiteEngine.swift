@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SQLite, in a file or in memory: one writer connection and, for a file opened for writing,
/// up to four reader connections (WAL lets them read while the writer writes).
package struct SQLiteEngine: DatabaseEngine {
    /// The file path, an SQLite URI filename, or `:memory:`.
    package let path: String
    package let isURI: Bool
    package let isMemory: Bool
    package let readOnly: Bool
    package let notes: [String]
    /// The directory of a ``DatabaseLocation/temporary`` database, removed with its files once
    /// the last copy of the engine (the `Database` holds it) is gone.
    package let temporaryDirectory: TemporaryDirectory?

    /// How many reader connections a file database opens at most.
    package static let maximumReaders = 4

    package init(
        path: String, isURI: Bool = false, isMemory: Bool = false, readOnly: Bool = false, notes: [String] = [],
        temporaryDirectory: TemporaryDirectory? = nil
    ) {
        self.path = path
        self.isURI = isURI
        self.isMemory = isMemory
        self.readOnly = readOnly
        self.notes = notes
        self.temporaryDirectory = temporaryDirectory
    }

    package var dialect: any SQLDialect { SQLiteDialect() }

    /// No readers for a database in memory (each connection would have its own), a URI (which
    /// may name one), or one opened read-only (the writer reads as well).
    package var sharing: ConnectionSharing {
        .singleWriter(readers: isMemory || isURI || readOnly ? 0 : Self.maximumReaders)
    }

    package var description: String { path }

    /// The file (none for a database in memory).
    package var namespace: String? { isMemory || path.isEmpty ? nil : path }

    package func connect(_ role: ConnectionRole) throws -> any EngineConnection {
        try SQLiteConnection(path: path, readOnly: readOnly, uri: isURI, role: role)
    }
}

/// A directory made for one database (``DatabaseLocation/temporary``), removed with everything
/// in it when this object goes: when the `Database` that opened it is released.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init(path: String) { self.path = path }

    deinit {
        // The connections may still be closing (they are released with the database): an open
        // file's name can be removed, and SQLite creates no file in a directory that is gone.
        try? FileManager.default.removeItem(atPath: path)
    }
}
