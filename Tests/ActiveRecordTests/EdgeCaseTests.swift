@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// One column of each type whose stored values can fail to fit.
final class Strict: Model {
    @Column var text: String = ""
    @Column var flag: Bool = false
    @Column var real: Float = 0
    @Column var double: Double = 0
    @Column var bytes: Data = Data()
    @Column var token: UUID = UUID()
    @Column var price: Decimal = 0
    @Column var small: Int8 = 0
}

@Suite("Edge cases")
struct EdgeCaseTests {
    /// Stores `sql` (a literal) into `column` of a fresh Strict row and reads the row back.
    private func read(_ column: String, stored sql: String, _ db: Database) throws -> ActiveRecordError? {
        try db.execute(#"DELETE FROM "Strict""#)
        try Strict.create(["token": UUID()])
        try db.execute("UPDATE \"Strict\" SET \(ident: column) = \(SQL(sql: sql))")
        return expectError(.typeMismatch) { _ = try Strict.all() }
    }

    /// What a column holds that does not fit its Swift type is a mismatch, never converted.
    /// (In a table the library made, column affinity converts most values on the way in:
    /// these come from another program's table, whose untyped columns keep what they get.
    /// SQLite only: PostgreSQL's typed columns refuse such values on the way in.)
    @Test func storedValuesThatDoNotFitAreTypeMismatches() throws {
        try withDatabase(.sqlite) { db throws in
            db.logger = nil  // the untyped columns are type mismatches automatic migration leaves alone
            try db.execute(#"CREATE TABLE "Strict" ("id" INTEGER PRIMARY KEY, "createdAt", "updatedAt", "text", "flag", "real", "double", "bytes", "token", "price", "small")"#)
            let cases: [(String, String, String)] = [
                ("real", "1e300", "Float (beyond Float's range)"),
                ("flag", "2", "Bool (only 0 and 1 are booleans)"),
                ("flag", "1.0", "a REAL value as Bool"),
                ("text", "42", "an INTEGER value as String"),
                ("text", "CAST(x'C328' AS TEXT)", "TEXT that is not valid UTF-8"),
                ("bytes", "'text'", "a TEXT value as Data"),
                ("double", "9007199254740993", "Double (a Double cannot hold it exactly)"),
                ("price", "0.1", "a REAL value as Decimal"),
                ("small", "300", "Int8 (out of Int8's range -128...127)"),
                ("small", "2.5", "Int8 (not a whole number"),
            ]
            for (column, stored, expected) in cases {
                let error = try read(column, stored: stored, db)
                #expect(error?.message.contains("Strict.\(column)") == true, "\(column) = \(stored)")
                #expect(error?.message.contains(expected) == true, "\(column) = \(stored): \(error?.message ?? "")")
            }
            // What fits is read: a whole REAL as an integer, 0/1 as Bool, an INTEGER a Double holds.
            try db.execute(#"UPDATE "Strict" SET "small" = 2.0, "flag" = 1, "double" = 42, "real" = 1e30"#)
            let fitting = try #require(try Strict.first())
            #expect(fitting.small == 2 && fitting.flag && fitting.double == 42 && fitting.real == 1e30)
        }
    }

    /// Values stay out of errors unless `includesBoundValuesInErrors` is on.
    @Test(arguments: TestEngine.all) func valuesStayOutOfErrors(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Strict.create([:])
            let secret = "secret-session-token-123"
            var messages: [String] = []
            let badToken = "UPDATE \"Strict\" SET \"token\" = '\(secret)'"
            let badPrice = "UPDATE \"Strict\" SET \"token\" = ?, \"price\" = '\(secret)'"
            switch engine {
            case .sqlite:
                // Stored as they are (TEXT affinity); reading them back fails.
                try db.execute(badToken)
                messages.append(expectError(.typeMismatch) { _ = try Strict.all() }?.message ?? "")
                try db.execute(badPrice, [.text(UUID().uuidString)])
                messages.append(expectError(.typeMismatch) { _ = try Strict.all() }?.message ?? "")
            case .postgres:
                // Refused by the uuid and numeric types; the server's message quotes the value: masked.
                messages.append(expectError(.invalidValue) { try db.execute(badToken) }?.message ?? "")
                messages.append(expectError(.invalidValue) { try db.execute(badPrice, [.text(UUID().uuidString)]) }?.message ?? "")
            }
            messages.append(expectError(.invalidValue) { _ = try Strict.query().where("small = %@", UInt64.max).fetch() }?.message ?? "")
            messages.append(expectError(.invalidPredicate) {
                _ = try Strict.query().where("text = '\(secret)' AND small = 99999999999999999999999999999e999").fetch()
            }?.message ?? "")
            messages.append(expectError(.unknownColumn) { _ = try Strict.query().where("nope = '\(secret)'").fetch() }?.message ?? "")
            messages.append(expectError(.invalidPredicate) { _ = try Strict.query().where("text = '\(secret)' AND").fetch() }?.message ?? "")
            for message in messages {
                #expect(!message.isEmpty)
                #expect(!message.contains(secret) && !message.contains("session") && !message.contains("18446744073709551615")
                    && !message.contains("99999"), "\(message)")
            }
            // The position still points at the column: the literal's characters are masked.
            #expect(messages[4] == "unknown column 'nope' at position 1 in \"nope = '************************'\"; Strict's columns are: id, createdAt, updatedAt, text, flag, real, double, bytes, token, price, small")
        }
    }

    @Test func pathsArePaths() throws {
        // A NUL byte would cut the path short and open another file.
        let nul = expectError(.cannotOpen) { _ = try Database(.file("/tmp/a\u{0}b.sqlite")) }
        #expect(nul?.message.contains("NUL") == true)
        expectError(.cannotOpen) { _ = try Database(.file("")) }
        // A device, a directory: not database files; nothing is left beside them.
        for suffix in ["-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: "/dev/null" + suffix) }
        let device = expectError(.cannotOpen) { _ = try Database(.file("/dev/null")) }
        #expect(device?.message.contains("not a regular file") == true)
        for suffix in ["-journal", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: "/dev/null" + suffix)) }
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        expectError(.cannotOpen) { _ = try Database(.file(directory.path)) }
        // "file:…" and ":memory:" given as paths are files (relative to the working directory),
        // with one database for the writer and the readers: a child process works in `directory`.
        for name in ["file::memory:", ":memory:", "file:data.sqlite?mode=memory"] {
            let process = Process()
            process.executableURL = QuickstartTests.productsDirectory.appendingPathComponent("ActiveRecordStressChild")
            process.arguments = ["open", name]
            process.currentDirectoryURL = directory
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            process.waitUntilExit()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(output == "path ./\(name) writer 1 reader 1\n", "\(name)")
            #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path), "\(name)")
        }
        // A URI only when asked for one.
        let uri = try Database(.uri("file:\(directory.path)/uri.sqlite?cache=private"))
        try uri.execute("CREATE TABLE t (x)")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("uri.sqlite").path))
    }
}
