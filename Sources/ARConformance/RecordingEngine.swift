import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
@_spi(Engines) import ARCore

/// An engine that runs nothing: every statement returns no row, every write changes one row,
/// an insert returns the next id of a counter, an upsert says "inserted". With ``Database/trace(_:)`` it shows the SQL each call of
/// the library writes in a dialect, without a database (as Fluent's dummy database and
/// GRDB's `assertEqualSQL`): the SQL compiler's tests read it as text.
///
/// ```swift
/// let database = try Database(RecordingEngine.location(SQLiteDialect()))
/// database.trace { sql in print(sql) }
/// try database.use { _ = try Book.query().where("pages > %@", 100).fetch() }
/// ```
///
/// Schema reads return nothing, so a model's first use writes its `CREATE TABLE`.
package struct RecordingEngine: DatabaseEngine {
    package let dialect: any SQLDialect
    package var sharing: ConnectionSharing { .singleWriter(readers: 0) }
    package var description: String { "nothing (\(dialect.name) SQL recorded)" }
    package var notes: [String] { [] }

    /// A location that opens a database of this engine, writing `dialect`'s SQL.
    package static func location(_ dialect: any SQLDialect) -> DatabaseLocation {
        .engine(description: "nothing (\(dialect.name) SQL recorded)", identity: UUID().uuidString) { _ in
            RecordingEngine(dialect: dialect)
        }
    }

    package func connect(_ role: ConnectionRole) throws -> any EngineConnection { RecordingConnection() }
}

/// A connection of ``RecordingEngine``: it knows only whether a transaction is open.
final class RecordingConnection: EngineConnection {
    /// Whether a transaction is open, from the statements run (`BEGIN…`, `COMMIT`, `ROLLBACK`).
    var isInTransaction = false
    /// The last id ``RecordingStatement/insert()`` returned.
    var lastId: Int64 = 0
    /// 1 after a write (`INSERT`, `UPDATE`, `DELETE`), 0 after anything else.
    var changedRowCount = 0

    func prepare(_ sql: String, _ use: StatementUse) throws -> any EngineStatement { RecordingStatement(sql: sql, connection: self) }
    var isInFailedTransaction: Bool { false }
    var hasOpenTransaction: Bool { isInTransaction }
    var isUsable: Bool { true }
    func setStatementTimeout(_ timeout: Duration?) {}
    func interrupt() {}
    func close() {}
}

/// A statement of ``RecordingEngine``: no rows, every column `NULL`.
final class RecordingStatement: EngineStatement {
    let sql: String
    unowned let connection: RecordingConnection
    let parameterCount: Int32
    /// The row an upsert leaves readable: `NULL`s.
    private let nulls = UnsafeMutableBufferPointer<Cell>.allocate(capacity: 64)

    init(sql: String, connection: RecordingConnection) {
        self.sql = sql
        self.connection = connection
        // The `?` outside quoted text and names.
        var count: Int32 = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "?" {
                count += 1
            }
        }
        parameterCount = count
        nulls.initialize(repeating: .null)
    }

    deinit { nulls.deallocate() }

    func bind(_ parameters: UnsafeBufferPointer<Cell>) throws {}
    func row() -> UnsafeBufferPointer<Cell> { UnsafeBufferPointer(nulls) }
    func resetKeepingBindings() {}

    func step() throws -> Bool {
        let verb = sql.prefix { $0 != " " }.uppercased()
        connection.changedRowCount = ["INSERT", "UPDATE", "DELETE"].contains(verb) ? 1 : 0
        if verb == "BEGIN" { connection.isInTransaction = true }
        if verb == "COMMIT" || (verb == "ROLLBACK" && !sql.uppercased().hasPrefix("ROLLBACK TO")) { connection.isInTransaction = false }
        return false
    }

    func insert() throws -> Int64 {
        connection.changedRowCount = 1
        connection.lastId += 1
        return connection.lastId
    }

    func upsert() throws -> Bool { _ = try insert(); return true }
    func reset() {}
    func finalize() {}
    func expandedSQL() -> String? { nil }
    var columnCount: Int32 { 0 }
    func columnName(_ index: Int32) -> String { "" }
}
