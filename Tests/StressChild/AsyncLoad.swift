import ActiveRecord
import ARCore  // fixedPoint(decimals:), startThreadOrStop(name:for:_:), trimmingWhitespace
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

final class LoadRow: Model {
    @Column var n: Int = 0
    @Column var label: String = ""
}

/// The process's thread count, from /proc/self/status.
func threadCount() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
        return Int(line.dropFirst("Threads:".count).trimmingWhitespace) ?? -1
    }
    return -1
}

/// `tasks` concurrent tasks doing an awaited find and an awaited save each.
struct AsyncLoad: Sendable {
    let database: Database
    let tasks: Int

    func run() -> String {
        let peak = Atomic<Int>(0)
        let sampling = Atomic<Bool>(true)
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<String>("")
        // The sampler runs from before the baseline, so that it counts in both.
        startThreadOrStop(name: "ar.sampler", for: "the thread-count sampler") {
            while sampling.load(ordering: .relaxed) {
                let now = threadCount()
                if now > peak.load(ordering: .relaxed) { peak.store(now, ordering: .relaxed) }
                usleep(2_000)
            }
            done.signal()
        }
        Task.detached {
            let outcome: String
            do {
                // Warm-up: the table, a few rows, the cooperative pool's threads, and one call of each lane.
                let seeded = try await database.write {
                    for n in 0..<100 { try LoadRow.create(["n": n, "label": "seed"]) }
                    return try LoadRow.count()
                }
                _ = try await LoadRow.find(1, on: database)
                usleep(50_000)
                let baseline = threadCount()
                peak.store(0, ordering: .relaxed)
                let (completed, failed) = await withTaskGroup(of: Bool.self) { group in
                    for n in 0..<tasks {
                        group.addTask {
                            do {
                                guard let found = try await LoadRow.find(Int64(n % seeded + 1), on: database) else { return false }
                                let row = LoadRow()
                                row.n = found.n
                                row.label = "task \(n)"
                                try await row.save(on: database)
                                return row.id != nil
                            } catch {
                                return false
                            }
                        }
                    }
                    var completed = 0, failed = 0
                    for await ok in group { if ok { completed += 1 } else { failed += 1 } }
                    return (completed, failed)
                }
                let saved = try await LoadRow.query().where("label <> %@", "seed").count(on: database)
                outcome = "completed \(completed) failed \(failed) saved \(saved) baseline \(baseline) "
                    + "peak \(peak.load(ordering: .relaxed)) bound \(database.asyncThreadLimit)"
            } catch {
                outcome = "error: \(error)"
            }
            result.withLock { $0 = outcome }
            sampling.store(false, ordering: .relaxed)
        }
        done.wait()
        return result.withLock { $0 }
    }
}

/// How long a cancelled task's query takes to stop (see `cancel-latency`).
struct CancelLatency: Sendable {
    let database: Database
    let rounds: Int
    let postgres: Bool

    func run() -> String {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<String>("")
        let sql = postgres
            ? "SELECT pg_sleep(60)"
            : "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT count(*) FROM c"
        Task.detached {
            var latencies: [Double] = []
            var outcome = ""
            for _ in 0..<rounds {
                let task = Task { try await database.read { try database.rows(sql).count } }
                try? await Task.sleep(for: .milliseconds(50))
                let start = ContinuousClock.now
                task.cancel()
                do {
                    _ = try await task.value
                    outcome = "error: the query was not cancelled"
                    break
                } catch is CancellationError {
                    let elapsed = ContinuousClock.now - start
                    latencies.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
                } catch {
                    outcome = "error: \(error)"
                    break
                }
            }
            if outcome.isEmpty {
                latencies.sort()
                let median = latencies[latencies.count / 2]
                outcome = "rounds \(latencies.count) median-ms \(median.fixedPoint(decimals: 2)) max-ms \(latencies.last!.fixedPoint(decimals: 2))"
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }
}

/// What an awaited find costs beside a synchronous one (see `async-overhead`).
struct AsyncOverhead: Sendable {
    let database: Database
    let finds: Int

    func run() -> String {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<String>("")
        Task.detached {
            do {
                try await database.write { for n in 0..<100 { try LoadRow.create(["n": n, "label": "seed"]) } }
                var sync: [Double] = [], awaited: [Double] = []
                for _ in 0..<5 {
                    let start = ContinuousClock.now
                    try database.use { for n in 0..<finds { _ = try LoadRow.find(Int64(n % 100 + 1)) } }
                    sync.append(microseconds(ContinuousClock.now - start) / Double(finds))
                    let awaitedStart = ContinuousClock.now
                    for n in 0..<finds { _ = try await LoadRow.find(Int64(n % 100 + 1), on: database) }
                    awaited.append(microseconds(ContinuousClock.now - awaitedStart) / Double(finds))
                }
                let s = sync.sorted()[2], a = awaited.sorted()[2]
                result.withLock {
                    $0 = "sync-us \(s.fixedPoint(decimals: 2)) awaited-us \(a.fixedPoint(decimals: 2)) "
                        + "difference-us \((a - s).fixedPoint(decimals: 2))"
                }
            } catch {
                result.withLock { $0 = "error: \(error)" }
            }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    private func microseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
    }
}

/// What read-your-writes costs a write on a database with replicas (see `replica-cost`): the
/// same creates, and creates each followed by a find, on a database without replicas and on one
/// whose replica is the same server (never behind: the cost is recording the primary's
/// position, and asking a replica's when the cached one is behind).
struct ReplicaCost {
    let plain: Database
    let replicated: Database
    let writes: Int

    func run() throws -> String {
        var rows: [String] = []
        for (name, work) in [("create", false), ("create+find", true)] {
            var plainTimes: [Double] = [], replicatedTimes: [Double] = []
            for _ in 0..<5 {
                plainTimes.append(try measure(plain, find: work))
                replicatedTimes.append(try measure(replicated, find: work))
            }
            let p = plainTimes.sorted()[2], r = replicatedTimes.sorted()[2]
            rows.append(
                "\(name): plain-us \(p.fixedPoint(decimals: 1)) replicas-us \(r.fixedPoint(decimals: 1)) "
                    + "ratio \((r / p).fixedPoint(decimals: 2))")
        }
        return rows.joined(separator: "\n")
    }

    private func measure(_ database: Database, find: Bool) throws -> Double {
        try database.use {
            let start = ContinuousClock.now
            for n in 0..<writes {
                let row = try LoadRow.create(["n": n, "label": "cost"])
                if find { _ = try LoadRow.find(row.id!) }
            }
            let elapsed = ContinuousClock.now - start
            return (Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(writes)
        }
    }
}
