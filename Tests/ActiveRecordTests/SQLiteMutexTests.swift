@_spi(Engines) import ARCore
import ActiveRecord
import ARSQLite3
import Dispatch
import Foundation
import Synchronization
import Testing

/// The mutexes the library gives SQLite before it initializes (Sources/ARSQLiteMutexes):
/// in force in this process (nothing here keeps SQLite's own), and mutexes all the same,
/// tested through SQLite's public mutex API, which calls them.
@Suite("SQLite's mutexes: adaptive, and exclusive")
struct SQLiteMutexTests {
    /// An SQLite mutex pointer handed to another thread (the test joins it before going on).
    struct Handle: @unchecked Sendable { let mutex: OpaquePointer }

    init() throws {
        // SQLite initializes at the first connection, with the library's settings.
        _ = try Database(.inMemory)
    }

    @Test func theLibrarysMutexesAreInForce() {
        #expect(Database.sqliteMutexesAreAdaptive)
        // Once SQLite has initialized, asking to keep its own changes nothing.
        Database.keepSQLiteMutexes()
        #expect(Database.sqliteMutexesAreAdaptive)
    }

    @Test func aFastMutexExcludesAnotherThreadUntilLeft() throws {
        let mutex = try #require(sqlite3_mutex_alloc(SQLITE_MUTEX_FAST))
        defer { sqlite3_mutex_free(mutex) }
        sqlite3_mutex_enter(mutex)
        #expect(tryFromAnotherThread(Handle(mutex: mutex)) == SQLITE_BUSY)
        sqlite3_mutex_leave(mutex)
        #expect(tryFromAnotherThread(Handle(mutex: mutex)) == SQLITE_OK)
    }

    @Test func aRecursiveMutexIsEnteredTwiceAndHeldUntilLeftTwice() throws {
        let mutex = try #require(sqlite3_mutex_alloc(SQLITE_MUTEX_RECURSIVE))
        defer { sqlite3_mutex_free(mutex) }
        sqlite3_mutex_enter(mutex)
        #expect(sqlite3_mutex_try(mutex) == SQLITE_OK)  // the same thread again
        sqlite3_mutex_leave(mutex)
        #expect(tryFromAnotherThread(Handle(mutex: mutex)) == SQLITE_BUSY)
        sqlite3_mutex_leave(mutex)
        #expect(tryFromAnotherThread(Handle(mutex: mutex)) == SQLITE_OK)
    }

    @Test func staticMutexesAreOnePerNumberAndUnknownKindsAreRefused() {
        let first = sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_APP1)
        #expect(first != nil)
        #expect(sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_APP1) == first)
        #expect(sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_VFS3) != nil)
        #expect(sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_VFS3) != first)
        #expect(sqlite3_mutex_alloc(99) == nil)
    }

    /// Four threads add to one plain counter under one fast mutex: no increment is lost.
    @Test func aFastMutexSerializesFourThreads() throws {
        let handle = Handle(mutex: try #require(sqlite3_mutex_alloc(SQLITE_MUTEX_FAST)))
        defer { sqlite3_mutex_free(handle.mutex) }
        final class Counter: @unchecked Sendable { var value = 0 }
        let counter = Counter()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<50_000 {
                sqlite3_mutex_enter(handle.mutex)
                counter.value += 1
                sqlite3_mutex_leave(handle.mutex)
            }
        }
        #expect(counter.value == 200_000)
    }

    /// `sqlite3_mutex_try` on another thread (entering and leaving when it succeeds).
    private func tryFromAnotherThread(_ handle: Handle) -> Int32 {
        let result = Mutex<Int32>(-1)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let code = sqlite3_mutex_try(handle.mutex)
            if code == SQLITE_OK { sqlite3_mutex_leave(handle.mutex) }
            result.withLock { $0 = code }
            done.signal()
        }.start()
        done.wait()
        return result.withLock { $0 }
    }
}
