@_spi(Engines) import ARCore
/// SQLite, in a file or in memory: one writer connection and, for a file opened for writing,
/// up to four reader connections (WAL lets them read while the writer writes).
package struct SQLiteEngine: DatabaseEngine {
    /// The file path, an SQLite URI filename, or `:memory:`.
    package let path: String
    package let isURI: Bool
    package let isMemory: Bool
    package let readOnly: Bool
    package let notes: [String]

    /// How many reader connections a file database opens at most.
    package static let maximumReaders = 4

    package init(path: String, isURI: Bool = false, isMemory: Bool = false, readOnly: Bool = false, notes: [String] = []) {
        self.path = path
        self.isURI = isURI
        self.isMemory = isMemory
        self.readOnly = readOnly
        self.notes = notes
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
