import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Testing

// The topology tests (issue 34): real primaries, streaming standbys, pgbouncer and a failover,
// started by scripts/with-topology.sh. `make test-topologies` runs each suite on a topology of
// its own, naming it in AR_TOPO_SUITE (a failover would break the other suites' topology);
// without AR_TOPO_PRIMARY (make test) they are skipped.

/// The topology the suite runs on, from scripts/with-topology.sh's environment.
enum Topology {
    static let environment = ProcessInfo.processInfo.environment

    /// Whether the topology was started for `suite` (AR_TOPO_SUITE).
    static func isFor(_ suite: String) -> Bool {
        environment["AR_TOPO_PRIMARY"] != nil && environment["AR_TOPO_SUITE"] == suite
    }

    /// The three nodes as one libpq URL with target_session_attrs=read-write: the primary now.
    static var primary: String { environment["AR_TOPO_PRIMARY"] ?? "" }
    /// The first primary alone.
    static var primaryDirect: String { environment["AR_TOPO_PRIMARY_DIRECT"] ?? "" }
    /// The standbys' connection strings.
    static var replicas: [String] { (environment["AR_TOPO_REPLICAS"] ?? "").split(separator: "\n").map(String.init) }
    /// pgbouncer in transaction pooling mode, and in session mode.
    static var bouncer: String { environment["AR_TOPO_BOUNCER"] ?? "" }
    static var bouncerSession: String { environment["AR_TOPO_BOUNCER_SESSION"] ?? "" }

    /// The port of a `key=value` connection string.
    static func port(_ connection: String) -> Int64 {
        connection.split(separator: " ").first { $0.hasPrefix("port=") }.flatMap { Int64($0.dropFirst(5)) } ?? -1
    }

    /// Runs scripts/topology-ctl.sh with `arguments`; its standard output. Fails the test when it
    /// fails. posix_spawn and waitpid, the output in a file: Foundation's `Process.waitUntilExit`
    /// was seen to miss the exit of a script that starts a server (ReplicaLagTests).
    @discardableResult
    static func control(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let path = environment["AR_TOPO_CTL"] ?? "/bin/false"
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("topology-ctl-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        try #require(posix_spawn(&pid, path, &actions, nil, argv, environ) == 0, "cannot run \(path)", sourceLocation: sourceLocation)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        try #require(status == 0, "topology-ctl.sh \(arguments.joined(separator: " ")): \(text)", sourceLocation: sourceLocation)
        return text
    }

    /// The server a connection reached: its port, and whether it is a standby.
    static func server(_ database: Database) throws -> (port: Int64, standby: Bool) {
        let row = try database.rows("SELECT inet_server_port(), pg_is_in_recovery()::int").first ?? []
        guard row.count == 2, case .integer(let port) = row[0], case .integer(let standby) = row[1] else {
            throw ActiveRecordError(.engine, "unexpected row \(row)")
        }
        return (port, standby == 1)
    }
}

/// The writers' row (Tests/StressChild/Topology.swift declares the same class): no unique index
/// on (writer, seq), so that a row written twice shows as two.
final class TopologyWrite: Model {
    @Column var writer: Int = 0
    @Column var seq: Int = 0
}

// MARK: - Writer processes and their reports

/// The writers' processes: each one's standard output goes to a file (no pipe to fill).
struct Writers {
    let processes: [Process]
    let outputs: [URL]
    let directory: URL

    init(_ argumentLists: [[String]]) throws {
        directory = try makeTemporaryDirectory()
        let child = QuickstartTests.productsDirectory.appendingPathComponent("ActiveRecordStressChild")
        var processes: [Process] = [], outputs: [URL] = []
        for (n, arguments) in argumentLists.enumerated() {
            let output = directory.appendingPathComponent("writer\(n).out")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            let process = Process()
            process.executableURL = child
            process.arguments = arguments
            process.standardOutput = try FileHandle(forWritingTo: output)
            try process.run()
            processes.append(process)
            outputs.append(output)
        }
        (self.processes, self.outputs) = (processes, outputs)
    }

    /// Waits for every writer, killing those still running after `seconds`; their reports.
    func wait(seconds: Double) -> [WriterReport] {
        let deadline = Date().addingTimeInterval(seconds)
        while processes.contains(where: \.isRunning) && Date() < deadline { usleep(50_000) }
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
        defer { try? FileManager.default.removeItem(at: directory) }
        return zip(processes, outputs).map { process, output in
            process.waitUntilExit()
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            return WriterReport(status: process.terminationStatus, output: text)
        }
    }
}

/// What a writer printed (Tests/StressChild/Topology.swift).
struct WriterReport {
    struct Ack { let seq: Int; let attempts: Int; let time: Double; let port: Int64 }
    let status: Int32
    var acks: [Ack] = []
    var done: [String: Int] = [:]
    /// The errors `retrying` retried, by code.
    var codes: [String: Int] = [:]
    var pids: Set<String> = []
    var errors: [String] = []

    init(status: Int32, output: String) {
        self.status = status
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            switch words.first {
            case "ack" where words.count == 5:
                acks.append(Ack(seq: Int(words[1])!, attempts: Int(words[2])!, time: Double(words[3])!, port: Int64(words[4])!))
            case "done":
                pids.insert(words.last!)
                for index in stride(from: 1, to: words.count - 1, by: 2) { done[words[index]] = Int(words[index + 1]) }
            case "codes":
                for index in stride(from: 1, to: words.count - 1, by: 2) { codes[words[index]] = Int(words[index + 1]) }
            case "pid": pids.insert(words.last!)
            default: errors.append(String(line))
            }
        }
    }
}

/// What the failover tests measure, from the writers' reports and the new primary's table.
struct FailoverFigures: CustomStringConvertible {
    var acknowledged = 0, present = 0, duplicated = 0, lost = 0, retried = 0, rowsRetried = 0, tokenPath = 0
    var codes: [String: Int] = [:]
    var firstRecovery = 0.0, lastRecovery = 0.0

    /// `killedAt`: when the primary was killed; `rows`: (writer, seq) → how many rows the new
    /// primary holds.
    init(_ reports: [WriterReport], rows: [Int: [Int: Int]], killedAt: Double) {
        var recoveries: [Double] = []
        for (writer, report) in reports.enumerated() {
            acknowledged += report.acks.count
            tokenPath += report.done["token-path"] ?? 0
            codes.merge(report.codes, uniquingKeysWith: +)
            for ack in report.acks {
                if rows[writer]?[ack.seq] == nil { lost += 1 }
                retried += ack.attempts - 1
                if ack.attempts > 1 { rowsRetried += 1 }
            }
            // The writer's first acknowledged row after the kill that had to be retried: the
            // failure it saw, then the new primary.
            if let first = report.acks.first(where: { $0.attempts > 1 && $0.time > killedAt }) { recoveries.append(first.time - killedAt) }
        }
        for (_, seqs) in rows {
            present += seqs.count
            duplicated += seqs.values.filter { $0 > 1 }.count
        }
        firstRecovery = recoveries.min() ?? -1
        lastRecovery = recoveries.max() ?? -1
    }

    var description: String {
        "acknowledged \(acknowledged), present \(present), lost \(lost), duplicated \(duplicated), "
            + "retried \(retried) attempts (\(rowsRetried) rows; after \(codes.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", "))), "
            + "lost COMMITs found committed by their token \(tokenPath), recovered "
            + String(format: "%.2f s (first writer) – %.2f s (last writer) after the kill", firstRecovery, lastRecovery)
    }
}

/// Runs `writers` topology-writer processes of `rows` rows each on `connection`, kills the
/// primary once `killAt` of the rows are written, promotes standby 1, waits for the writers,
/// and checks the new primary's table. `options`: the writers' extra options; `everyWriterFails`:
/// each writer's connection goes to the primary itself, so the kill fails each one's next row.
@discardableResult
func runFailover(
    writers: Int, rows: Int, connection: String, options: [String], killAt: Double, timeLimit: Double, everyWriterFails: Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> (FailoverFigures, [WriterReport]) {
    let database = try Database(.postgres(Topology.primary))
    database.logger = nil
    try database.use { _ = try TopologyWrite.count() }  // the table, before the writers race to make it
    // The commit tokens' table too: `retrying` makes it on a database's first call, before its
    // first attempt and outside its retries (a first call that meets the failover fails there).
    try database.use { try database.retrying {} }
    try Topology.control("wait-replay")
    let start = Date().timeIntervalSince1970 + 1.5
    let children = try Writers((0..<writers).map {
        ["topology-writer", connection, "\($0)", "\(rows)", "\(start)"] + options
    })
    // The kill once `killAt` of the rows are in, counted on the primary.
    let total = writers * rows
    let observer = try Database(.postgres(Topology.primaryDirect), automaticMigrations: false)
    observer.logger = nil
    let deadline = Date().addingTimeInterval(timeLimit)
    while try observer.rows(#"SELECT count(*) FROM "TopologyWrite""#) .first?.first.flatMap({ if case .integer(let n) = $0 { Int(n) } else { nil } }) ?? 0
            < Int(Double(total) * killAt) && Date() < deadline && children.processes.contains(where: \.isRunning) {
        usleep(20_000)
    }
    let killed = try Topology.control("kill-primary")
    let killedAt = Double(killed.split(separator: " ").last!.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    let promoted = try Topology.control("promote", "1")
    print("topology: \(killed.trimmingCharacters(in: .newlines))\n\(promoted)", terminator: "")
    let reports = children.wait(seconds: max(10, deadline.timeIntervalSinceNow))

    // The new primary's rows, counted per key, read through the same pool as before the kill:
    // the pool finds the new primary (retrying while its dead connections fail).
    var rowsByKey: [Int: [Int: Int]] = [:]
    try database.use {
        let counted = try database.retrying {
            try database.rows(#"SELECT "writer", "seq", count(*) FROM "TopologyWrite" GROUP BY "writer", "seq""#)
        }
        for row in counted {
            guard case .integer(let writer) = row[0], case .integer(let seq) = row[1], case .integer(let count) = row[2] else { continue }
            rowsByKey[Int(writer), default: [:]][Int(seq)] = Int(count)
        }
    }
    let figures = FailoverFigures(reports, rows: rowsByKey, killedAt: killedAt)
    print("topology: \(writers) writers × \(rows) rows: \(figures)")
    for (writer, report) in reports.enumerated() {
        #expect(report.status == 0 && report.errors.isEmpty, "writer \(writer): \(report.errors)", sourceLocation: sourceLocation)
        #expect(report.acks.count == rows, "writer \(writer) acknowledged \(report.acks.count) of \(rows)", sourceLocation: sourceLocation)
        #expect(report.pids.count == 1, "writer \(writer) restarted: pids \(report.pids)", sourceLocation: sourceLocation)
        // retrying's attempts are bounded (8 by default), whatever failed: the BEGIN too.
        let most = report.acks.map(\.attempts).max() ?? 0
        #expect(most <= 8, "writer \(writer): a row took \(most) attempts; retrying allows 8", sourceLocation: sourceLocation)
        if everyWriterFails {
            // Its pooled connection died with the primary: its next row failed and was retried.
            #expect(report.acks.contains { $0.attempts > 1 }, "writer \(writer) never retried: the kill missed it", sourceLocation: sourceLocation)
        }
    }
    // Behind pgbouncer a writer between transactions sees nothing: pgbouncer, re-pointed, opens
    // its next server connection on the new primary. The kill must still have hit some.
    #expect(figures.retried > 0, "no writer retried: the kill missed them all", sourceLocation: sourceLocation)
    #expect(figures.lost == 0, "\(figures)", sourceLocation: sourceLocation)
    #expect(figures.duplicated == 0, "\(figures)", sourceLocation: sourceLocation)
    #expect(figures.present == total && figures.acknowledged == total, "\(figures)", sourceLocation: sourceLocation)
    return (figures, reports)
}

// MARK: - Failover (point 4): 4 writers, synchronous replication, kill -9 of the primary

@Suite(.serialized, .enabled(if: Topology.isFor("failover"), "needs scripts/with-topology.sh --sync, AR_TOPO_SUITE=failover"))
struct TopologyFailoverTests {
    @Test func killingThePrimaryUnderFourWritersLosesNothingAcknowledged() throws {
        try #require(ProcessInfo.processInfo.environment["AR_TOPO_SYNC"] == "1", "the failover needs synchronous replication (--sync)")
        try runFailover(writers: 4, rows: 1_500, connection: Topology.primary, options: [], killAt: 0.3, timeLimit: 150, everyWriterFails: true)
    }
}

// MARK: - The whole picture (point 7): 8 writers through pgbouncer, 2 standbys, a failover

@Suite(.serialized, .enabled(if: Topology.isFor("whole"), "needs scripts/with-topology.sh --sync --bouncer, AR_TOPO_SUITE=whole"))
struct TopologyWholePictureTests {
    @Test func eightWritersThroughPgbouncerAcrossAFailover() throws {
        try #require(ProcessInfo.processInfo.environment["AR_TOPO_SYNC"] == "1", "the failover needs synchronous replication (--sync)")
        let options = ["--transaction-pooling", "--replicas", Topology.replicas.joined(separator: "|"), "--check-every", "10"]
        let (_, reports) = try runFailover(writers: 8, rows: 2_000, connection: Topology.bouncer, options: options, killAt: 0.4, timeLimit: 240,
                                        everyWriterFails: false)
        let total = { (key: String) in reports.reduce(0) { $0 + ($1.done[key] ?? 0) } }
        print("topology: reads \(total("reads")) (retried \(total("read-retries"))), behind \(total("behind")), "
            + "regressed \(total("regressed")), ahead \(total("ahead"))")
        for (writer, report) in reports.enumerated() {
            // Every 10th row, the writer counted its rows outside a transaction (on a standby):
            // never fewer than it had acknowledged, never fewer than the read before, never more.
            #expect(report.done["reads"] == 200, "writer \(writer): \(report.done)")
            #expect(report.done["behind"] == 0 && report.done["regressed"] == 0 && report.done["ahead"] == 0,
                    "writer \(writer): \(report.done)")
        }
    }
}
