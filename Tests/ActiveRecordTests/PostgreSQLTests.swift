@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Dispatch
import Foundation
import Synchronization
import Testing

/// What is PostgreSQL's own: opening, the pool, conflicts and aborted transactions, native
/// types, schema changes in place. (Everything else runs on both engines in the other suites.)
@Suite("PostgreSQL")
struct PostgreSQLTests {
    static let hasServer = TestEngine.postgresConnection != nil

    /// `make test` starts a server and asks for it: the suite must not quietly run on SQLite only.
    @Test func theSuiteRunsOnPostgreSQLWhenMakeTestAsks() {
        if ProcessInfo.processInfo.environment["AR_TEST_REQUIRE_POSTGRES"] == "1" {
            #expect(TestEngine.all == [.sqlite, .postgres], "AR_TEST_REQUIRE_POSTGRES=1 but AR_TEST_POSTGRES names no server")
        }
    }

    @Test func placeholdersAreNumberedOutsideStringsNamesAndComments() {
        func numbered(_ sql: String) -> String { rewritingPlaceholders(sql) { "$\($0)" }.sql }
        #expect(numbered(#"SELECT "a?" FROM t WHERE a = ? AND b = '?' AND c = ?"#)
            == #"SELECT "a?" FROM t WHERE a = $1 AND b = '?' AND c = $2"#)
        #expect(numbered("SELECT 'it''s ?', ? -- why?\n, ? /* a ? /* nested ? */ ? */ , ?")
            == "SELECT 'it''s ?', $1 -- why?\n, $2 /* a ? /* nested ? */ ? */ , $3")
        #expect(numbered(#"SELECT E'\'?', $$ ? $$, $tag$ ?' $tag$, ?"#) == #"SELECT E'\'?', $$ ? $$, $tag$ ?' $tag$, $1"#)
        #expect(numbered("SELECT $1, ?") == "SELECT $1, $1")  // `$1` is a parameter, not a tag
        #expect(rewritingPlaceholders("SELECT 1; ", { _ in "" }).hasMoreStatements == false)
        #expect(rewritingPlaceholders("SELECT 1; DROP TABLE t", { _ in "" }).hasMoreStatements)
        #expect(rewritingPlaceholders("SELECT ';' -- ; x", { _ in "" }).hasMoreStatements == false)
    }

    @Test(.enabled(if: hasServer)) func openingSaysWhatIsWrongAndNeverThePassword() throws {
        let bad = expectError(.configuration) { _ = try Database(.postgres("host=/tmp dbname")) }
        #expect(bad?.message.contains("not valid") == true)
        let unreachable = expectError(.cannotOpen) {
            _ = try Database(.postgres("host=/nonexistent-socket-directory user=ar dbname=postgres connect_timeout=2"))
        }
        #expect(unreachable?.message.contains("/nonexistent-socket-directory") == true)
        // A password given in the URL stays out of the path and the messages.
        let server = try #require(TestEngine.postgresConnection).split(separator: " ").first { $0.hasPrefix("host=") }
        let host = String(server?.dropFirst("host=".count) ?? "")
        let url = "postgresql://ar:hunter2@/postgres?host=\(host)"
        let database = try Database(.postgres(url))
        #expect(database.path == "postgresql://ar@\(host)/postgres")
        #expect(!database.location.description.contains("hunter2"))
        let missing = expectError(.cannotOpen) { _ = try Database(.postgres("postgresql://ar:hunter2@/no_such_database?host=\(host)")) }
        #expect(missing?.description.contains("hunter2") == false)
        #expect(missing?.message.contains("no_such_database") == true)
    }

    /// Native types, and what the drift report sees in them.
    @Test(.enabled(if: hasServer)) func columnsHaveNativeTypes() throws {
        try withDatabase(.postgres) { db in
            try Everything().save()
            let types = try db.withSchema { connection, dialect in
                try dialect.columns(of: "Everything", connection).map { "\($0.name) \($0.type)" }
            }
            for expected in ["id bigint", "createdAt double precision", "string text", "int bigint", "double double precision",
                             "float double precision", "bool boolean", "decimal numeric", "date double precision",
                             "data bytea", "uuid uuid", "tags jsonb", "address jsonb", "url text", "role text"] {
                #expect(types.contains(expected), "\(expected) in \(types)")
            }
            #expect(try db.drift(of: [Everything.self]) == [TableDrift(table: "Everything")])
        }
    }

    /// Each transaction owns a pooled connection: four threads hold transactions open at the
    /// same moment (on a single writer the second would wait for the first); a fifth thread,
    /// finding every connection held for longer than it may wait, fails with `.busy`.
    @Test(.enabled(if: hasServer)) func severalThreadsWriteAtOnceAndAFullPoolSaysBusy() throws {
        try withDatabaseLocation(.postgres) { place in
            let connection = String(place.argument.dropFirst("postgres:".count))
            let db = try Database(.postgres(connection, maximumConnections: 4, connectionWait: .milliseconds(300)))
            try db.use { try Tally.destroyAll() }
            let inside = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0)
            let group = DispatchGroup()
            let failures = Mutex<[String]>([])
            for worker in 0..<4 {
                DispatchQueue.global().async(group: group) {
                    do {
                        try db.use {
                            try db.transaction {
                                try Tally.create(["worker": worker])
                                inside.signal()
                                go.wait()
                            }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            for _ in 0..<4 { #expect(inside.wait(timeout: .now() + 20) == .success) }  // all four inside at once
            let busy = expectError(.busy) { try db.use { _ = try Tally.count() } }
            #expect(busy?.isRetryable == true)
            for _ in 0..<4 { go.signal() }
            group.wait()
            #expect(failures.withLock { $0 } == [])
            try db.use { () throws in #expect(try Tally.count() == 4) }
        }
    }

    /// Two transactions updating two rows in opposite orders deadlock: PostgreSQL ends one, and
    /// the caller gets `.transactionConflict` (retryable); the other commits.
    @Test(.enabled(if: hasServer)) func aDeadlockIsARetryableConflict() throws {
        try withDatabase(.postgres) { db in
            let first = try Tally.create(["n": 0]), second = try Tally.create(["n": 0])
            let ids = [first.id!, second.id!]
            let locked = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
            let outcomes = Mutex<[String]>([])
            let group = DispatchGroup()
            for order in [[0, 1], [1, 0]] {
                DispatchQueue.global().async(group: group) {
                    let outcome = Result {
                        try db.use {
                            try db.transaction {
                                try db.execute(#"UPDATE "Tally" SET "n" = "n" + 1 WHERE "id" = ?"#, [.integer(ids[order[0]])])
                                locked.signal()
                                proceed.wait()
                                try db.execute(#"UPDATE "Tally" SET "n" = "n" + 1 WHERE "id" = ?"#, [.integer(ids[order[1]])])
                            }
                        }
                    }
                    switch outcome {
                    case .success: outcomes.withLock { $0.append("committed") }
                    case .failure(let error as ActiveRecordError):
                        outcomes.withLock { $0.append("\(error.code) \(error.isRetryable) \(error.engineState ?? "")") }
                    case .failure(let error): outcomes.withLock { $0.append("\(error)") }
                    }
                }
            }
            locked.wait()
            locked.wait()
            proceed.signal()
            proceed.signal()
            group.wait()
            #expect(outcomes.withLock { $0.sorted() } == ["committed", "transactionConflict true 40P01"])
            #expect(try Tally.all().map(\.n) == [1, 1])  // the winner's two updates; nothing of the loser's
        }
    }

    /// A failed statement aborts PostgreSQL's transaction: what follows inside it fails, and a
    /// transaction whose failure was swallowed does not commit silently. A nested transaction
    /// (a savepoint) is the way to go on after a statement fails.
    @Test(.enabled(if: hasServer)) func aFailedStatementAbortsTheTransaction() throws {
        try withDatabase(.postgres) { db in
            try Account.create(["email": "taken"])
            let next = expectError(.transactionAborted) {
                try db.transaction {
                    _ = try? Account.create(["email": "taken"])
                    try Account.create(["email": "other"])
                }
            }
            #expect(next?.engineState == "25P02")
            let swallowed = expectError(.transactionAborted) {
                try db.transaction { _ = try? Account.create(["email": "taken"]) }
            }
            #expect(swallowed?.message.contains("it was rolled back") == true)
            #expect(try Account.count() == 1)
            try db.transaction {
                _ = try? db.transaction { try Account.create(["email": "taken"]) }  // a savepoint, rolled back alone
                try Account.create(["email": "kept"])
            }
            #expect(try Account.all().map(\.email) == ["taken", "kept"])
        }
    }

    /// A cursor reads a server cursor in batches of 256: more rows than a batch come in order;
    /// inside a transaction the records it gives can be saved as it goes.
    @Test(.enabled(if: hasServer)) func aCursorReadsInBatchesAndItsTransactionWritesMeanwhile() throws {
        try withDatabase(.postgres) { db in
            try db.transaction { for n in 0..<1_000 { try Reading.create(["n": n]) } }
            var seen: [Int] = []
            try Reading.query().forEach { seen.append($0.n) }
            #expect(seen == Array(0..<1_000))
            try db.transaction {
                try Reading.query().where("n < %@", 600).forEach { reading in
                    reading.n += 10_000
                    try reading.save()
                }
            }
            #expect(try Reading.query().where("n >= %@", 10_000).count() == 600)
        }
    }

    /// Versioned migrations change PostgreSQL tables in place: a dropped column goes with its
    /// index, a retyped one converts each value (and a value that does not convert fails the
    /// step, changing nothing).
    @Test(.enabled(if: hasServer)) func schemaChangesAreMadeInPlace() throws {
        try withDatabaseLocation(.postgres) { place in
            let setup = try Database(place.location)
            try setup.execute(#"CREATE TABLE "Item" ("id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "title" TEXT, "legacy" BYTEA, "count" TEXT, "flag" BIGINT)"#)
            try setup.execute(#"CREATE INDEX "Item_legacy" ON "Item" ("legacy")"#)
            try setup.execute(#"INSERT INTO "Item" ("title", "count", "flag") VALUES ('a', '42', 1), ('b', '-3', 0)"#)
            var migrator = Migrator()
            migrator.register("drop legacy") { try $0.dropColumn("legacy", from: "Item") }
            migrator.register("count as integer") { try $0.changeColumnType("count", in: "Item", to: .integer) }
            migrator.register("flag as boolean") { try $0.changeColumnType("flag", in: "Item", to: .integer, kind: .boolean) }
            let db = try Database(place.location, migrator: migrator)
            #expect(try db.rows(#"SELECT "title", "count", "flag" FROM "Item" ORDER BY "id""#)
                == [[.text("a"), .integer(42), .integer(1)], [.text("b"), .integer(-3), .integer(0)]])
            let types = try db.withSchema { connection, dialect in try dialect.columns(of: "Item", connection).map(\.type) }
            #expect(types == ["bigint", "text", "bigint", "boolean"])
            #expect(try indexNames(db, "Item") == [])
            try db.execute(#"INSERT INTO "Item" ("title") VALUES ('not a number')"#)
            var retitle = Migrator()
            retitle.register("title as integer") { try $0.changeColumnType("title", in: "Item", to: .integer) }
            let error = expectError(.migrationFailed) { _ = try Database(place.location, migrator: retitle) }
            #expect(error?.message.contains("title as integer") == true)
            #expect(try db.rows(#"SELECT count(*) FROM "Item" WHERE "title" = 'not a number'"#) == [[.integer(1)]])
        }
    }

    /// PostgreSQL would cut a name longer than 63 bytes short (two long names could become
    /// one): the library refuses it.
    @Test(.enabled(if: hasServer)) func namesLongerThanPostgreSQLKeepsAreRefused() throws {
        try withDatabase(.postgres) { _ in
            let long = String(repeating: "n", count: 64)
            let model = DynamicModel(try TableSchema(name: long, columns: [ColumnSchema(name: "x", type: .text)]))
            let error = expectError(.invalidModel) { try model.makeRecord().save() }
            #expect(error?.message.contains("at most 63") == true)
        }
    }
}
