// The topology tests' writer (Tests/ActiveRecordTests/TopologyTests.swift, make test-topologies):
//
//     ActiveRecordStressChild topology-writer <connection> <writer> <rows> <start> [options]
//         waits until `start` (seconds since 1970), then saves `rows` rows (writer, seq) with
//         seq = 0..<rows, each in its own `database.retrying { }`, and prints one line per
//         acknowledged row: "ack <seq> <attempts> <seconds since 1970> <server port or 0>" (the
//         attempts counted from retrying's notices; the port, asked inside the transaction,
//         only when the row took more than one attempt). Then "codes <code> <n> ...": the
//         errors `retrying` retried, by code; and "done rows <n> retries <n> token-path <n>
//         reads <n> read-retries <n> behind <n> regressed <n> ahead <n> pid <pid>", where
//         token-path counts the calls whose COMMIT was lost but had committed: the next
//         attempt met the commit token and `retrying` returned without running the body again.
//         Exits 1 on an error that `retrying` did not retry or gave up on, printing it with
//         its isRetryable.
//     options:
//         --replicas <c1>|<c2>     the replicas' connection strings, '|'-separated
//         --transaction-pooling    the connection goes through pgbouncer in transaction pooling
//         --check-every <n>        after every n-th acknowledged row, count the writer's rows
//                                  (a read outside a transaction: a replica when there is one)
//                                  and compare with the rows acknowledged so far and with the
//                                  previous count: "behind" (fewer than acknowledged: a lost or
//                                  not-yet-visible write), "regressed" (fewer than the previous
//                                  read), "ahead" (more than acknowledged: a duplicate)
import ActiveRecord
import ActiveRecordPostgreSQL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Logging

/// A row of the topology tests: unique by (writer, seq) if written exactly once. The table has
/// no unique index on the pair, so that a duplicate would show as a second row.
final class TopologyWrite: Model {
    @Column var writer: Int = 0
    @Column var seq: Int = 0
}

struct TopologyWriter {
    var connection = ""
    var writer = 0
    var rows = 0
    var start = 0.0
    var replicas: [String] = []
    var transactionPooling = false
    var checkEvery = 0

    init(_ arguments: [String]) {
        guard arguments.count >= 6, let writer = Int(arguments[3]), let rows = Int(arguments[4]), let start = Double(arguments[5]) else {
            fail("usage: topology-writer <connection> <writer> <rows> <start> [--replicas c1|c2] [--transaction-pooling] [--check-every n]")
        }
        (connection, self.writer, self.rows, self.start) = (arguments[2], writer, rows, start)
        var options = arguments.dropFirst(6).makeIterator()
        while let option = options.next() {
            switch option {
            case "--replicas": replicas = (options.next() ?? "").split(separator: "|").map(String.init)
            case "--transaction-pooling": transactionPooling = true
            case "--check-every": checkEvery = Int(options.next() ?? "") ?? 0
            default: fail("topology-writer: unknown option \(option)")
            }
        }
    }

    func run() throws {
        let database = try Database(topologyLocation(connection, replicas: replicas, transactionPooling: transactionPooling))
        let retries = RetryNotices()
        database.logger = Logger(label: "topology-writer") { _ in retries }
        var output = "pid \(getpid())\n"
        var retriesInAll = 0, tokenPath = 0, reads = 0, readRetries = 0, behind = 0, regressed = 0, ahead = 0
        var lastSeen = 0
        while Date().timeIntervalSince1970 < start { usleep(500) }
        try database.use {
            for seq in 0..<rows {
                let before = retries.count
                var port: Int64 = 0
                do {
                    try database.retrying {
                        retries.bodyRan()
                        let row = TopologyWrite()
                        row.writer = writer
                        row.seq = seq
                        try row.save()
                        if retries.count > before, case .integer(let value)? = try database.rows("SELECT inet_server_port()").first?.first {
                            port = value
                        }
                    }
                } catch let error as ActiveRecordError {
                    print(output, terminator: "")
                    print("error: at seq \(seq) after \(retries.count - before + 1) attempts: \(error) (isRetryable \(error.isRetryable))")
                    exit(1)
                }
                let retried = retries.count - before
                retriesInAll += retried
                if retries.endedOnTheToken { tokenPath += 1 }
                retries.bodyRan()
                output += "ack \(seq) \(retried + 1) \(Date().timeIntervalSince1970) \(port)\n"
                guard checkEvery > 0, (seq + 1) % checkEvery == 0 else { continue }
                // A read outside a transaction (a replica when there is one), retried by hand
                // while the failover makes it fail: reads are not `retrying`'s business.
                var seen = -1
                for _ in 0..<200 {
                    do {
                        seen = try TopologyWrite.query().where("writer = %@", writer).count()
                        break
                    } catch let error as ActiveRecordError where error.isRetryable {
                        readRetries += 1
                        usleep(50_000)
                    }
                }
                guard seen >= 0 else { fail("topology-writer: a read failed 200 times at seq \(seq)") }
                reads += 1
                if seen < seq + 1 { behind += 1 }
                if seen > seq + 1 { ahead += 1 }
                if seen < lastSeen { regressed += 1 }
                lastSeen = seen
            }
        }
        print(output, terminator: "")
        print("codes" + retries.codes.sorted { $0.key < $1.key }.map { " \($0.key) \($0.value)" }.joined())
        print("done rows \(rows) retries \(retriesInAll) token-path \(tokenPath) reads \(reads) read-retries \(readRetries) "
            + "behind \(behind) regressed \(regressed) ahead \(ahead) pid \(getpid())")
    }
}

/// Counts `retrying`'s notices ("retrying a transaction (attempt n of m) after: <code>: …"), by
/// error code, and whether the body ran since the last one. The writer has one thread.
final class RetryNotices: LogHandler, @unchecked Sendable {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .notice
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    private let lock = Mutex(())
    private var notices = 0
    private var lostCommitSinceBody = false
    private var byCode: [String: Int] = [:]

    var count: Int { lock.withLock { _ in notices } }
    var codes: [String: Int] { lock.withLock { _ in byCode } }
    /// A COMMIT was lost since the body last ran, and the call returned: an attempt found the
    /// lost attempt's token committed, so `retrying` returned its value without running the body.
    var endedOnTheToken: Bool { lock.withLock { _ in lostCommitSinceBody } }
    func bodyRan() { lock.withLock { _ in lostCommitSinceBody = false } }

    func log(event: LogEvent) {
        let (level, text) = (event.level, event.message.description)
        guard text.hasPrefix("retrying a transaction"), let after = text.firstRange(of: "after: ") else {
            write("\(level): \(text)", to: 2)
            return
        }
        let code = String(text[after.upperBound...].prefix { $0 != ":" })
        lock.withLock { _ in
            notices += 1
            if code == "commitOutcomeUnknown" { lostCommitSinceBody = true }
            byCode[code, default: 0] += 1
        }
    }
}

/// The writer's database: the primary (or pgbouncer), and the replicas.
func topologyLocation(_ connection: String, replicas: [String], transactionPooling: Bool) -> DatabaseLocation {
    .postgres(connection, replicas: replicas, transactionPooling: transactionPooling)
}
