@_spi(Engines) import ARCore
import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Logging
import Testing

/// A password in a connection string never shows: not in an error (libpq's own parse and
/// connection messages included), a log line, a location's or a database's description,
/// `dump`, nor the C API's `ar_last_error` (issue 31, point 1). And a NUL byte in a connection
/// string is refused, not cut (point 8).
@Suite("PostgreSQL: no password in any message")
struct PostgreSQLSecretTests {
    /// A connection string carrying a known password, and every form of it that must not show.
    struct Case: CustomTestStringConvertible, Sendable {
        let connection: String
        let secrets: [String]
        var testDescription: String { connection.replacingOccurrences(of: "\0", with: "\\0") }
    }

    /// Malformed and failing connection strings, each failing without a server (no DNS look-up:
    /// only 127.0.0.1, port 1, and socket directories that do not exist).
    static let corpus: [Case] = [
        Case(connection: "postgresql://ar:Sekr1t%ZZ@127.0.0.1:5432/db", secrets: ["Sekr1t"]),  // bad percent-encoding
        Case(connection: "postgresql://ar:Sekr1t%00x@127.0.0.1:5432/db", secrets: ["Sekr1t"]),  // %00 is forbidden
        Case(connection: "postgresql://ar:Sekr1t@[::1", secrets: ["Sekr1t"]),  // unclosed IPv6 bracket
        Case(connection: "postgresql://ar:Sekr1t@[::1]:notaport/db", secrets: ["Sekr1t"]),  // bad port
        Case(connection: "postgresql://ar:Sekr1t@127.0.0.1:5432/db?bogus=1", secrets: ["Sekr1t"]),  // unknown option
        Case(connection: "postgresql://ar:Sekr1t@127.0.0.1:1/db", secrets: ["Sekr1t"]),  // refused
        Case(connection: "postgres://ar:Sekr1t@/db?host=/nonexistent-socket-dir", secrets: ["Sekr1t"]),  // no such socket
        Case(connection: "postgresql://ar:S%65kr1t%21@127.0.0.1:1/db", secrets: ["Sekr1t!", "S%65kr1t%21"]),  // encoded
        Case(connection: "postgresql://ar@127.0.0.1:1/db?password=Sekr1t", secrets: ["Sekr1t"]),  // in the query
        Case(connection: "postgresql://ar@127.0.0.1:1/db?pass%77ord=Sekr1t%2F&sslmode=bogus", secrets: ["Sekr1t/", "Sekr1t%2F"]),
        Case(connection: "postgresql://ar:Sek/r1t@127.0.0.1:1/db", secrets: ["Sek/r1t", "Sek"]),  // unencoded `/`: libpq misreads it
        Case(connection: "postgresql://ar:p@ss:Sekr1t@127.0.0.1:1/db", secrets: ["p@ss:Sekr1t", "Sekr1t"]),  // unencoded `@`
        Case(connection: "host=/nonexistent-socket-dir user=ar password='a b Sekr1t' dbname=x", secrets: ["a b Sekr1t"]),
        Case(connection: #"host=127.0.0.1 port=1 password='Sek\'r1t' dbname=x"#, secrets: ["Sek'r1t", #"Sek\'r1t"#]),
        Case(connection: "host=127.0.0.1 port=notaport password=Sekr1t dbname=x", secrets: ["Sekr1t"]),
        Case(connection: "host=/tmp password=Sekr1t bogus=1", secrets: ["Sekr1t"]),  // unknown option
        Case(connection: "host=/tmp password='Sekr1t", secrets: ["Sekr1t"]),  // unterminated quote
        Case(connection: "host=/tmp Sekr1t password=Sekr1t", secrets: ["Sekr1t"]),  // missing "=" after a word
        Case(connection: "host=/nonexistent-socket-dir dbname='postgresql://ar:Sekr1t@127.0.0.1/db'", secrets: ["Sekr1t"]),
        Case(connection: "postgresql://ar:Sekr1t@127.0.0.1:5432/post\0gres", secrets: ["Sekr1t"]),  // NUL byte
    ]

    /// Every text a user or a log can see of `error`.
    static func texts(of error: any Error) -> [String] {
        var texts = [String(describing: error), String(reflecting: error), error.localizedDescription]
        if let error = error as? ActiveRecordError { texts += [error.message, error.description] }
        return texts
    }

    static func expectNoSecret(_ texts: [String], _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for text in texts {
            for secret in secrets {
                #expect(!text.contains(secret), "\(secret) shows in: \(text)", sourceLocation: sourceLocation)
            }
        }
    }

    static func dumped(_ value: Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }

    @Test(arguments: corpus) func openingFailsWithoutShowingThePassword(_ test: Case) throws {
        let location = DatabaseLocation.postgres(test.connection, connectTimeout: .seconds(2))
        Self.expectNoSecret(
            [location.description, String(describing: location), String(reflecting: location), Self.dumped(location)], test.secrets)
        do {
            _ = try Database(location)
            Issue.record("\(test.testDescription) opened")
        } catch let error as ActiveRecordError {
            #expect(error.code == .configuration || error.code == .cannotOpen, "\(error)")
            Self.expectNoSecret(Self.texts(of: error), test.secrets)
        }
    }

    /// The message still says what is wrong, with the password masked.
    @Test func libpqsReasonsStayReadable() throws {
        let percent = expectError(.configuration) { _ = try Database(.postgres("postgresql://ar:Sekr1t%ZZ@127.0.0.1:5432/db")) }
        #expect(percent?.message == #"the PostgreSQL connection string is not valid: invalid percent-encoded token: "***""#)
        let bracket = expectError(.configuration) { _ = try Database(.postgres("postgresql://ar:Sekr1t@[::1")) }
        #expect(bracket?.message.contains(#""postgresql://ar:***@[::1""#) == true, "\(bracket?.message ?? "")")
        let refused = expectError(.cannotOpen) { _ = try Database(.postgres("postgresql://ar:Sekr1t@127.0.0.1:1/db")) }
        #expect(refused?.message.hasPrefix("cannot connect to PostgreSQL at postgresql://ar@127.0.0.1:1/db: ") == true, "\(refused?.message ?? "")")
        #expect(refused?.message.contains("Connection refused") == true)
        #expect(DatabaseLocation.postgres("postgresql://ar:Sek/r1t@127.0.0.1:1/db").description.contains("Sek") == false)
    }

    /// `…/post\0gres` used to connect to `post`: the NUL byte is refused before libpq reads the string.
    @Test func aNULByteInTheConnectionStringIsRefused() throws {
        for connection in ["postgresql://ar@127.0.0.1:1/post\0gres", "host=127.0.0.1 port=1 dbname=post\0gres"] {
            let error = expectError(.configuration) { _ = try Database(.postgres(connection)) }
            #expect(error?.message.contains("NUL byte") == true)
        }
        if let server = TestEngine.postgresConnection {
            // With a server that has a database `post…`'s prefix would name: still refused.
            expectError(.configuration) { _ = try Database(.postgres(server + "\0 dbname=other")) }
        }
    }

    /// The C API's ar_open: the message of ar_last_error(NULL) has no password. (C strings
    /// cannot hold a NUL byte inside, so the NUL case is Swift's alone.)
    @Test func arOpenShowsNoPasswordInItsLastError() throws {
        let c = try CABITests.library()
        for test in Self.corpus where test.connection.hasPrefix("postgres") && !test.connection.utf8.contains(0) {
            var database: OpaquePointer?
            let result = c.open(test.connection, &database)
            #expect(result != CAPI.ok && database == nil, "\(test.connection)")
            let message = String(cString: c.lastError(nil))
            #expect(!message.isEmpty)
            Self.expectNoSecret([message], test.secrets)
        }
    }

    /// A database that opened with a password: its path, description, `dump`, its errors when
    /// the connection is lost, and every log line at trace, all without the password.
    @Test(.enabled(if: TestEngine.postgresConnection != nil)) func anOpenDatabaseShowsNoPasswordAnywhere() throws {
        try FaultProxy.with { proxy in
            // The test server trusts its clients: the password is never asked for.
            let url = "postgresql://ar:Sekr1t%21@127.0.0.1:\(proxy.port)/postgres?connect_timeout=5"
            let db = try Database(.postgres(url), automaticMigrations: false)
            let log = LogLines()
            db.logger = log.logger(level: .trace, metadata: true)
            let secrets = ["Sekr1t", "Sekr1t%21"]
            var texts = [db.path, db.location.description, String(describing: db), String(reflecting: db), Self.dumped(db)]
            texts += [Self.dumped(db.location), String(reflecting: db.location)]
            #expect(db.path == "postgresql://ar@127.0.0.1:\(proxy.port)/postgres")
            _ = try db.rows("SELECT 1")
            proxy.dropAll()
            do {
                _ = try db.rows("SELECT 2")
                Issue.record("the query ran on a dropped connection")
            } catch {
                texts += Self.texts(of: error)
            }
            _ = try db.rows("SELECT 3")  // on a new connection
            proxy.freeze()
            db.statementTimeout = .milliseconds(200)
            do {
                _ = try db.rows("SELECT 4")
                Issue.record("the query ran through a frozen proxy")
            } catch {
                texts += Self.texts(of: error)
            }
            proxy.unfreeze()
            texts += log.all
            #expect(log.all.contains { $0.contains("SELECT 1") })
            Self.expectNoSecret(texts, secrets)
        }
    }
}
