@_spi(Engines) import ARCore
// ar_version, opening and closing, errors, memory, transactions.
import ActiveRecord
import ActiveRecordPostgreSQL
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

private let version: StaticString = "0.2.0"

/// The library's version, e.g. "0.2.0". A static string: do not free it.
@c public func ar_version() -> UnsafePointer<CChar> {
    UnsafeRawPointer(version.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// Opens (creating if missing) the SQLite database at `path`; ":memory:" for a private
/// in-memory database. A `postgresql://` (or `postgres://`) URL opens that PostgreSQL
/// database instead, as libpq reads the URL (user, password, host or socket directory in
/// `?host=`, port, database, parameters). On success `*database_out` is a handle to
/// release with ar_close; on failure it is NULL and ar_last_error(NULL) says why.
@c public func ar_open(_ path: UnsafePointer<CChar>?, _ database_out: UnsafeMutablePointer<OpaquePointer?>?) -> ar_result {
    database_out?.pointee = nil
    guard let path, let database_out else { return failWithoutDatabase(.misuse, "ar_open: path and database_out must not be NULL") }
    do {
        let text = try utf8Text(path, "the path", in: "ar_open")
        let location: DatabaseLocation = if text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") {
            .postgres(text)
        } else if text == ":memory:" {
            .inMemory
        } else {
            .file(text)
        }
        let database = try Database(location)
        database.logger = nil
        database_out.pointee = DatabaseHandle(database).retainedPointer()
        return .ok
    } catch {
        return failWithoutDatabase(ar_result(error), describe(error))
    }
}

/// Closes a database handle from ar_open. Models, records and queries made from it
/// stay valid to release, but should be released first. NULL is ignored; a handle closed
/// already (or not a database handle) is refused: nothing is closed, and
/// ar_last_error(NULL) says so.
@c public func ar_close(_ database: OpaquePointer?) {
    guard let handle = Handle.takeBack(database, as: DatabaseHandle.self, in: "ar_close") else { return }
    LastErrors.forget(handle.serial)
}

/// The message of the calling thread's last failed call on `database` (NULL: of its last
/// failed call without a database, such as ar_open). Each thread has its own, like errno.
/// Owned by the library: valid until the thread's next failing call on the same database.
/// Never NULL ("" when there was none). A closed database handle gives the message of the
/// calls without a database (such as a refused second ar_close).
@c public func ar_last_error(_ database: OpaquePointer?) -> UnsafePointer<CChar> {
    // The registry, not the pointer, says whether it is a database: a closed one's memory may be freed.
    guard Handle.heldKind(database) == .database else { return LastErrors.message(for: 0) }
    return LastErrors.message(for: Handle.borrow(database, as: DatabaseHandle.self) { $0.serial } ?? 0)
}

/// Frees memory the library gave to the caller (the strings of ar_record_copy_text).
/// NULL is ignored.
@c public func ar_free(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}

/// Begins a transaction; inside one, a savepoint (to any depth). End it with
/// ar_commit or ar_rollback on the same thread.
@c public func ar_begin(_ database: OpaquePointer?) -> ar_result {
    guard let handle = Handle.from(database, as: DatabaseHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_begin: not a database handle")
    }
    return handle.run { try handle.database.beginTransaction(); return .ok }
}

/// Commits the innermost transaction (releases its savepoint).
@c public func ar_commit(_ database: OpaquePointer?) -> ar_result {
    guard let handle = Handle.from(database, as: DatabaseHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_commit: not a database handle")
    }
    return handle.run { try handle.database.commitTransaction(); return .ok }
}

/// Runs body(database, context) in a transaction, and runs the whole transaction again when
/// it fails with a retryable error (a conflict, a busy database, a lost connection, a server
/// shutting down or replaced by a failover), up to attempts times in all, after a backoff
/// (50 ms doubling to 2 s, with jitter). body returns AR_OK to commit; any other result rolls
/// the attempt back: the error of the library call that failed decides whether it is tried
/// again (AR_RETRY from body itself asks for another attempt). Exactly once on PostgreSQL: an
/// attempt whose COMMIT was lost in flight and was committed is not run again (see the Swift
/// Database.retrying). body must not call ar_begin without its ar_commit or ar_rollback, nor
/// end the transaction it runs in; a nested ar_begin is a savepoint. Not inside a transaction
/// (AR_MISUSE). Returns AR_OK, or the result of the last attempt, with ar_last_error set.
@c public func ar_db_retrying(
    _ database: OpaquePointer?, _ attempts: Int32,
    _ body: (@convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> ar_result)?, _ context: UnsafeMutableRawPointer?
) -> ar_result {
    guard let handle = Handle.from(database, as: DatabaseHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_db_retrying: not a database handle")
    }
    guard let body else { return handle.fail(.misuse, "ar_db_retrying: body is NULL; pass the function to run") }
    return handle.run {
        // A Bool rather than nothing: the runtime instantiates the retry's generic types for it
        // without the uninitialised reads memcheck reports for the empty tuple's.
        _ = try handle.database.retrying(attempts: Int(attempts)) { () throws -> Bool in
            let result = body(database, context)
            guard result != .ok else { return true }
            // The error of the call that failed, when body passes its result on.
            if let error = LastErrors.error(for: handle.serial), ar_result(error) == result { throw error }
            throw ActiveRecordError(result.code, "the ar_db_retrying body returned \(result.name)")
        }
        return .ok
    }
}

/// Rolls back the innermost transaction (or savepoint) alone.
@c public func ar_rollback(_ database: OpaquePointer?) -> ar_result {
    guard let handle = Handle.from(database, as: DatabaseHandle.self) else {
        return failWithoutDatabase(.misuse, "ar_rollback: not a database handle")
    }
    return handle.run { try handle.database.rollbackTransaction(); return .ok }
}
