import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ActiveRecord

/// The pool's parked connection (issue 35): a connection given back while no thread waits is
/// kept outside the pool's lock for the next check-out. The pool's bounds, its wake-ups of
/// waiting threads and its settings stay as they were.
@Suite struct PoolParkingTests {
    /// Threads saving outside transactions, more threads than connections: every save is made,
    /// none runs out of its wait, and the server sees no more connections than the maximum.
    @Test(.enabled(if: TestEngine.postgresConnection != nil)) func savesOfManyThreadsOnFewConnectionsStayWithinTheMaximum() throws {
        try withDatabaseLocation(.postgres) { place in
            let application = "ar_parking_\(getpid())"
            let connection = String(place.argument.dropFirst("postgres:".count)) + " application_name=\(application)"
            let db = try Database(.postgres(connection, maximumConnections: 2, connectionWait: .seconds(20)))
            try db.use { try Tally.destroyAll() }
            let failures = Mutex<[String]>([])
            let group = DispatchGroup()
            for worker in 0..<6 {
                DispatchQueue.global().async(group: group) {
                    do {
                        try db.use { for n in 0..<150 { _ = try Tally.create(["worker": worker, "n": n]) } }
                    } catch {
                        failures.withLock { $0.append("worker \(worker): \(error)") }
                    }
                }
            }
            group.wait()
            #expect(failures.withLock { $0 } == [])
            try db.use {
                #expect(try Tally.count() == 6 * 150)
                let count =
                    try db.rows("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", [.text(application)])
                    .first?.first.flatMap { if case .integer(let n) = $0 { Int(n) } else { nil } } ?? -1
                #expect((1...2).contains(count), "the server saw \(count) connections of a pool of 2")
            }
        }
    }

    /// A pool of one connection, passed back and forth between a thread saving outside
    /// transactions (each save parks the connection) and one running transactions: each
    /// thread is woken when the other gives the connection back, never left waiting for its
    /// whole wait (which would throw `.busy`).
    @Test(.enabled(if: TestEngine.postgresConnection != nil)) func aThreadWaitingIsWokenWhileAnotherParksItsConnection() throws {
        try withDatabaseLocation(.postgres) { place in
            let connection = String(place.argument.dropFirst("postgres:".count))
            let db = try Database(.postgres(connection, maximumConnections: 1, connectionWait: .seconds(10)))
            try db.use { try Tally.destroyAll() }
            let failures = Mutex<[String]>([])
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                do {
                    try db.use { for n in 0..<300 { _ = try Tally.create(["worker": 1, "n": n]) } }
                } catch {
                    failures.withLock { $0.append("saving: \(error)") }
                }
            }
            DispatchQueue.global().async(group: group) {
                do {
                    try db.use {
                        for n in 0..<100 { try db.transaction { _ = try Tally.create(["worker": 2, "n": n]) } }
                    }
                } catch {
                    failures.withLock { $0.append("transactions: \(error)") }
                }
            }
            let clock = ContinuousClock(), start = clock.now
            group.wait()
            #expect(failures.withLock { $0 } == [])
            #expect(clock.now - start < .seconds(10), "no thread waited out its wait")
            try db.use { () throws in #expect(try Tally.count() == 400) }
        }
    }

    /// A setting made while a connection is parked (a tracer) applies to it before its next
    /// statement.
    @Test(.enabled(if: TestEngine.postgresConnection != nil)) func aSettingMadeWhileAConnectionIsParkedAppliesToIt() throws {
        try withDatabaseLocation(.postgres) { place in
            let connection = String(place.argument.dropFirst("postgres:".count))
            let db = try Database(.postgres(connection, maximumConnections: 1, connectionWait: .seconds(10)))
            try db.use {
                try Tally.destroyAll()
                _ = try Tally.create(["worker": 1])
            }
            let traced = Mutex<[String]>([])
            db.trace { sql in traced.withLock { $0.append(sql) } }
            try db.use { _ = try Tally.create(["worker": 2]) }
            #expect(traced.withLock { $0 }.contains { $0.hasPrefix("INSERT INTO \"Tally\"") })
        }
    }
}
