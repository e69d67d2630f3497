import Synchronization

/// The library's one kind of lock: a value guarded by a mutex.
///
/// ```swift
/// private static let cache = Lock<[String: Int]>([:])
/// let hit = cache.withLock { $0["key"] }
/// ```
package final class Lock<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only reached inside `withLock`.
    private let mutex = Mutex<Void>(())
    private var state: State

    package init(_ state: State) { self.state = state }

    /// Runs `body` with the state, holding the lock.
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try mutex.withLock { _ in try body(&state) }
    }
}
