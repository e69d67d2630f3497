@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Testing

final class LaggedNote: Model {
    @Column var text: String = ""
}

/// Where a read ran: a view over `pg_is_in_recovery()`, true on a standby.
final class ServedByStandby: Model {
    @Column var standby: Bool = false
}

/// The topology of `scripts/with-topology.sh` (a primary and two streaming standbys), when the
/// tests run under it (`make test-topologies`).
enum LagTopology {
    static let environment = ProcessInfo.processInfo.environment
    static var isAvailable: Bool { environment["AR_TOPO_REPLICAS"].map { !$0.isEmpty } ?? false }
    static var primary: String { environment["AR_TOPO_PRIMARY"] ?? "" }
    static var replicas: [String] { (environment["AR_TOPO_REPLICAS"] ?? "").split(separator: "\n").map(String.init) }

    /// Runs `scripts/topology-ctl.sh` with `arguments` (posix_spawn and waitpid: Foundation's
    /// `Process.waitUntilExit` was seen to miss the exit of a script that starts a server).
    static func control(_ arguments: String...) throws {
        let path = environment["AR_TOPO_CTL"] ?? "/bin/false"
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        guard posix_spawn(&pid, path, nil, nil, argv, environ) == 0 else {
            throw ActiveRecordError(.engine, "cannot run \(path)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        guard status == 0 else { throw ActiveRecordError(.engine, "topology-ctl.sh \(arguments.joined(separator: " ")) failed (\(status))") }
    }
}

/// Read your writes on real standbys, with replication lag injected
/// (`recovery_min_apply_delay`): a session's reads see its commits at once, from a standby
/// that has replayed them or from the primary; another session's reads on a lagging standby do not.
@Suite(.enabled(if: LagTopology.isAvailable), .serialized)
struct ReplicaLagTests {
    private func withLaggedDatabase(_ body: (Database) async throws -> Void) async throws {
        let schema = "lag_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let admin = try Database(.postgres(LagTopology.primary), automaticMigrations: false)
        try admin.execute("CREATE SCHEMA \(ident: schema)")
        defer {
            try? LagTopology.control("delay", "1", "0")
            try? LagTopology.control("delay", "2", "0")
            try? admin.execute("DROP SCHEMA \(ident: schema) CASCADE")
        }
        // A URL (the primary's, multi-host) takes the option as a query parameter.
        func inSchema(_ connection: String) -> String {
            connection.hasPrefix("postgres")
                ? connection + (connection.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
                : connection + " options='-csearch_path=\(schema)'"
        }
        try admin.execute(#"""
            CREATE VIEW \#(ident: schema)."ServedByStandby" AS SELECT 1::bigint AS "id", 0::float8 AS "createdAt", 0::float8 AS "updatedAt",
            pg_is_in_recovery() AS "standby"
            """#)
        let db = try Database(.postgres(inSchema(LagTopology.primary), replicas: LagTopology.replicas.map(inSchema)))
        _ = try db.use { try LaggedNote.count() }  // the table, made on the primary
        try LagTopology.control("wait-replay")
        try LagTopology.control("delay", "1", "2s")
        try LagTopology.control("delay", "2", "2s")
        try await body(db)
    }

    @Test func aSessionReadsItsOwnCommitsDespiteLag() async throws {
        try await withLaggedDatabase { db in
            try db.use {
                // Before any write of this session: a standby serves reads at once.
                #expect(try ServedByStandby.find(1)?.standby == true)
                // Waiting less than the lag: the read goes to the primary after the wait.
                db.replicaWait = .milliseconds(300)
                let note = try LaggedNote.create(["text": "mine"])
                var started = ContinuousClock.now
                #expect(try LaggedNote.find(note.id!)?.text == "mine")
                let fellBack = ContinuousClock.now - started
                #expect(fellBack >= .milliseconds(300) && fellBack < .milliseconds(1900))
                // Waiting longer than the lag: a standby, once it has replayed the commit.
                db.replicaWait = .seconds(5)
                let second = try LaggedNote.create(["text": "mine too"])
                started = ContinuousClock.now
                let found = try db.read { (try LaggedNote.find(second.id!)?.text, try ServedByStandby.find(1)?.standby) }
                let waited = ContinuousClock.now - started
                #expect(found.0 == "mine too")
                #expect(found.1 == true)
                #expect(waited >= .milliseconds(1500) && waited < .seconds(5))
                // Another session (another thread) that did not write reads a lagging standby
                // at once, and does not see the commit yet.
                let third = try LaggedNote.create(["text": "not yet"]).id!
                let elsewhere = Thread.detachNewThreadAndWait { try? db.use { try LaggedNote.find(third)?.text } }
                #expect(elsewhere == .some(nil))
            }
            // A task: its awaited reads after its awaited write.
            db.replicaWait = .seconds(5)
            let note = try await LaggedNote.create(["text": "awaited"], on: db)
            let found = try await LaggedNote.find(note.id!, on: db)
            #expect(found?.text == "awaited")
        }
    }

    @Test func aStoppedStandbyIsSkipped() async throws {
        try await withLaggedDatabase { db in
            try LagTopology.control("delay", "1", "0")
            try LagTopology.control("delay", "2", "0")
            try LagTopology.control("stop", "1")
            defer { try? LagTopology.control("start", "1") }
            try db.use {
                for round in 0..<6 {
                    let note = try LaggedNote.create(["text": "round \(round)"])
                    #expect(try LaggedNote.find(note.id!)?.text == "round \(round)")
                    #expect(try ServedByStandby.find(1)?.standby == true)  // the other standby
                }
            }
        }
    }
}

extension Thread {
    /// Runs `body` on a new thread and waits for its value.
    static func detachNewThreadAndWait<R>(_ body: @escaping @Sendable () -> R) -> R {
        nonisolated(unsafe) var value: R?
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            value = body()
            done.signal()
        }
        done.wait()
        return value!
    }
}
