import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ActiveRecord

/// The pool's holds (issue 35): a connection's holds are counted in the connection itself, the
/// thread's storage chains the connections it holds on several pools, and a connection given
/// back wakes a waiting thread (only when one waits).
@Suite struct PoolHoldTests {
    /// A pool of one connection: a thread that finds it held by another's transaction waits,
    /// and is woken when the transaction gives it back, long before its wait would run out.
    @Test(.enabled(if: TestEngine.postgresConnection != nil)) func aConnectionGivenBackWakesTheThreadWaitingForIt() throws {
        try withDatabaseLocation(.postgres) { place in
            let connection = String(place.argument.dropFirst("postgres:".count))
            let db = try Database(.postgres(connection, maximumConnections: 1, connectionWait: .seconds(20)))
            try db.use { try Tally.destroyAll() }
            let inside = DispatchSemaphore(value: 0)
            let waited = Mutex<(Duration?, String?)>((nil, nil))
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                _ = try? db.use {
                    try db.transaction {
                        try Tally.create(["worker": 1])
                        inside.signal()
                        Thread.sleep(forTimeInterval: 0.3)
                    }
                }
            }
            #expect(inside.wait(timeout: .now() + 20) == .success)
            DispatchQueue.global().async(group: group) {
                let clock = ContinuousClock(), start = clock.now
                do {
                    try db.use { _ = try Tally.create(["worker": 2]) }
                    waited.withLock { $0.0 = clock.now - start }
                } catch {
                    waited.withLock { $0.1 = "\(error)" }
                }
            }
            group.wait()
            let (elapsed, failure) = waited.withLock { $0 }
            #expect(failure == nil)
            #expect(elapsed.map { $0 < .seconds(10) } == true, "woken at once, not at the end of its wait: \(String(describing: elapsed))")
            try db.use { () throws in #expect(try Tally.count() == 2) }
        }
    }

    /// A thread holds connections of two pools at once (a transaction on each database, one
    /// inside the other); each goes back to its own pool when its transaction ends, in either
    /// order of the databases, and the next holds on each find their pool's connection free.
    @Test(.enabled(if: TestEngine.postgresConnection != nil)) func holdsOnTwoPoolsAtOnceGoBackToTheirOwnPools() throws {
        try withDatabaseLocation(.postgres) { place in
            let connection = String(place.argument.dropFirst("postgres:".count))
            let first = try Database(.postgres(connection, maximumConnections: 1, connectionWait: .milliseconds(500)))
            let second = try Database(.postgres(connection, maximumConnections: 1, connectionWait: .milliseconds(500)))
            try first.use { try Tally.destroyAll() }
            for round in 0..<3 {
                try first.use {
                    try first.transaction {
                        try Tally.create(["worker": 1, "n": round])
                        try second.use {
                            try second.transaction {
                                try Tally.create(["worker": 2, "n": round])
                                // Back on the first pool's connection, inside the second's hold.
                                try first.use { _ = try Tally.create(["worker": 3, "n": round]) }
                            }
                        }
                        try Tally.create(["worker": 4, "n": round])
                    }
                }
                // Each pool's one connection is free again, for another thread too.
                let counted = Mutex<[Int]>([])
                let group = DispatchGroup()
                for db in [first, second] {
                    DispatchQueue.global().async(group: group) {
                        let count = (try? db.use { try Tally.count() }) ?? -1
                        counted.withLock { $0.append(count) }
                    }
                }
                group.wait()
                #expect(counted.withLock { $0 } == [4 * (round + 1), 4 * (round + 1)])
            }
        }
    }
}
