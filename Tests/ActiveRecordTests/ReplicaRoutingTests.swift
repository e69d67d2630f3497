@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Testing

/// A view that says which connection served the read: its `application_name`.
final class ServedBy: Model {
    @Column var name: String = ""
}

final class RoutedNote: Model {
    @Column var text: String = ""
}

/// Routing on the test server itself: the "replicas" are connections to the same server with
/// their own `application_name` (opened read-only, as replica connections are), so that a
/// read tells where it ran, and a write sent to a replica would fail. Lag, dead standbys and
/// failover on real standbys: TopologyTests (`make test-topologies`).
@Suite(.enabled(if: TestEngine.postgresConnection != nil))
struct ReplicaRoutingTests {
    /// A database of a fresh schema, with `replicas` (each an `application_name`, or a full
    /// connection string when it contains `=`), and the `ServedBy` view.
    private func withReplicatedDatabase(
        replicas: [String], _ body: (Database) async throws -> Void
    ) async throws {
        let test = try TestEngine.postgres.makeDatabase()
        defer { test.drop() }
        let base = TestEngine.connection(schema: test.schema!)
        try test.database.execute(#"""
            CREATE VIEW "ServedBy" AS SELECT 1::bigint AS "id", 0::float8 AS "createdAt", 0::float8 AS "updatedAt",
            current_setting('application_name') AS "name"
            """#)
        _ = try test.database.use { try RoutedNote.count() }  // made by automatic migration
        let db = try Database(
            .postgres(base + " application_name=primary", replicas: replicas.map { $0.contains("=") ? $0 : base + " application_name=\($0)" }),
            automaticMigrations: false)
        try await body(db)
    }

    @Test func readsGoToTheReplicasInTurnAndWritesToThePrimary() async throws {
        try await withReplicatedDatabase(replicas: ["replica0", "replica1"]) { db in
            #expect(db.hasReplicas)
            try db.use {
                let names = try (0..<6).map { _ in try ServedBy.find(1)!.name }
                #expect(Set(names) == ["replica0", "replica1"])
                #expect(names.filter { $0 == "replica0" }.count == 3)
                // Writes go to the primary (a replica connection is read-only: they would fail there).
                let note = try RoutedNote.create(["text": "written"])
                note.text = "changed"
                try note.save()
                #expect(try RoutedNote.query().where("text = %@", "changed").count() == 1)
                // In a transaction, reads see its writes: on the primary.
                try db.transaction {
                    try RoutedNote.create(["text": "in a transaction"])
                    #expect(try ServedBy.find(1)!.name == "primary")
                    #expect(try RoutedNote.count() == 2)
                }
                // A read block: one replica, one snapshot.
                let inBlock = try db.read { [try ServedBy.find(1)!.name, try ServedBy.find(1)!.name] }
                #expect(inBlock[0] == inBlock[1] && inBlock[0].hasPrefix("replica"))
                // A raw statement may write: the primary.
                #expect(try db.rows(#"SELECT "name" FROM "ServedBy""#).first?.first == .text("primary"))
            }
            // Awaited reads too; awaited writes on the primary.
            let awaited = try await ServedBy.find(1, on: db)
            #expect(awaited?.name.hasPrefix("replica") == true)
            let block = try await db.read { try ServedBy.find(1)!.name }
            #expect(block.hasPrefix("replica"))
            try await RoutedNote.create(["text": "awaited"], on: db)
            #expect(try await RoutedNote.count(on: db) == 3)
            let inWrite = try await db.write { try ServedBy.find(1)!.name }
            #expect(inWrite == "primary")
        }
    }

    @Test func aReplicaThatCannotBeReachedIsSkippedAndNothingFails() async throws {
        // Port 1 on 127.0.0.1: refused at once.
        let dead = "host=127.0.0.1 port=1 dbname=postgres connect_timeout=2 application_name=dead"
        try await withReplicatedDatabase(replicas: [dead, "replica1"]) { db in
            try db.use {
                let names = try (0..<6).map { _ in try ServedBy.find(1)!.name }
                #expect(Set(names) == ["replica1"])
                #expect(try db.read { try ServedBy.find(1)!.name } == "replica1")
            }
            #expect(try await ServedBy.find(1, on: db)?.name == "replica1")
        }
        // With no replica to be had, the primary serves every read.
        try await withReplicatedDatabase(replicas: [dead]) { db in
            try db.use {
                #expect(try (0..<3).map { _ in try ServedBy.find(1)!.name } == ["primary", "primary", "primary"])
                #expect(try db.read { try ServedBy.find(1)!.name } == "primary")
                let note = try RoutedNote.create(["text": "still written"])
                #expect(try RoutedNote.find(note.id!)?.text == "still written")
            }
            #expect(try await ServedBy.find(1, on: db)?.name == "primary")
        }
    }

    @Test func theReplicasPasswordIsMaskedAndWaitIsBounded() async throws {
        let dead = "postgresql://app:hunter2secret@127.0.0.1:1/postgres?connect_timeout=2"
        try await withReplicatedDatabase(replicas: [dead]) { db in
            #expect(db.replicaWait == .seconds(1))
            db.replicaWait = .milliseconds(200)
            #expect(db.replicaWait == .milliseconds(200))
            #expect(!"\(db)".contains("hunter2secret"))
            #expect(!db.path.contains("hunter2secret"))
            let name = try db.use { try ServedBy.find(1)?.name }
            #expect(name == "primary")
        }
    }
}
