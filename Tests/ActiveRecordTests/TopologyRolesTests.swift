import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Testing

// Roles on a real primary + 2 streaming standbys (issue 34, point 1), at the topology level:
// writes on the primary, reads spread over both standbys, a standby stopped with connections to
// it pooled and then started again. The routing's unit tests are ReplicaRoutingTests (one
// server), read-your-writes under injected lag is ReplicaLagTests; `make test-topologies` runs
// both suites, one after the other, on one topology (scripts/with-topology.sh --bouncer,
// AR_TOPO_SUITE=roles), and this one also checks pgbouncer's session mode.

/// A row of the roles tests.
final class TopologyNote: Model {
    @Column var text: String = ""
}

// MARK: - Roles (points 1 and 2): primary + 2 standbys

@Suite(.serialized, .enabled(if: Topology.isFor("roles"), "needs scripts/with-topology.sh, AR_TOPO_SUITE=roles"))
struct TopologyRolesTests {
    let primaryPort = Topology.port(Topology.primaryDirect)
    let standbyPorts = Set(Topology.replicas.map(Topology.port))

    func makeDatabase() throws -> Database {
        let database = try Database(.postgres(Topology.primary, replicas: Topology.replicas))
        database.logger = nil
        // The table exists and every standby has it before a test injects lag.
        try database.use { _ = try TopologyNote.count() }
        try Topology.control("wait-replay")
        return database
    }

    @Test func writesGoToThePrimaryAndReadsSpreadOverTheStandbys() throws {
        let database = try makeDatabase()
        try database.use {
            let note = try TopologyNote.create(["text": "written"])
            let direct = try Database(.postgres(Topology.primaryDirect), automaticMigrations: false)
            #expect(try direct.rows(#"SELECT count(*) FROM "TopologyNote" WHERE id = ?"#, [.integer(note.id!)]) == [[.integer(1)]])
            let inTransaction = try database.withTransaction { try Topology.server(database) }
            #expect(inTransaction.port == primaryPort && !inTransaction.standby, "a transaction runs on the primary")
            var seen: [Int64: Int] = [:]
            for _ in 0..<40 {
                let server = try database.read { try Topology.server(database) }
                #expect(server.standby, "a read went to \(server.port), not a standby")
                seen[server.port, default: 0] += 1
            }
            #expect(Set(seen.keys) == standbyPorts, "40 reads went to \(seen); the standbys are \(standbyPorts)")
        }
    }

    @Test func aStoppedStandbyIsSkippedAndRetriedLater() throws {
        let database = try makeDatabase()
        let (first, second) = (Topology.port(Topology.replicas[0]), Topology.port(Topology.replicas[1]))
        try database.use {
            for _ in 0..<10 { _ = try database.read { try Topology.server(database) } }  // both standbys' connections pooled
            try Topology.control("stop", "2")
            var failures: [String] = [], elsewhere = 0
            for round in 0..<30 {
                do {
                    let server = try database.read { try Topology.server(database) }
                    if server.port != first { elsewhere += 1 }
                } catch {
                    failures.append("read \(round) in read { }: \(error)")
                }
                do {
                    _ = try TopologyNote.count()
                } catch {
                    failures.append("count \(round): \(error)")
                }
            }
            #expect(failures.isEmpty, "\(failures.count) of 60 reads failed while standby 2 was down: \(failures)")
            #expect(elsewhere == 0, "\(elsewhere) of 30 reads were not served by standby 1 while standby 2 was down")
            try Topology.control("start", "2")
            // Back in the rotation within 30 s.
            let deadline = Date().addingTimeInterval(30)
            var back = false
            while !back && Date() < deadline {
                back = try database.read { try Topology.server(database) }.port == second
                if !back { usleep(100_000) }
            }
            #expect(back, "standby 2 restarted but got no read in 30 s")
        }
    }

    @Test func sessionPoolingThroughPgbouncerIsUnchanged() throws {
        let database = try Database(.postgres(Topology.bouncerSession))
        database.logger = nil
        try database.use {
            let note = try TopologyNote.create(["text": "through pgbouncer"])
            for _ in 0..<20 { #expect(try TopologyNote.find(note.id!)?.text == "through pgbouncer") }
            try database.transaction { try TopologyNote.find(note.id!)!.destroy() }
            #expect(try TopologyNote.find(note.id!) == nil)
        }
    }
}
