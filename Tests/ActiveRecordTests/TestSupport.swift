import ActiveRecord
import Foundation
import Synchronization
import Testing

/// Collects the SQL a database runs, through its trace hook.
final class SQLRecorder: Sendable {
    private let statements = Mutex<[String]>([])

    init(_ database: Database) {
        database.trace { [weak self] sql in self?.statements.withLock { $0.append(sql) } }
    }

    var all: [String] { statements.withLock { $0 } }
    func reset() { statements.withLock { $0.removeAll() } }
    /// The statements run by `body`.
    func during(_ body: () throws -> Void) rethrows -> [String] {
        reset()
        try body()
        return all
    }
}

/// Runs `body` with a fresh in-memory database as the current one.
func withMemoryDatabase<R>(_ body: (Database) throws -> R) throws -> R {
    let database = try Database(.inMemory)
    return try database.use { try body(database) }
}

/// A fresh temporary directory, removed by the caller's `defer`.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("artest-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Expects `body` to throw an ``ActiveRecordError`` with `code`, and returns it.
@discardableResult
func expectError(
    _ code: ActiveRecordError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> ActiveRecordError? {
    do {
        try body()
        Issue.record("expected an error with code \(code), but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as ActiveRecordError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected ActiveRecordError(\(code)), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// Reads one column of one row with raw SQL, to check what is on disk.
func storedValue(_ database: Database, _ sql: String, _ arguments: [DatabaseValue] = []) throws -> DatabaseValue {
    try #require(try database.rows(sql, arguments).first?.first)
}
