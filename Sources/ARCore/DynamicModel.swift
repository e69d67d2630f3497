import Foundation

/// A model defined at run time from a ``TableSchema``, with no Swift class:
/// what the C API builds on. It shares the engine with ``Model``.
///
/// ```swift
/// let notes = DynamicModel(try TableSchema(name: "Note", columns: [
///     ColumnSchema(name: "title", type: .text),
/// ]))
/// let note = notes.makeRecord()
/// try note.set("title", .text("Buy milk"))
/// try note.save()
/// let again = try notes.find(note.id!)
/// ```
public final class DynamicModel: Sendable {
    /// The table this model reads and writes.
    public let schema: TableSchema
    package let table: TableEngine
    /// Per declared column, what ``DynamicRecord/set(at:_:)`` checks: its type and whether
    /// it takes `NULL`; and the values a new record starts with.
    package let columnTypes: [SQLType]
    package let columnNullability: [Bool]
    let defaultValues: [DatabaseValue]

    /// Makes a model for `schema`. A column that ``ColumnSchema/references`` a table needs
    /// that table to exist before records are written (SQLite's foreign keys).
    public convenience init(_ schema: TableSchema) {
        self.init(schema, parents: { [] })
    }

    /// A model whose referenced tables are other models' (the C API's belongs-to), which
    /// automatic migration creates first.
    package init(_ schema: TableSchema, parents: @escaping @Sendable () throws -> [TableEngine]) {
        self.schema = schema
        table = TableEngine(schema: schema, parents: parents)
        columnTypes = schema.columns.map(\.type)
        columnNullability = schema.columns.map(\.isNullable)
        defaultValues = schema.columns.map(\.defaultValue)
    }

    /// Makes a new, unsaved record holding the columns' default values.
    public func makeRecord() -> DynamicRecord { DynamicRecord(model: self) }

    /// A record to decode a row into (its values are all set by the decoding).
    package func recordForDecoding() -> DynamicRecord { DynamicRecord(decodingFor: self) }

    private func fetch(
        _ sql: @autoclosure () -> String, key: StatementKey.Kind? = nil, _ arguments: [DatabaseValue] = []
    ) throws -> [DynamicRecord] {
        try Database.current.withReader(table) { connection in
            try table.fetch(sql(), key: key, arguments, in: connection) { DynamicRecord(decodingFor: self) }
        }
    }

    /// Every record, in id order.
    public func all() throws -> [DynamicRecord] { try fetch(table.allSQL, key: .all) }

    /// The record with this id, or `nil`.
    public func find(_ id: Int64) throws -> DynamicRecord? {
        try fetch(table.findSQL, key: .find, [.integer(id)]).first
    }

    /// Every record whose `column` equals `value` (`IS NULL` for `.null`), in id order.
    /// - Throws: `.unknownColumn`.
    public func all(where column: String, equals value: DatabaseValue) throws -> [DynamicRecord] {
        let (condition, arguments) = try table.condition(column, value)
        return try fetch(table.selectAllSQL + " WHERE \(condition) ORDER BY \"id\"", key: nil, arguments)
    }

    /// The number of records.
    public func count() throws -> Int {
        try Database.current.withReader(table) { connection in
            try connection.withStatement("SELECT count(*) FROM \(schema.name.quotedIdentifier)") { statement in
                try statement.step() ? Int(statement.int64(0)) : 0
            }
        }
    }

    /// Destroys every record (`DELETE FROM "T"`: a run-time model has no callbacks or
    /// dependencies). Records in memory are not marked destroyed.
    /// - Returns: how many rows were deleted.
    @discardableResult
    public func destroyAll() throws -> Int {
        try Database.current.withTable(table) { connection in
            try connection.execute("DELETE FROM \(schema.name.quotedIdentifier)")
            connection.noteChange(schema.name)
            return connection.changedRowCount
        }
    }
}

/// A record of a ``DynamicModel``: column values by name.
public final class DynamicRecord: RecordStorage {
    /// The model this record belongs to.
    public let model: DynamicModel
    // Unchecked exclusivity: a record is confined to one thread, and no access to these
    // overlaps another (the dynamic checks cost more than the accesses on the C API's paths).
    @exclusivity(unchecked) package var header = RecordHeader()
    @exclusivity(unchecked) private var values: [DatabaseValue]
    @exclusivity(unchecked) private var originals: [DatabaseValue]

    init(model: DynamicModel) {
        self.model = model
        values = model.defaultValues
        originals = values
    }

    /// A record about to be decoded from a row: no defaults to build and overwrite.
    init(decodingFor model: DynamicModel) {
        self.model = model
        values = Array(repeating: .null, count: model.schema.columns.count)
        originals = []
    }

    /// The record of the row `statement` is on, selected with ``TableSchema/selectList``.
    /// - Throws: `.typeMismatch` for TEXT that is not valid UTF-8.
    package init(model: DynamicModel, decodingRowOf statement: Statement) throws {
        self.model = model
        header = RecordHeader(decoding: statement)
        values = try (0..<model.schema.columns.count).map { try statement.value(Int32($0 + 3)) }
        originals = values
    }

    /// The row id, assigned on first save; `nil` for a new record.
    public var id: Int64? { header.id }
    /// When the record was first saved.
    public var createdAt: Date? { header.createdAt }
    /// When the record was last saved with changes.
    public var updatedAt: Date? { header.updatedAt }
    /// Whether the record was never saved.
    public var isNewRecord: Bool { header.id == nil }
    /// Whether the record was destroyed.
    public var isDestroyed: Bool { header.isDestroyed }
    /// Whether any column differs from its value as last loaded or saved.
    public var hasChanges: Bool { values != originals }

    private func index(_ column: String) throws -> Int {
        guard let index = model.schema.columnIndex(named: column) else { throw model.schema.unknownColumn(column) }
        return index
    }

    /// The current value of `column`.
    /// - Throws: `.unknownColumn`.
    public func value(_ column: String) throws -> DatabaseValue {
        switch column {
        case "id": return value(at: 0)
        case "createdAt": return value(at: 1)
        case "updatedAt": return value(at: 2)
        default: return values[try index(column)]
        }
    }

    /// The value at `position` in ``TableSchema/allColumnNames`` (0–2: id, createdAt, updatedAt).
    package func value(at position: Int) -> DatabaseValue {
        switch position {
        case 0: id.map { .integer($0) } ?? .null
        case 1: createdAt.map { .real($0.timeIntervalSince1970) } ?? .null
        case 2: updatedAt.map { .real($0.timeIntervalSince1970) } ?? .null
        default: values[position - 3]
        }
    }

    /// Sets `column` to `value`. An integer is accepted for a `REAL` column.
    /// - Throws: `.unknownColumn`; `.typeMismatch` for a value of another
    ///   storage class, or `NULL` in a non-nullable column. The record is
    ///   unchanged on error.
    public func set(_ column: String, _ value: DatabaseValue) throws {
        try set(at: try index(column), value)
    }

    /// ``set(_:_:)`` by declared column index.
    package func set(at index: Int, _ value: DatabaseValue) throws {
        var column: String { model.schema.columns[index].name }  // for messages only
        let type = model.columnTypes[index]
        switch (type, value) {
        case (_, .null):
            guard model.columnNullability[index] else {
                throw ActiveRecordError(
                    .typeMismatch, "\(model.schema.name).\(column) is not nullable; it cannot be set to NULL")
            }
            values[index] = .null
        case (.integer, .integer), (.text, .text), (.blob, .blob):
            values[index] = value
        case (.real, .real(let double)) where !double.isNaN:
            values[index] = value
        case (.real, .integer(let int)):
            values[index] = .real(Double(int))
        case (.real, .real):
            throw ActiveRecordError(.invalidValue, "\(model.schema.name).\(column): NaN cannot be stored")
        default:
            throw ActiveRecordError(
                .typeMismatch,
                "\(model.schema.name).\(column) holds \(type.rawValue); a \(value.storageClassName) value cannot be stored in it")
        }
    }

    /// Saves the record: `INSERT` when new, else an `UPDATE` of the changed columns.
    public func save() throws { try model.table.save(self) }

    /// ``save()`` on `database` rather than the current one.
    package func save(in database: Database) throws { try model.table.save(self, in: database) }

    /// Destroys the record: deletes its row (`DELETE FROM "T" WHERE "id" = ?`).
    /// - Throws: `.misuse` for a new or already destroyed record; `.notFound` when the row
    ///   was deleted elsewhere (the record counts as destroyed).
    public func destroy() throws { try model.table.delete(self) }

    /// Reads the record's row again, discarding unsaved changes.
    public func reload() throws { try model.table.reload(self) }

    // MARK: RecordStorage

    package func bindColumn(_ index: Int, to statement: Statement, at parameter: Int32) throws {
        try statement.bind(values[index], at: parameter)
    }

    package func decodeColumn(_ index: Int, from statement: Statement, at column: Int32) throws {
        values[index] = try statement.value(column)
    }

    /// After a whole row was decoded: the originals share the values' storage (copied on write).
    package func didDecode() { originals = values }

    package func isColumnChanged(_ index: Int) -> Bool { values[index] != originals[index] }

    package func markColumnSaved(_ index: Int) { originals[index] = values[index] }

    /// After an insert: the originals share the values' storage (copied on write).
    package func markAllColumnsSaved(count: Int) { originals = values }

    package func originalValue(_ index: Int) -> DatabaseValue { originals[index] }

    package func restoreOriginal(_ index: Int, _ value: DatabaseValue) { originals[index] = value }
}

@available(*, unavailable, message: "Records are confined to one thread at a time")
extension DynamicRecord: Sendable {}

extension DynamicModel {
    /// Inserts new records of this model with one prepared statement, in one transaction
    /// (the caller's, or one of its own), and gives each its id and timestamps: the C API's
    /// `ar_record_insert_all`. SQL only (the caller runs validations first).
    /// - Throws: `.misuse` for a record of another model or one that is not new; the
    ///   engine's error. Nothing is inserted on error, and the records are new again.
    public func insertAll(_ records: [DynamicRecord]) throws {
        guard !records.isEmpty else { return }
        for (index, record) in records.enumerated() where record.model.table !== table || !record.isNewRecord || record.isDestroyed {
            throw ActiveRecordError(.misuse, "insertAll: record \(index + 1) is not a new record of \(table.schema.name)")
        }
        let database = try Database.current
        try database.transaction { try database.withTable(table) { try table.insertAll(records, in: $0) } }
    }
}
