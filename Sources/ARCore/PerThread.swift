import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The library's thread-local storage: one kind for values, two for words. Every per-thread
// use goes through these three (no raw pthread key elsewhere).

/// A word of which each thread has its own (0 until the thread sets it), with nothing to
/// release when the thread ends: a hint, or the address of something that outlives threads.
/// One `pthread_getspecific` a read, without the generic box of ``PerThread``.
package struct PerThreadWord: @unchecked Sendable {
    // @unchecked Sendable: each thread reads and writes only its own slot of the key.
    private let key: pthread_key_t

    package init() {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed (\(status))")
        self.key = key
    }

    /// The calling thread's word.
    package var value: UInt {
        @inline(__always) get { UInt(bitPattern: pthread_getspecific(key)) }
        @inline(__always) nonmutating set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
    }
}

/// A ``PerThreadWord`` whose key is made on first use: as a `static let` its initial value is
/// a constant, so reading it costs no `swift_once` (a `PerThreadWord`'s key is made by its
/// initializer, which a `static let` runs through `swift_once` on every read). For the reads
/// a write does every time (``Database``'s current one, issue 35).
package struct LazyPerThreadWord: ~Copyable, Sendable {
    /// The key plus one; 0 until made.
    private let key = Atomic<UInt>(0)

    package init() {}

    /// The calling thread's word.
    package var value: UInt {
        @inline(__always) get { UInt(bitPattern: pthread_getspecific(madeKey)) }
        @inline(__always) nonmutating set { pthread_setspecific(madeKey, UnsafeRawPointer(bitPattern: newValue)) }
    }

    @inline(__always)
    private var madeKey: pthread_key_t {
        let stored = key.load(ordering: .acquiring)
        return stored != 0 ? pthread_key_t(truncatingIfNeeded: stored &- 1) : makeKey()
    }

    /// Makes the key (once: a thread that loses the race deletes its own and takes the winner's).
    @inline(never)
    private func makeKey() -> pthread_key_t {
        var made = pthread_key_t()
        let status = pthread_key_create(&made, nil)
        precondition(status == 0, "pthread_key_create failed (\(status))")
        let (exchanged, original) = key.compareExchange(
            expected: 0, desired: UInt(truncatingIfNeeded: made) &+ 1, ordering: .acquiringAndReleasing)
        if exchanged { return made }
        pthread_key_delete(made)
        return pthread_key_t(truncatingIfNeeded: original &- 1)
    }
}

/// A value of which each thread has its own copy, made on the thread's first use and
/// released when the thread ends: a cache that threads never contend for (no lock, one
/// `pthread_getspecific` per use).
///
/// ```swift
/// private static let shapes = PerThread { [String: Int]() }
/// let hit = shapes.withValue { $0["key"] }
/// ```
/// Not re-entrant: calling `withValue` on the same instance inside `body` is refused.
///
/// Public only as SPI, with ``withValue(_:)`` inlinable, so that the other modules' caches run
/// it specialised for their `Value` (this toolchain inlines no `package` function across modules).
@_spi(Engines) public final class PerThread<Value>: @unchecked Sendable {
    // @unchecked Sendable: a thread reaches only its own box, through its own key slot.
    @usableFromInline
    final class Box {
        // Unchecked exclusivity: a box is reached by its own thread only, and `withValue`'s
        // flag refuses re-entry; the dynamic checks would run on every look-up
        // (see Benchmarks/README.md, Hot-path notes).
        @exclusivity(unchecked) @usableFromInline var value: Value
        @exclusivity(unchecked) @usableFromInline var isInUse = false
        @usableFromInline init(_ value: Value) { self.value = value }
    }

    @usableFromInline let key: pthread_key_t
    @usableFromInline let make: @Sendable () -> Value

    package init(_ make: @escaping @Sendable () -> Value) {
        self.make = make
        var key = pthread_key_t()
        // The destructor runs when a thread with a value ends: it releases the thread's box.
        let status = pthread_key_create(&key) { pointer in
            guard let pointer = pointer as UnsafeMutableRawPointer? else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        precondition(status == 0, "pthread_key_create failed (\(status))")
        self.key = key
    }

    // A per-thread value lives as long as its thread: instances are meant to be `static`,
    // and deleting the key would leak the boxes of threads still running.

    /// Runs `body` with the calling thread's value. Inlinable, so that a caller in another
    /// module runs it specialised for its `Value` (unspecialised, every call would go through
    /// the generic metadata; see Benchmarks/README.md, Hot-path notes).
    @inlinable
    public func withValue<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        guard let pointer = pthread_getspecific(key) else { return try withNewValue(body) }
        return try Unretained<Box>(address: pointer).with { box in
            precondition(!box.isInUse, "PerThread.withValue re-entered on one thread")
            box.isInUse = true
            defer { box.isInUse = false }
            return try body(&box.value)
        }
    }

    /// ``withValue(_:)`` on a thread that has no value yet: makes it.
    @usableFromInline
    func withNewValue<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        let box = Box(make())
        pthread_setspecific(key, Unmanaged.passRetained(box as AnyObject).toOpaque())
        box.isInUse = true
        defer { box.isInUse = false }
        return try body(&box.value)
    }
}
