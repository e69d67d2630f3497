import ARSQLite3
@_spi(Engines) import ARCore

// Commits made by other connections to the same file (other processes, other `Database`
// values), for observers: SQLite says nothing of them by itself, but `PRAGMA data_version`
// on a connection changes when another connection has committed since its last read, and
// never for the connection's own commits. The database reads it on its writer, on a timer,
// while it has observers (see ``SQLiteEngine/commitPollInterval``): the writer's own commits
// are published by the library already, and so are never heard twice.

extension SQLiteEngine {
    /// How often an observed file database looks for other connections' commits: the longest
    /// an observer waits to hear of one, beyond its fetch. An idle database's poll is the
    /// writer's lock tried and a one-row pragma read (a read transaction begun and ended: the
    /// file's locks, and the WAL index in shared memory; measured idle, about 0.2% of a core).
    package static let commitPollInterval: Duration = .milliseconds(50)

    /// ``commitPollInterval`` for a file; never for a database in memory (no other connection
    /// can reach it).
    package var commitPollInterval: Duration? { isMemory ? nil : Self.commitPollInterval }
}

extension SQLiteConnection {
    /// `PRAGMA data_version`: changes when another connection has committed to the file since
    /// this connection last read it (never for this connection's own commits); `nil` when it
    /// cannot be read (the file is locked by a writer in recovery, or the connection failed).
    package var commitVersion: Int64? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "PRAGMA data_version", -1, &statement, nil) == SQLITE_OK, let statement else {
            return nil
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { return nil }
        return sqlite3_column_int64(statement, 0)
    }
}
