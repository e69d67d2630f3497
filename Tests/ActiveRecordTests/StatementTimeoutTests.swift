@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Testing

final class TimedNote: Model {
    @Column var title: String = ""
}

/// Nothing waits without a bound (issue 31, point 3): statement timeouts per database and per
/// call on both engines; on PostgreSQL a connect timeout by default, a server that stops
/// answering, and a connection lost during COMMIT. The faults come from a ``FaultProxy``.
@Suite("Statement timeouts and bounded waits")
struct StatementTimeoutTests {
    static let hasServer = TestEngine.postgresConnection != nil

    /// A query that would run for minutes on either engine.
    static let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c"

    /// A query that takes well over 200 ms on either engine (and well under a few seconds).
    static func slow(_ engine: TestEngine) -> String {
        engine == .postgres
            ? "SELECT pg_sleep(0.4)"
            : "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c"
    }

    /// How long `body` took.
    static func timed(_ body: () throws -> Void) rethrows -> Duration {
        let start = ContinuousClock.now
        try body()
        return start.duration(to: .now)
    }

    // MARK: Both engines

    @Test(arguments: TestEngine.all) func aPerCallTimeoutStopsALongQueryAndEndsWithItsBlock(engine: TestEngine) throws {
        try withDatabase(engine) { db in
            var error: ActiveRecordError?
            let took = Self.timed {
                error = expectError(.timeout) { try db.withStatementTimeout(.milliseconds(200)) { _ = try db.rows(Self.endless) } }
            }
            #expect(took < .seconds(3), "\(took)")
            #expect(error?.message.contains("statement timeout of 200 ms") == true, "\(error?.message ?? "")")
            #expect(error?.isRetryable == false)
            // The connection is usable, and the block's limit ended with it.
            #expect(try db.rows("SELECT 1") == [[.integer(1)]])
            let slow = try Self.timed { _ = try db.rows(Self.slow(engine)) }
            #expect(slow > .milliseconds(250), "the query meant to outlast the limit took \(slow)")
        }
    }

    @Test(arguments: TestEngine.all) func aDatabaseTimeoutAppliesToEveryStatementAndABlockLiftsIt(engine: TestEngine) throws {
        try withDatabase(engine) { db in
            #expect(db.statementTimeout == nil)
            db.statementTimeout = .milliseconds(200)
            #expect(db.statementTimeout == .milliseconds(200))
            let took = Self.timed { expectError(.timeout) { _ = try db.rows(Self.endless) } }
            #expect(took < .seconds(3), "\(took)")
            try TimedNote.create(["title": "still writes"])
            // A block without limit, then one with a longer limit, then the database's again.
            try db.withStatementTimeout(nil) { _ = try db.rows(Self.slow(engine)) }
            try db.withStatementTimeout(.seconds(30)) { _ = try db.rows(Self.slow(engine)) }
            expectError(.timeout) { _ = try db.rows(Self.endless) }
            db.statementTimeout = nil
            _ = try db.rows(Self.slow(engine))
            #expect(try TimedNote.count() == 1)
        }
    }

    /// A timeout inside a transaction ends it with `.timeout` (not with the rollback's error),
    /// and rolls it back.
    @Test(arguments: TestEngine.all) func aTimeoutInsideATransactionRollsItBack(engine: TestEngine) throws {
        try withDatabase(engine) { db in
            try TimedNote.create(["title": "before"])
            expectError(.timeout) {
                try db.transaction {
                    try TimedNote.create(["title": "rolled back"])
                    try db.withStatementTimeout(.milliseconds(200)) { _ = try db.rows(Self.endless) }
                }
            }
            #expect(try TimedNote.all().map(\.title) == ["before"])
            try db.transaction { _ = try TimedNote.create(["title": "after"]) }
            #expect(try TimedNote.count() == 2)
        }
    }

    /// A write interrupted in a savepoint: PostgreSQL rolls back to the savepoint and the outer
    /// transaction goes on; SQLite rolls back the WHOLE transaction (its rule for an interrupted
    /// write), so the outer levels go on in a transaction that only rolls back: what they run
    /// afterwards is not committed, and the commit says `.transactionAborted`.
    @Test(arguments: TestEngine.all) func aWriteInterruptedInASavepoint(engine: TestEngine) throws {
        try withDatabase(engine) { db in
            try TimedNote.create(["title": "before"])
            let endlessInsert = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "
                + #"INSERT INTO "TimedNote" ("createdAt", "updatedAt", "title") SELECT 0, 0, 'x' FROM c"#
            let commit = Result {
                try db.transaction {
                    try TimedNote.create(["title": "outer"])
                    expectError(.timeout) {
                        try db.transaction { try db.withStatementTimeout(.milliseconds(200)) { try db.execute(endlessInsert) } }
                    }
                    try TimedNote.create(["title": "after"])
                    try db.transaction { try TimedNote.create(["title": "nested after"]) }
                }
            }
            #expect(!db.isInTransaction)
            if engine == .sqlite {
                #expect(throws: ActiveRecordError.self) { try commit.get() }
                if case .failure(let error as ActiveRecordError) = commit { #expect(error.code == .transactionAborted, "\(error)") }
                #expect(try TimedNote.all().map(\.title) == ["before"])
            } else {
                #expect(try commit.get() == .committed)
                #expect(try TimedNote.query().order(by: "id").pluck(\.title) == ["before", "outer", "after", "nested after"])
            }
            try TimedNote.create(["title": "later"])  // the connection goes on
        }
    }

    // MARK: PostgreSQL: the server's statement_timeout

    /// `SELECT pg_sleep(5)` under a 500 ms limit: canceled by the server (SQLSTATE 57014), on a
    /// connection that stays open; per database, then per call, and the call's limit ends with
    /// its block (the session's own setting comes back).
    @Test(.enabled(if: hasServer)) func theServerCancelsAStatementOverItsLimit() throws {
        try withDatabase(.postgres) { db in
            db.statementTimeout = .milliseconds(500)
            var error: ActiveRecordError?
            let took = Self.timed { error = expectError(.timeout) { _ = try db.rows("SELECT pg_sleep(5)") } }
            #expect(error?.engineState == "57014")
            #expect(error?.message.contains("statement timeout of 500 ms, and PostgreSQL canceled it") == true, "\(error?.message ?? "")")
            #expect(took < .seconds(2), "\(took)")
            #expect(try db.rows("SHOW statement_timeout") == [[.text("500ms")]])

            db.statementTimeout = nil
            #expect(try db.rows("SHOW statement_timeout") == [[.text("0")]])
            error = expectError(.timeout) { try db.withStatementTimeout(.milliseconds(500)) { _ = try db.rows("SELECT pg_sleep(5)") } }
            #expect(error?.engineState == "57014")
            _ = try db.rows("SELECT pg_sleep(0.7)")  // no limit any more
            #expect(try db.rows("SHOW statement_timeout") == [[.text("0")]])
        }
    }

    /// The limit a block sets inside a transaction is undone by the transaction's rollback:
    /// the next statement has the database's limit all the same.
    @Test(.enabled(if: hasServer)) func aLimitSetInsideARolledBackTransactionDoesNotStay() throws {
        try withDatabase(.postgres) { db in
            db.statementTimeout = .seconds(2)
            #expect(try db.rows("SHOW statement_timeout") == [[.text("2s")]])
            try db.transaction {
                try db.withStatementTimeout(.milliseconds(300)) { () throws in
                    #expect(try db.rows("SHOW statement_timeout") == [[.text("300ms")]])
                }
                throw Rollback()
            }
            #expect(try db.rows("SHOW statement_timeout") == [[.text("2s")]])
            try db.transaction {
                try db.withStatementTimeout(.milliseconds(300)) { _ = try db.rows("SELECT 1") }
            }
            #expect(try db.rows("SHOW statement_timeout") == [[.text("2s")]])
        }
    }

    // MARK: PostgreSQL: a server that does not answer

    /// A server that accepts and never answers: opening ends with `.cannotOpen` after the
    /// default 10 s.
    @Test(.enabled(if: hasServer)) func connectingToASilentServerGivesUpAfterTenSecondsByDefault() throws {
        try FaultProxy.with(.silent) { proxy in
            var error: ActiveRecordError?
            let took = Self.timed { error = expectError(.cannotOpen) { _ = try Database(.postgres(proxy.connection())) } }
            #expect(took > .seconds(8) && took < .seconds(15), "\(took)")
            #expect(error?.message.contains("timeout") == true, "\(error?.message ?? "")")
        }
    }

    /// A shorter `connectTimeout`, and a `connect_timeout` in the connection string, which wins
    /// over the default.
    @Test(.enabled(if: hasServer)) func aShortConnectTimeoutAndTheStringsOwnAreHonoured() throws {
        try FaultProxy.with(.silent) { proxy in
            let explicit = Self.timed { expectError(.cannotOpen) { _ = try Database(.postgres(proxy.connection(), connectTimeout: .seconds(2))) } }
            #expect(explicit < .seconds(5), "\(explicit)")
            let inString = Self.timed { expectError(.cannotOpen) { _ = try Database(.postgres(proxy.connection(extra: "connect_timeout=2"))) } }
            #expect(inString < .seconds(5), "\(inString)")
            #expect(proxy.accepted == 2)
        }
    }

    /// The defaults come before the connection string (which then wins), the environment's
    /// PGCONNECT_TIMEOUT is left to libpq, and what the library needs comes after.
    @Test func theConnectionDefaultsComeBeforeTheConnectionString() throws {
        let parameters = postgreSQLConnectionParameters("host=/tmp", connectTimeout: nil)
        #expect(parameters.keywords == [
            "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
            "dbname", "client_encoding", "fallback_application_name",
        ])
        #expect(parameters.values == ["10", "1", "30", "10", "3", "60000", "host=/tmp", "UTF8", "activerecord"])
        #expect(postgreSQLConnectionParameters("", connectTimeout: .milliseconds(2500)).values.first == "3")
        if ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"] == nil {
            setenv("PGCONNECT_TIMEOUT", "7", 1)
            defer { unsetenv("PGCONNECT_TIMEOUT") }
            #expect(postgreSQLConnectionParameters("", connectTimeout: nil).keywords.first == "keepalives")
            #expect(postgreSQLConnectionParameters("", connectTimeout: .seconds(4)).values.first == "4")
        }
    }

    /// A server that stops answering mid-query (every byte frozen): the call ends with
    /// `.timeout` once the limit and its grace have passed, the connection is closed, and once
    /// the server answers again the pool opens another.
    @Test(.enabled(if: hasServer)) func aQueryToAServerThatStopsAnsweringEndsAndThePoolRecovers() throws {
        try withTestDatabase(.postgres) { test in
            try FaultProxy.with { proxy in
                let db = try Database(.postgres(proxy.connection(schema: test.schemaName)))
                db.statementTimeout = .seconds(1)
                try db.use {
                    try TimedNote.create(["title": "one"])
                    proxy.freeze()
                    var error: ActiveRecordError?
                    let took = Self.timed { error = expectError(.timeout) { _ = try TimedNote.all() } }
                    #expect(took > .seconds(1) && took < .seconds(4), "\(took)")
                    #expect(error?.message.contains("did not answer within 2.1 s") == true, "\(error?.message ?? "")")
                    #expect(error?.message.contains("the connection was closed") == true)
                    // Inside a transaction: the same error, and the transaction is gone with its connection.
                    proxy.unfreeze()
                    expectError(.timeout) {
                        try db.transaction {
                            try TimedNote.create(["title": "never committed"])
                            proxy.freeze()
                            try TimedNote.create(["title": "no answer"])
                        }
                    }
                    proxy.unfreeze()
                    #expect(try TimedNote.all().map(\.title) == ["one"])
                    #expect(proxy.accepted >= 3)
                }
            }
        }
    }

    /// A connection dropped while COMMIT is on its way: `.commitOutcomeUnknown`, not retryable,
    /// saying the transaction may or may not have been committed; the next one commits.
    @Test(.enabled(if: hasServer)) func aConnectionLostDuringCommitSaysTheOutcomeIsUnknown() throws {
        try withTestDatabase(.postgres) { test in
            try FaultProxy.with { proxy in
                // The table made directly: the proxied connection's first COMMIT is then the
                // transaction's, and carries its text (later ones name a prepared statement).
                try test.database.use { _ = try TimedNote.create(["title": "table made"]) }
                let db = try Database(.postgres(proxy.connection(schema: test.schemaName)))
                try db.use {
                    proxy.dropOnCommit = true
                    let error = expectError(.commitOutcomeUnknown) {
                        try db.transaction { _ = try TimedNote.create(["title": "maybe"]) }
                    }
                    #expect(error?.isRetryable == false)
                    #expect(error?.message.contains("may or may not have been committed") == true, "\(error?.message ?? "")")
                    #expect(error?.message.contains("will open another") == false)
                    proxy.dropOnCommit = false
                    try db.transaction { _ = try TimedNote.create(["title": "committed"]) }
                    #expect(try TimedNote.query().where("title = %@", "committed").count() == 1)
                }
            }
        }
    }
}

extension TestDatabase {
    /// The PostgreSQL schema's name (a test on PostgreSQL only).
    var schemaName: String { schema ?? "public" }
}

/// ``withDatabase(_:file:_:)`` for a test that opens its own database on the same place.
func withTestDatabase(_ engine: TestEngine, _ body: (TestDatabase) throws -> Void) throws {
    let test = try engine.makeDatabase()
    defer { test.drop() }
    try body(test)
}
