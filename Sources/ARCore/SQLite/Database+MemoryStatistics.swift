import Synchronization

extension Database {
    /// Whether ``keepSQLiteMemoryStatistics()`` was called.
    static let keepsMemoryStatistics = Atomic<Bool>(false)

    /// Leaves SQLite's process-wide memory statistics on.
    ///
    /// Before its first SQLite connection opens, the library turns SQLite's memory
    /// statistics off (`sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)`): with them on, every
    /// allocation SQLite makes takes one global mutex, which costs a thread reading in a
    /// loop 10–18% of its reads per second. With them off, `sqlite3_memory_used()` and
    /// `sqlite3_memory_highwater()` report 0 and a soft heap limit is not enforced, for
    /// every user of SQLite in the process.
    ///
    /// A program that relies on those calls keeps the statistics by calling this before it
    /// opens its first ``Database``; called later, it changes nothing. If the program (or
    /// another library) initialized SQLite before the library's first connection, the
    /// library leaves the setting as it found it.
    public static func keepSQLiteMemoryStatistics() {
        keepsMemoryStatistics.store(true, ordering: .relaxed)
    }
}
