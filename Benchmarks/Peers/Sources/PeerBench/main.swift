// Issue 35, point 3: the same PostgreSQL work through raw libpq (binary, prepared once), this
// library, raw PostgresNIO and Fluent, on one server, in one run: client instructions per
// operation (callgrind, every thread) and wall-clock medians, with a verdict per row that the
// library costs less than PostgresNIO and Fluent.
//
//   PeerBench [--rows N] [--groups G] [--rounds R] [--workloads w,…] [--peer-ops-divisor D]
//             [--no-count] [--no-wall] [--markdown PATH]
//   PeerBench child SIDE WORKLOAD OPS [--rows N] [--groups G]      (what a counted run executes)
//
// The server: AR_TEST_POSTGRES, a libpq key=value connection string whose host is a Unix socket
// directory (scripts/with-postgres.sh sets it).
import Foundation

// The main thread waits on a semaphore and exits itself, rather than parking in the concurrency
// runtime's main loop (an async top level): valgrind 3.19 crashes on the latter.
final class ExitStatus: @unchecked Sendable {  // written once by the task, read after the semaphore
    var value: Int32 = 2
}
let status = ExitStatus()
let finished = DispatchSemaphore(value: 0)
Task.detached {
    do {
        status.value = try await runBenchmark()
    } catch {
        log("\(error)")
    }
    finished.signal()
}
finished.wait()
exit(status.value)
