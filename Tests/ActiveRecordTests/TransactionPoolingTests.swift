@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Testing

final class PooledAuthor: Model {
    @Column var name: String = ""
    @Column var score: Double = 0
    @Column var photo: Data = Data()
    @HasMany(dependency: .destroy) var pooledPosts: Query<PooledPost>
}

final class PooledPost: Model {
    @Column var title: String = ""
    @Column var rank: Int = 0
    @BelongsTo var pooledAuthor: PooledAuthor?
}

/// pgbouncer in transaction mode, when `scripts/with-pgbouncer.sh` started one.
private let pgbouncerConnection = ProcessInfo.processInfo.environment["AR_TEST_PGBOUNCER"].flatMap { $0.isEmpty ? nil : $0 }

/// The library behind pgbouncer 1.18 in transaction pooling mode (issue 34, point 5):
/// `scripts/with-pgbouncer.sh` (`make test-pgbouncer`) starts a pgbouncer whose database
/// `bouncer` has 2 server connections and `bouncer_single` 1, fewer than each client's pool,
/// so clients and their connections share them; these tests run only then. They share one
/// database (pgbouncer cannot pass a `search_path` per client), so they run one at a time,
/// each on a fresh `public` schema.
@Suite("Behind pgbouncer in transaction pooling mode", .serialized, .enabled(if: pgbouncerConnection != nil))
struct TransactionPoolingTests {
    /// Through pgbouncer: 2 server connections; 1.
    static let bouncer = pgbouncerConnection
    static let single = ProcessInfo.processInfo.environment["AR_TEST_PGBOUNCER_SINGLE"] ?? ""
    /// The same database, straight to the server.
    static let direct = ProcessInfo.processInfo.environment["AR_TEST_PGBOUNCER_DIRECT"] ?? ""

    /// A database through pgbouncer with the setting on (8 connections on the client side).
    static func pooled(_ connection: String = bouncer ?? "", readOnly: Bool = false) throws -> Database {
        let database = try Database(
            .postgres(connection, maximumConnections: 8, transactionPooling: true), readOnly: readOnly)
        database.logger = nil
        return database
    }

    /// Empties the shared database (straight to the server), then runs `body`.
    static func fresh<R>(_ body: () throws -> R) throws -> R {
        let admin = try Database(.postgres(direct), automaticMigrations: false)
        admin.logger = nil
        try admin.execute("DROP SCHEMA public CASCADE")
        try admin.execute("CREATE SCHEMA public")
        return try body()
    }

    /// The server processes serving the shared database, as the server counts them.
    static func serverConnections() throws -> Int {
        let admin = try Database(.postgres(direct), automaticMigrations: false)
        admin.logger = nil
        let rows = try admin.rows(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = 'bouncer' AND pid <> pg_backend_pid()")
        guard case .integer(let count)? = rows.first?.first else { return -1 }
        return Int(count)
    }

    /// Saves a post.
    static func post(_ title: String, rank: Int, by author: PooledAuthor?) throws {
        let post = PooledPost()
        post.title = title
        post.rank = rank
        post.pooledAuthor = author
        try post.save()
    }

    @Test func crudQueriesAndRelationsThroughSharedServerConnections() throws {
        try Self.fresh {
            let db = try Self.pooled()
            try db.use {
                let photo = Data((0..<256).map { UInt8($0) })
                let ada = try PooledAuthor.create(["name": "Ada", "score": 0.1 + 0.2, "photo": photo])
                let grace = try PooledAuthor.create(["name": "Grace", "score": 1e-300])
                for rank in 1...5 { try Self.post("post \(rank)", rank: rank, by: ada) }
                // Each statement runs many times: the first run's text result, the binary ones after.
                for _ in 0..<3 {
                    let found = try #require(try PooledAuthor.find(ada.id!))
                    #expect(found.name == "Ada" && found.score == 0.1 + 0.2 && found.photo == photo)
                    #expect(try PooledAuthor.find(grace.id!)?.score == 1e-300)
                    #expect(try PooledPost.query().where("rank > %@", 2).count() == 3)
                    #expect(try PooledPost.query().order(by: "rank", ascending: false).pluck(\.rank) == [5, 4, 3, 2, 1])
                    #expect(try ada.pooledPosts.fetch().map(\.title) == (1...5).map { "post \($0)" })
                    let eager = try PooledAuthor.query().order(by: "name").includes(\.pooledPosts).fetch()
                    #expect(eager.map(\.name) == ["Ada", "Grace"])
                    #expect(try eager.map { try $0.pooledPosts.fetch().count } == [5, 0])
                    #expect(try PooledPost.query().sum("rank") == 15)
                }
                ada.name = "Ada L."
                try ada.save()
                #expect(try PooledAuthor.find(ada.id!)?.name == "Ada L.")
                #expect(try PooledPost.query().where("rank = %@", 1).updateAll(["title": "first"]) == 1)
                #expect(try PooledPost.query().order(by: "rank").first()?.title == "first")
                try ada.destroy()
                #expect(try PooledPost.count() == 0)
                #expect(try PooledAuthor.query().pluck(\.name) == ["Grace"])
            }
            // pgbouncer's pool held: the server saw at most its 2 connections for the database.
            #expect(try Self.serverConnections() <= 2)
        }
    }

    @Test func transactionsWithSavepointsCommitAndRollBackWhole() throws {
        try Self.fresh {
            let db = try Self.pooled()
            try db.use {
                try db.transaction {
                    try PooledPost.create(["title": "A"])
                    try db.transaction {
                        try PooledPost.create(["title": "B"])
                        throw Rollback()
                    }
                    try PooledPost.create(["title": "C"])
                }
                #expect(try PooledPost.query().order(by: "id").pluck(\.title) == ["A", "C"])
                // A failed statement aborts the transaction; it rolls back whole.
                #expect(throws: ActiveRecordError.self) {
                    try db.transaction {
                        try PooledPost.create(["title": "D"])
                        _ = try db.rows("SELECT 1 / 0")
                    }
                }
                #expect(try db.withTransaction(isolation: .serializable) { try PooledPost.count() } == 2)
                #expect(try db.read { try PooledPost.count() } == 2)
            }
        }
    }

    @Test func cursorsReadInBatchesInsideTheirTransaction() throws {
        try Self.fresh {
            let db = try Self.pooled()
            try db.use {
                try db.transaction { for rank in 1...700 { try PooledPost.create(["title": "p", "rank": rank]) } }
                // Beyond 256 rows: the cursor FETCHes three times; other clients' statements in
                // between cannot take its server connection (its transaction holds it).
                let cursor = try PooledPost.query().order(by: "rank").cursor()
                var ranks: [Int] = []
                while let post = try cursor.next() {
                    ranks.append(post.rank)
                    if ranks.count % 100 == 0 { #expect(try PooledPost.count() == 700) }
                }
                #expect(ranks == Array(1...700))
            }
        }
    }

    @Test func statementTimeoutsHoldAndDoNotLeakToOtherClients() throws {
        try Self.fresh {
            // One server connection for both clients: whatever one left on it, the other sees.
            let limited = try Self.pooled(Self.single)
            let other = try Self.pooled(Self.single)
            limited.statementTimeout = .milliseconds(200)
            expectError(.timeout) { _ = try limited.rows("SELECT pg_sleep(2)") }
            #expect(try limited.rows("SELECT current_setting('statement_timeout')") == [[.text("200ms")]])
            #expect(try other.rows("SELECT current_setting('statement_timeout')") == [[.text("0")]])
            // Inside a transaction, and a per-call limit within it.
            try limited.transaction {
                #expect(try limited.rows("SELECT current_setting('statement_timeout')") == [[.text("200ms")]])
                try limited.withStatementTimeout(.seconds(5)) { _ = try limited.rows("SELECT pg_sleep(0.3)") }
                #expect(try limited.rows("SELECT current_setting('statement_timeout')") == [[.text("200ms")]])
            }
            expectError(.timeout) { try limited.transaction { _ = try limited.rows("SELECT pg_sleep(2)") } }
            // Rolling back to a savepoint undoes a setting made after it: the limit still holds.
            try limited.transaction {
                try limited.withStatementTimeout(.milliseconds(300)) {
                    try limited.transaction {
                        _ = try limited.rows("SELECT 1")
                        throw Rollback()
                    }
                    expectError(.timeout) { _ = try limited.rows("SELECT pg_sleep(2)") }
                }
                throw Rollback()
            }
            #expect(try other.rows("SELECT current_setting('statement_timeout')") == [[.text("0")]])
            limited.statementTimeout = nil
            #expect(try limited.rows("SELECT current_setting('statement_timeout')") == [[.text("0")]])
            _ = try other.rows("SELECT pg_sleep(0.3)")
        }
    }

    @Test func aReadOnlyDatabaseWritesNothingAndLeavesOthersWriting() throws {
        try Self.fresh {
            let writer = try Self.pooled(Self.single)
            try writer.use { try PooledPost.create(["title": "A"]) }
            let reader = try Self.pooled(Self.single, readOnly: true)
            try reader.use { () throws in
                #expect(try PooledPost.count() == 1)
                expectError(.readOnly) { try PooledPost.create(["title": "B"]) }
                expectError(.readOnly) { try reader.transaction { try PooledPost.create(["title": "B"]) } }
            }
            // The same server connection, read-write for the other client.
            try writer.use { try PooledPost.create(["title": "C"]) }
            #expect(try writer.use { try PooledPost.count() } == 2)
        }
    }

    /// 8 threads, each with its own transactions and reads, over 2 server connections.
    @Test func severalThreadsAtOnce() throws {
        try Self.fresh {
            let db = try Self.pooled()
            try db.use { _ = try PooledPost.count() }  // the table, made once
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                do {
                    try db.use {
                        for n in 0..<50 {
                            let post = try db.withTransaction { try PooledPost.create(["title": "t\(thread)", "rank": n]) }
                            guard try PooledPost.find(post.id!)?.rank == n else { throw Rollback() }
                        }
                        let ranks = try PooledPost.query().where("title = %@", "t\(thread)").order(by: "rank").pluck(\.rank)
                        if ranks != Array(0..<50) { failures.withLock { $0.append("thread \(thread): \(ranks)") } }
                    }
                } catch {
                    failures.withLock { $0.append("thread \(thread): \(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            #expect(try db.use { try PooledPost.count() } == 400)
        }
    }

    @Test func asyncCalls() async throws {
        let db = try Self.fresh { try Self.pooled() }
        let ada = try await PooledAuthor.create(["name": "Ada"], on: db)
        let id = try #require(ada.id)
        try await db.write {
            for rank in 1...3 { try Self.post("post \(rank)", rank: rank, by: try PooledAuthor.find(id)) }
        }
        #expect(try await PooledAuthor.find(id, on: db)?.name == "Ada")
        #expect(try await PooledPost.query().where("rank >= %@", 2).count(on: db) == 2)
        let titles = try await db.read { try PooledPost.query().order(by: "rank").pluck(\.title) }
        #expect(titles == ["post 1", "post 2", "post 3"])
        let ranks = try await withThrowingTaskGroup(of: Int.self) { group in
            for rank in 1...3 { group.addTask { try await PooledPost.query().where("rank = %@", rank).first(on: db)?.rank ?? 0 } }
            return try await group.reduce(into: []) { $0.append($1) }.sorted()
        }
        #expect(ranks == [1, 2, 3])
    }

    /// The failure mode itself: two clients through one server connection, each preparing
    /// statements under the names it picks. Without the setting the second client meets the
    /// first's statements (and its session settings); with it, neither leaves any.
    @Test func namedStatementsAndSessionSettingsCollideWithoutTheSetting() throws {
        try Self.fresh {
            try Self.pooled().use { _ = try PooledPost.count() }  // the table
            // Sees and resets the one server connection of bouncer_single (names and settings
            // left there by earlier clients included: pgbouncer resets nothing in this mode).
            let observer = try Self.pooled(Self.single)
            try observer.execute("DISCARD ALL")
            defer { try? observer.execute("DISCARD ALL") }

            let first = try Database(.postgres(Self.single, maximumConnections: 1))
            let second = try Database(.postgres(Self.single, maximumConnections: 1))
            (first.logger, second.logger) = (nil, nil)
            try first.use { _ = try PooledPost.find(1) }  // prepares activerecord_statement1 there
            let error = expectError(.engine) { try second.use { _ = try PooledPost.query().where("rank = %@", 1).count() } }
            #expect(error?.engineState == "42P05", "\(error.map { "\($0)" } ?? "")")
            #expect(error?.message.contains("transactionPooling: true") == true, "\(error?.message ?? "")")
            try observer.execute("DISCARD ALL")

            // A session SET made by one client is the next client's.
            let setter = try Database(.postgres(Self.single, maximumConnections: 1))
            setter.logger = nil
            setter.statementTimeout = .milliseconds(250)
            _ = try setter.rows("SELECT 1")
            #expect(try observer.rows("SELECT current_setting('statement_timeout')") == [[.text("250ms")]])
            try observer.execute("DISCARD ALL")

            // The same interleaving with the setting: each gets its own answers.
            let pooledFirst = try Self.pooled(Self.single)
            let pooledSecond = try Self.pooled(Self.single)
            try pooledFirst.use { try PooledPost.create(["title": "one", "rank": 1]) }
            for _ in 0..<3 {
                #expect(try pooledFirst.use { try PooledPost.find(1)?.title } == "one")
                #expect(try pooledSecond.use { try PooledPost.query().where("rank = %@", 1).count() } == 1)
                #expect(try pooledSecond.use { try PooledPost.query().pluck(\.title) } == ["one"])
            }
        }
    }

    /// What the library sets at connect elsewhere, it checks behind a transaction pooler.
    @Test func serverDefaultsItCannotSetAreChecked() throws {
        let error = expectError(.configuration) {
            _ = try Database(.postgres(Self.direct + " options='-c bytea_output=escape'", transactionPooling: true))
        }
        #expect(error?.message.contains("bytea_output (hex)") == true, "\(error?.message ?? "")")
    }
}
