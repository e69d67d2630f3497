#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calling thread, as a number: its `pthread_t` (an integer on Linux, a pointer on
/// Darwin), unique among running threads.
package var currentThreadNumber: UInt {
    #if canImport(Darwin)
    UInt(bitPattern: pthread_self())
    #else
    UInt(pthread_self())
    #endif
}

// The library's one kind of lock: a pthread mutex.
//
// Why not `Synchronization.Mutex`: on Linux its contended path hands the lock over with
// futex system calls inside the (uninstrumented) Synchronization library, so the thread
// sanitizer does not see one thread's unlock happen before another's lock, and reports
// correct Mutex-guarded state as racing whenever two threads actually collide (measured:
// 3–8 reports per run of a trivially correct test; uncontended, none). pthread mutexes are
// intercepted by the sanitizer, so `make test-tsan` needs no suppression and still reports
// real races. The cost: a pthread mutex's lock and unlock take several times Mutex's (see
// Benchmarks/README.md, Hot-path notes), with the state in its own allocation (a class
// `var` would add a runtime exclusivity check per call).

/// The size of a cache line, the unit in which cores pass memory between them (64 bytes on
/// the x86-64 and arm64 processors the library runs on; Apple's M-series pass 128, of which
/// this keeps half apart).
package let cacheLineSize = 64

/// A cache line's worth of nothing: laid between stored properties, it keeps those before it
/// and those after it on different cache lines (see ``allocateMutex()``).
package typealias CacheLinePadding = (Int, Int, Int, Int, Int, Int, Int, Int)

/// A ``CacheLinePadding`` value.
package let cacheLinePadding: CacheLinePadding = (0, 0, 0, 0, 0, 0, 0, 0)

/// A pthread mutex on cache lines of its own, uninitialized.
///
/// A mutex allocated as any other small value lies beside whatever was allocated before and
/// after it: taking it on every save (the writer's, the observers') writes the line, and
/// every core that reads a neighbour on that line (a reader pool's slots, a database's
/// fields) then misses it and fetches it again. Give it back with `deallocate()`.
func allocateMutex() -> UnsafeMutablePointer<pthread_mutex_t> {
    let size = (MemoryLayout<pthread_mutex_t>.size + cacheLineSize - 1) / cacheLineSize * cacheLineSize
    return UnsafeMutableRawPointer.allocate(byteCount: size, alignment: cacheLineSize)
        .bindMemory(to: pthread_mutex_t.self, capacity: 1)
}

/// A value guarded by a mutex.
///
/// ```swift
/// private static let cache = Lock<[String: Int]>([:])
/// let hit = cache.withLock { $0["key"] }
/// ```
/// Not re-entrant: calling `withLock` on the same lock inside `body` deadlocks.
package final class Lock<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only reached inside `withLock`, which holds `mutex`.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let state: UnsafeMutablePointer<State>

    /// - Parameters:
    ///   - initialState: the state guarded.
    ///   - cacheLineAligned: whether the mutex lies on cache lines of its own (see
    ///     ``allocateMutex()``): `false` for a short-lived lock made per call, which no other
    ///     core keeps reading, where the aligned allocation would cost more than it saves.
    package init(_ initialState: State, cacheLineAligned: Bool = true) {
        mutex = cacheLineAligned ? allocateMutex() : .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed (\(status))")
        state = .allocate(capacity: 1)
        state.initialize(to: initialState)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` with the state, holding the lock.
    @inlinable
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }
}

/// A recursive mutex with no state of its own: the thread holding it may take it again
/// (a transaction's thread saves and fetches inside its own transaction). What it guards
/// is reached by the holder directly; hand out no `inout` access across re-entry.
package final class RecursiveLock: @unchecked Sendable {
    // @unchecked Sendable: a pthread mutex is made to be shared between threads.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = allocateMutex()
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        defer { pthread_mutexattr_destroy(&attributes) }
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        let status = pthread_mutex_init(mutex, &attributes)
        precondition(status == 0, "pthread_mutex_init failed (\(status))")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Takes the lock (again, if the calling thread holds it).
    @inlinable
    package func lock() { pthread_mutex_lock(mutex) }

    /// Gives back one level of ``lock()``.
    @inlinable
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Takes the lock if no other thread holds it: `false` when one does.
    @inlinable
    package func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }
}

/// A value guarded by a mutex, with a condition variable to wait on until the value allows
/// a thread to go on (a free connection in a pool).
package final class ConditionLock<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only reached inside `withLock`, which holds `mutex`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private let state: UnsafeMutablePointer<State>
    /// How many threads wait on the condition (changed and read holding `mutex`), so that
    /// ``withLockSignallingWaiters(_:)`` wakes nobody when nobody waits.
    private let waiters: UnsafeMutablePointer<Int>

    package init(_ initialState: State) {
        mutex = allocateMutex()
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        waiters = .allocate(capacity: 1)
        waiters.initialize(to: 0)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        defer { pthread_condattr_destroy(&attributes) }
        #if canImport(Glibc)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        state = .allocate(capacity: 1)
        state.initialize(to: initialState)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        waiters.deallocate()
    }

    /// Runs `body` with the state, holding the lock.
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }

    /// Runs `body` with the state, holding the lock, then wakes every waiting thread, if any
    /// waits (``signalAll()`` without the system call when none does): a waiter counts itself
    /// holding the lock before it waits, so one that waits for `body`'s change is seen here.
    package func withLockSignallingWaiters(_ body: (inout State) -> Void) {
        pthread_mutex_lock(mutex)
        body(&state.pointee)
        let waiting = waiters.pointee > 0
        pthread_mutex_unlock(mutex)
        if waiting { pthread_cond_broadcast(condition) }
    }

    /// Waits until `body` returns a value (it runs with the state, holding the lock, first at
    /// once and then each time another thread calls ``signalAll()``), or until `timeout`
    /// passes: then `nil`.
    package func wait<R>(timeout: Duration, _ body: (inout State) throws -> R?) rethrows -> R? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        // The deadline is computed only when the state does not serve at once (a clock read
        // and a duration's components cost more than a pool's check-out that does not wait).
        if let result = try body(&state.pointee) { return result }
        var deadline = timespec()
        #if canImport(Glibc)
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        #else
        clock_gettime(CLOCK_REALTIME, &deadline)
        #endif
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
        deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        waiters.pointee += 1
        defer { waiters.pointee -= 1 }
        while true {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT {
                return try body(&state.pointee)
            }
            if let result = try body(&state.pointee) { return result }
        }
    }

    /// Waits until `body` returns a value (it runs with the state, holding the lock, first at
    /// once and then each time another thread signals).
    package func waitForever<R>(_ body: (inout State) throws -> R?) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if let result = try body(&state.pointee) { return result }
        waiters.pointee += 1
        defer { waiters.pointee -= 1 }
        while true {
            pthread_cond_wait(condition, mutex)
            if let result = try body(&state.pointee) { return result }
        }
    }

    /// Wakes one thread waiting in ``waitForever(_:)`` or ``wait(timeout:_:)``.
    package func signal() {
        pthread_cond_signal(condition)
    }

    /// Wakes every thread waiting in ``wait(timeout:_:)`` to look at the state again.
    package func signalAll() {
        pthread_cond_broadcast(condition)
    }
}

/// Blocks the calling thread for `duration` (as Foundation's `Thread.sleep(forTimeInterval:)`
/// did: the whole duration, through signals).
package func sleepThread(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    guard seconds > 0 || attoseconds > 0 else { return }
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}
