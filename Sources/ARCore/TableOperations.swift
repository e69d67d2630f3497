#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The engine of one table: its schema, the SQL the library runs on it (built once),
/// and the CRUD on records of it — insert, update of changed columns, delete, reload,
/// decoding rows. Shared by every record of the table (``Model`` classes and
/// ``DynamicModel``s alike). Immutable.
package final class TableOperations: Sendable {
    private static let serials = Atomic<UInt64>(0)

    package let schema: TableSchema
    /// A number never reused, so that a database can remember which tables it prepared.
    package let serial: UInt64
    package let selectAllSQL: String
    /// `SELECT … ORDER BY "id"`.
    package let allSQL: String
    package let findSQL: String
    package let deleteSQL: String
    /// `"T"."id"`, `"T"."createdAt"`, `"T"."updatedAt"`, then each declared column, qualified.
    package let qualifiedColumns: [String]
    /// ``qualifiedColumns`` joined: the select list of a record query.
    package let qualifiedSelectList: String
    /// Column and property names → position in ``TableSchema/allColumnNames``.
    private let positions: [String: Int]
    /// `[index]` for each declared column: the ``changedColumns(of:)`` of an update of one
    /// column, made once rather than allocated per update.
    private let singleColumns: [[Int]]
    /// How many columns the model declares (`schema.columns.count`, read per insert without
    /// reaching the array).
    private let columnCount: Int
    /// The declared column holding a `UUID` or `String` key (``TableSchema/keyIndex``); `nil`
    /// for an integer key, held by the record's header (read once per write, not per row).
    package let keyIndex: Int?
    /// The tables this one's foreign keys reference (its belongs-to parents), resolved when
    /// first needed: automatic migration creates them first, since a foreign key needs its
    /// parent table to exist (to write to the child table on SQLite, to create it on PostgreSQL).
    package let parents: @Sendable () throws -> [TableOperations]

    /// Makes the engine of `schema`.
    /// - Parameters:
    ///   - propertyNames: the Swift property name of each declared column (a model class's),
    ///     so that queries and finders accept either name; empty for none.
    ///   - parents: the engines of the tables its foreign keys reference.
    package init(
        schema: TableSchema, propertyNames: [String] = [], parents: @escaping @Sendable () throws -> [TableOperations] = { [] }
    ) {
        self.schema = schema
        self.parents = parents
        serial = Self.serials.add(1, ordering: .relaxed).newValue
        selectAllSQL = schema.selectAllSQL
        allSQL = schema.selectAllSQL + " ORDER BY \(schema.quotedKey)"
        findSQL = schema.findSQL
        deleteSQL = schema.deleteSQL
        let table = schema.name.quotedIdentifier
        let header = schema.primaryKey.isAutoincrement ? "\(table).\(schema.quotedKey)" : TableSchema.savedMarkSQL
        qualifiedColumns = [header] + schema.allColumnNames.dropFirst().map { "\(table).\($0.quotedIdentifier)" }
        qualifiedSelectList = qualifiedColumns.joined(separator: ", ")
        var positions: [String: Int] = [:]
        for (position, name) in schema.allColumnNames.enumerated() where positions[name] == nil { positions[name] = position }
        for (index, name) in propertyNames.enumerated() where positions[name] == nil { positions[name] = index + 3 }
        // `id` names the primary key whatever its name; a UUID or String key is its declared column.
        let keyPosition = schema.keyIndex.map { $0 + 3 } ?? 0
        positions["id"] = keyPosition
        positions[schema.primaryKey.name] = keyPosition
        keyIndex = schema.keyIndex
        self.positions = positions
        singleColumns = schema.columns.indices.map { [$0] }
        columnCount = schema.columns.count
    }

    package func key(_ kind: StatementKey.Kind) -> StatementKey { StatementKey(table: serial, kind: kind) }

    /// The `INSERT` of a new record, in `dialect`.
    func insertSQL(_ dialect: any SQLDialect) -> String {
        dialect.insertSQL(into: schema.name, columns: schema.insertColumns, returning: schema.headerKeySQL)
    }

    /// The position of a column (or property) name in ``TableSchema/allColumnNames``
    /// (0–2 for `id`, `createdAt`, `updatedAt`), or `nil`.
    package func position(of name: String) -> Int? { positions[name] }

    // MARK: Records on the current database

    /// Saves `record` on the current database: `INSERT` when new, else an
    /// `UPDATE` of the changed columns, and no SQL at all when nothing changed.
    package func save(_ record: some RecordStorage) throws {
        try Database.withCurrent { try save(record, in: $0) }
    }

    /// ``save(_:)`` on `database`.
    @inline(__always)
    package func save(_ record: some RecordStorage, in database: Database) throws {
        guard !record.header.isDestroyed else {
            throw ActiveRecordError(.misuse, "cannot save \(schema.name) with \(keyText(of: record)): it was destroyed")
        }
        if record.header.id == nil {
            try database.withWriter(self) { try insert(record, in: $0) }
        } else {
            let changed = changedColumns(of: record)
            guard !changed.isEmpty else { return }
            try database.withWriter(self) { try update(record, columns: changed, in: $0) }
        }
    }

    /// Deletes `record`'s row on the current database (SQL only); see ``delete(_:in:)``.
    /// Inlined: out of line, its `Model` and `DynamicRecord` versions were merged into one
    /// body called through a thunk.
    @inline(__always)
    package func delete(_ record: some RecordStorage) throws {
        try Database.withCurrent { try $0.withWriter(self) { try delete(record, in: $0) } }
    }

    /// Re-reads `record` from the current database; see ``reload(_:in:locking:)``.
    package func reload(_ record: some RecordStorage, locking: Bool = false) throws {
        let database = try Database.current
        if locking { try database.requireTransaction(for: "reload(lock: true)") }
        try database.withWriter(self) { try reload(record, in: $0, locking: locking) }
    }

    // MARK: The engine

    /// `INSERT`s a new record with every column, and gives it its id and timestamps.
    package func insert(_ record: some RecordStorage, in connection: Connection) throws {
        if let keyIndex { try prepareKey(of: record, keyIndex) }
        let previous = record.header
        let now = Date.nowAsStored
        let stamp = DatabaseValue.real(now.timeIntervalSince1970)
        let id = try connection.withStatement(key(.insert), sql: { insertSQL(connection.dialect) }) { statement in
            try statement.bind(stamp, at: 1)
            try statement.bind(stamp, at: 2)
            try record.bindAllColumns(count: columnCount, to: statement, from: 3)
            return try statement.insert()
        }
        var header = previous
        // A record keyed by a declared column is marked saved by an id of 0.
        header.id = keyIndex == nil ? id : 0
        header.createdAt = now
        header.updatedAt = now
        record.header = header
        record.markAllColumnsSaved(count: columnCount)
        connection.onRollback(.header(record, previous))
        connection.noteChange(self)
    }

    /// `INSERT`s new records (the caller checked that they are), giving each its id and the
    /// batch's timestamps (one time for all): through the engine's bulk insert when it has one
    /// (PostgreSQL: many rows per statement; see ``insertAllInBulk(_:now:in:)``), else with one
    /// prepared statement run per record (SQLite). The caller holds a transaction: if it rolls
    /// back, the records are new again.
    /// - Throws: the engine's error, its message naming the record that failed ("record 5001
    ///   of 10000: …") when the engine can tell.
    package func insertAll<Record: RecordStorage>(_ records: [Record], in connection: Connection) throws {
        guard !records.isEmpty else { return }
        connection.onRollback { for record in records { record.header = RecordHeader() } }
        let now = Date.nowAsStored
        // The engine's bulk insert returns `id`: a table keyed otherwise inserts row by row.
        if records.count > 1, keyIndex == nil, schema.primaryKey.name == "id", try insertAllInBulk(records, now: now, in: connection) {
            return connection.noteChange(self)
        }
        let stamp = DatabaseValue.real(now.timeIntervalSince1970)
        let count = schema.columns.count
        // Keys first (a UUID made, a String checked), out of the loop of an integer-keyed table.
        if let keyIndex { for record in records { try prepareKey(of: record, keyIndex) } }
        try connection.withStatement(key(.insert), sql: { insertSQL(connection.dialect) }) { statement in
            for offset in records.indices {
                let record = records[offset]
                if offset > 0 { statement.resetForRebinding() }
                try statement.bind(stamp, at: 1)
                try statement.bind(stamp, at: 2)
                try record.bindAllColumns(count: count, to: statement, from: 3)
                do {
                    record.header.id = try statement.insert()
                } catch {
                    throw Self.failure(error, row: offset, of: records.count)
                }
                record.header.createdAt = now
                record.header.updatedAt = now
                record.markAllColumnsSaved(count: count)
            }
        }
        // A record keyed by a declared column is marked saved by an id of 0 (not the rowid).
        if keyIndex != nil { for record in records { record.header.id = 0 } }
        connection.noteChange(self)
    }

    /// Inserts each record, or updates the row that has its values in the `conflict` columns
    /// (declared column indexes, those of a unique index): the `updating` columns and
    /// `updatedAt` from the record (none: the row stays as it is). Each record then holds
    /// its row as the database has it (id, timestamps, every column). One prepared
    /// statement; the caller holds a transaction.
    /// - Returns: what the upsert did with each record, in order.
    package func upsert<Record: RecordStorage>(
        _ records: [Record], conflict: [Int], updating: [Int], in connection: Connection
    ) throws -> [UpsertOutcome] {
        let count = schema.columns.count
        let now = DatabaseValue.real(Date.nowAsStored.timeIntervalSince1970)
        let sql = {
            connection.dialect.upsertSQL(
                into: self.schema.name, columns: self.schema.insertColumns,
                conflictColumns: conflict.map { self.schema.columns[$0].name },
                updateColumns: updating.isEmpty ? [] : updating.map { self.schema.columns[$0].name } + ["updatedAt"],
                returning: [self.schema.primaryKey.isAutoincrement ? self.schema.primaryKey.name : TableSchema.savedMarkSQL]
                    + self.schema.allColumnNames.dropFirst())
        }
        var outcomes: [UpsertOutcome] = []
        outcomes.reserveCapacity(records.count)
        try connection.withStatement(key(.upsert(conflict: conflict, updating: updating)), sql: sql) { statement in
            for offset in records.indices {
                let record = records[offset]
                if offset > 0 { statement.resetForRebinding() }
                if let keyIndex { try prepareKey(of: record, keyIndex) }
                let previous = record.header
                let originals = connection.transaction.depth > 0 ? (0..<count).map { record.originalValue($0) } : []
                try statement.bind(now, at: 1)
                try statement.bind(now, at: 2)
                try record.bindAllColumns(count: count, to: statement, from: 3)
                outcomes.append(try statement.upsert() ? .inserted : .updated)
                try decode(record, from: statement)
                connection.onRollback(.update(record, previous, columns: Array(0..<count), originals: originals))
            }
        }
        if !records.isEmpty { connection.noteChange(self) }
        return outcomes
    }

    /// The indexes of the columns that changed since the record was loaded or saved.
    package func changedColumns(of record: some RecordStorage) -> [Int] {
        // Most saves change one column: its array is kept (see ``singleColumns``); an array
        // is made only from a second changed column on.
        let only = record.onlyChangedColumn(count: singleColumns.count)
        if only >= 0 { return singleColumns[only] }
        if only == -1 { return [] }
        var first = -1
        var changed: [Int] = []
        record.forEachChangedColumn(count: singleColumns.count) { index in
            if first < 0 {
                first = index
            } else {
                if changed.isEmpty { changed = [first] }
                changed.append(index)
            }
        }
        if first < 0 || !changed.isEmpty { return changed }
        return singleColumns[first]
    }

    /// `UPDATE`s the `changed` columns (from ``changedColumns(of:)``, not empty) and `updatedAt`.
    /// - Throws: `.notFound` when the row is gone.
    package func update(_ record: some RecordStorage, columns changed: [Int], in connection: Connection) throws {
        guard let id = record.header.id, !changed.isEmpty else { return }
        // A table keyed by a declared column, out of line: its key is that column's saved value.
        if keyIndex != nil { return try updateKeyed(record, columns: changed, in: connection) }
        if let locking = schema.lockingIndex {
            return try updateLocked(record, id: id, columns: changed, locking: locking, in: connection)
        }
        let previous = record.header
        // Kept to undo in a transaction: one column's original inline, several in an array.
        let inTransaction = connection.transaction.depth > 0
        let original = inTransaction && changed.count == 1 ? record.originalValue(changed[0]) : .null
        let originals = inTransaction && changed.count > 1 ? changed.map { record.originalValue($0) } : []
        let now = Date.nowAsStored
        try connection.withStatement(key(.update(changed)), sql: { schema.updateSQL(columns: changed) }) { statement in
            for (offset, index) in changed.enumerated() {
                try record.bindColumn(index, to: statement, at: Int32(offset + 1))
            }
            try statement.bind(.real(now.timeIntervalSince1970), at: Int32(changed.count + 1))
            try statement.bind(.integer(id), at: Int32(changed.count + 2))
            _ = try statement.step()
        }
        guard connection.changedRowCount > 0 else {
            throw ActiveRecordError(.notFound, "\(schema.name) with id \(id) no longer exists; nothing was updated")
        }
        finishUpdate(record, columns: changed, previous: previous, original: original, originals: originals, at: now, in: connection)
    }

    /// After an update's statement: the record's `updatedAt` and saved columns, what a rollback
    /// restores, the change noted.
    @inline(__always)
    func finishUpdate(
        _ record: some RecordStorage, columns changed: [Int], previous: RecordHeader, original: DatabaseValue,
        originals: [DatabaseValue], at now: Date, in connection: Connection
    ) {
        record.header.updatedAt = now
        for index in changed { record.markColumnSaved(index) }
        if changed.count == 1 {
            connection.onRollback(.updateOne(record, previous, column: changed[0], original: original))
        } else {
            connection.onRollback(.update(record, previous, columns: changed, originals: originals))
        }
        connection.noteChange(self)
    }

    /// ``update(_:columns:in:)`` of a table locked optimistically: the row is updated only
    /// while it holds the record's lock version, which the update increments.
    /// - Throws: `.staleRecord` when another transaction changed the row since; `.notFound`
    ///   when the row is gone.
    func updateLocked(
        _ record: some RecordStorage, id: Int64, columns changed: [Int], locking: Int, in connection: Connection
    ) throws {
        let expected = try lockVersion(of: record, locking)
        let columns = changed.filter { $0 != locking }
        let previous = record.header
        let originals = connection.transaction.depth > 0 ? columns.map { record.originalValue($0) } : []
        let previousVersion = record.originalValue(locking)
        let now = Date.nowAsStored
        try connection.withStatement(key(.update(columns)), sql: { schema.updateSQL(columns: columns) }) { statement in
            for (offset, index) in columns.enumerated() {
                try record.bindColumn(index, to: statement, at: Int32(offset + 1))
            }
            let next = Int32(columns.count)
            try statement.bind(.integer(expected &+ 1), at: next + 1)
            try statement.bind(.real(now.timeIntervalSince1970), at: next + 2)
            try statement.bind(try keyValue(of: record, id: id), at: next + 3)
            try statement.bind(.integer(expected), at: next + 4)
            _ = try statement.step()
        }
        guard connection.changedRowCount > 0 else {
            throw try staleOrGone(keyValue(of: record, id: id), expected, locking, "updated", in: connection)
        }
        record.header.updatedAt = now
        for index in columns { record.markColumnSaved(index) }
        try record.assignColumn(locking, .integer(expected &+ 1))
        record.markColumnSaved(locking)
        connection.onRollback(.update(record, previous, columns: columns, originals: originals))
        // Rolled back: the record holds the version it had, as current and as original value.
        connection.onRollback {
            try? record.assignColumn(locking, .integer(expected))
            record.restoreOriginal(locking, previousVersion)
        }
        connection.noteChange(self)
    }

    /// `DELETE`s the record's row of a table locked optimistically, only while it holds the
    /// record's lock version; returns whether there was a row.
    /// - Throws: `.staleRecord` when the row is there with another version (nothing deleted).
    private func deleteLocked(_ record: some RecordStorage, id: Int64, locking: Int, in connection: Connection) throws -> Bool {
        let expected = try lockVersion(of: record, locking)
        let sql = schema.lockedDeleteSQL.unsafelyUnwrapped
        let key = try keyValue(of: record, id: id)
        let deleted = try connection.withStatement(sql, [key, .integer(expected)]) { statement in
            _ = try statement.step()
            return connection.changedRowCount > 0
        }
        if deleted {
            connection.noteChange(self)
            return true
        }
        let error = try staleOrGone(key, expected, locking, "destroyed", in: connection)
        if error.code == .staleRecord { throw error }
        return false
    }

    /// The record's lock version: the current value of the locking column.
    private func lockVersion(of record: some RecordStorage, _ locking: Int) throws -> Int64 {
        guard case .integer(let version) = try record.currentValue(locking) else {
            throw ActiveRecordError(.invalidValue, "\(schema.name).\(schema.columns[locking].name) holds no lock version")
        }
        return version
    }

    /// Why a write of a locked table's row changed nothing: `.staleRecord` when the row is
    /// there (with another version), else `.notFound`.
    private func staleOrGone(_ key: DatabaseValue, _ expected: Int64, _ locking: Int, _ verb: String, in connection: Connection) throws
        -> ActiveRecordError
    {
        let exists = try connection.withStatement(self.key(.find), sql: { findSQL }, [key]) { try $0.step() }
        let described = keyText(key)
        guard exists else {
            return ActiveRecordError(.notFound, "\(schema.name) with \(described) no longer exists; nothing was \(verb)")
        }
        return ActiveRecordError(
            .staleRecord,
            "\(schema.name) with \(described) was changed by another transaction since it was loaded (its "
                + "\(schema.columns[locking].name) is no longer \(expected)); nothing was \(verb). Reload it (or run the "
                + "transaction again), apply the change again, and retry")
    }

    /// `DELETE`s the row with this id (no record involved); returns whether there was one.
    @inline(__always)
    package func delete(id: Int64, in connection: Connection) throws -> Bool {
        let statement = try connection.keyedStatement(key(.delete), sql: { deleteSQL })
        guard try connection.execute(statement, binding: id) > 0 else { return false }
        connection.noteChange(self)
        return true
    }

    /// `DELETE`s the record's row and marks it destroyed.
    /// - Throws: `.notFound` when the row was already gone (the record is marked destroyed anyway).
    package func delete(_ record: some RecordStorage, in connection: Connection) throws {
        guard let id = record.header.id else {
            throw ActiveRecordError(.misuse, "cannot destroy a \(schema.name) that was never saved")
        }
        guard !record.header.isDestroyed else {
            throw ActiveRecordError(.misuse, "\(schema.name) with \(keyText(of: record)) was already destroyed")
        }
        let deleted: Bool
        if let locking = schema.lockingIndex {
            deleted = try deleteLocked(record, id: id, locking: locking, in: connection)
        } else if keyIndex != nil {
            deleted = try delete(key: keyValue(of: record, id: id), in: connection)
        } else {
            deleted = try delete(id: id, in: connection)
        }
        connection.undestroyOnRollback(record)
        record.header.isDestroyed = true
        if !deleted {
            throw ActiveRecordError(.notFound, "\(schema.name) with \(keyText(of: record)) no longer exists")
        }
    }
}

