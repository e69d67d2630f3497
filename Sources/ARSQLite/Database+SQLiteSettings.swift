@_spi(Engines) import ARCore
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

    /// Whether ``keepSQLiteMutexes()`` was called.
    static let keepsMutexes = Atomic<Bool>(false)

    /// Leaves SQLite's own mutexes in place.
    ///
    /// Before its first SQLite connection opens, the library gives SQLite mutexes that spin
    /// briefly before they sleep (glibc's adaptive pthread mutexes, through
    /// `sqlite3_config(SQLITE_CONFIG_MUTEX, …)`); SQLite's own sleep in the kernel at once.
    /// Threads that read one database through connections of their own meet on one SQLite
    /// mutex (the file's shared-memory lock) at the start and end of every read transaction.
    /// A thread that sleeps there is woken late, on a virtual machine especially, and a
    /// reader that finds no other reader inside a transaction pays two `fcntl` lock calls:
    /// measured on a 2-core virtual machine, two threads reading by id did 1.0× one thread's
    /// reads per second with SQLite's mutexes, and 3–4× with these. Every user of SQLite
    /// in the process gets them; they are mutexes all the same, and only their wait differs.
    /// Elsewhere than on glibc, SQLite's own stay.
    ///
    /// A program that wants SQLite's own calls this before it opens its first ``Database``;
    /// called later, it changes nothing. If the program (or another library) initialized
    /// SQLite before the library's first connection, the library leaves the mutexes as it
    /// found them.
    public static func keepSQLiteMutexes() {
        keepsMutexes.store(true, ordering: .relaxed)
    }

    /// Whether SQLite in this process uses the library's adaptive mutexes (see
    /// ``keepSQLiteMutexes()``): `false` after that call, where the platform has none, or when
    /// SQLite was initialized before the library's first connection. Asking opens no
    /// connection, but applies the library's settings if none has yet, and initializes SQLite.
    public static var sqliteMutexesAreAdaptive: Bool { SQLiteConnection.usesSpinningMutexes }
}
