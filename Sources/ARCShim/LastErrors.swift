@_spi(Engines) import ARCore
// The last error messages: per thread, like errno.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The last error message of each database, kept per thread: a message one thread reads is
/// never overwritten or freed by a failure on another thread. Key 0 holds the message of
/// calls without a database (ar_open, NULL handles). A thread's messages are freed when it
/// exits; ar_close drops the closing thread's message for that database.
enum LastErrors {
    /// One thread's messages, by database serial.
    private final class Table {
        var messages: [UInt64: KeptBytes] = [:]
        /// The error behind each message, when it was one (for ar_db_retrying).
        var errors: [UInt64: any Error] = [:]
    }

    private static let tables = PerThread { Table() }

    private static let serials = Atomic<UInt64>(0)

    /// A number for a new database's messages, never reused (0 is for calls without one).
    static func newSerial() -> UInt64 { serials.add(1, ordering: .relaxed).newValue }

    /// The calling thread's table, made on first use.
    private static var table: Table { tables.withValue { $0 } }

    /// Keeps `message` as the calling thread's last error for `database`, and the `error` it
    /// describes (`nil`: a message of the shim's own).
    static func set(_ message: String, for database: UInt64, error: (any Error)? = nil) {
        let table = table
        let kept = table.messages[database] ?? KeptBytes()
        _ = kept.set(message)
        table.messages[database] = kept
        table.errors[database] = error
    }

    /// The error behind the calling thread's last message for `database`, if it was one.
    static func error(for database: UInt64) -> (any Error)? {
        table.errors[database]
    }

    /// The calling thread's last error for `database`, or "".
    static func message(for database: UInt64) -> UnsafePointer<CChar> {
        (table.messages[database] ?? empty).pointer
    }

    /// Drops the calling thread's message for a database being closed.
    static func forget(_ database: UInt64) {
        table.messages[database] = nil
        table.errors[database] = nil
    }

    private static let empty = KeptBytes()
}
