import Foundation

/// Identifies a statement the library generates for a table, so that the
/// statement cache is keyed by a few integers rather than by SQL text.
package struct StatementKey: Hashable {
    package enum Kind: Hashable {
        case insert, find, delete, all
        /// An `UPDATE` of these column indexes.
        case update([Int])
        /// An upsert on these conflict columns, updating these columns (declared column indexes).
        case upsert(conflict: [Int], updating: [Int])
        /// A query's records, by its compiled shape's serial (see ARQuery's `CompiledShape`).
        case query(UInt64)

        /// Written out: the derived `==` copies both values (their arrays) before comparing,
        /// out of line; this one reads only the cases, and a payload only when both have it
        /// (a write's look-up of its cached statement compares one key).
        @inline(__always)
        package static func == (lhs: Kind, rhs: Kind) -> Bool {
            switch lhs {
            case .insert: if case .insert = rhs { return true }
            case .find: if case .find = rhs { return true }
            case .delete: if case .delete = rhs { return true }
            case .all: if case .all = rhs { return true }
            case .update(let columns): if case .update(let others) = rhs { return columns == others }
            case .upsert(let conflict, let updating):
                if case .upsert(let otherConflict, let otherUpdating) = rhs {
                    return conflict == otherConflict && updating == otherUpdating
                }
            case .query(let serial): if case .query(let other) = rhs { return serial == other }
            }
            return false
        }
    }

    /// The ``TableEngine/serial`` of the table.
    package var table: UInt64
    package var kind: Kind

    package init(table: UInt64, kind: Kind) {
        self.table = table
        self.kind = kind
    }

    /// The key as one number, different for different keys, or 0 (the kinds with an array,
    /// serials too large to pack): a statement's key is compared by it without copying the
    /// key out of the statement. The low three bits tell the kind.
    @inline(__always)
    package var code: UInt64 {
        guard table < 1 << 32 else { return 0 }
        switch kind {
        case .insert: return table << 3 | 1
        case .find: return table << 3 | 2
        case .delete: return table << 3 | 3
        case .all: return table << 3 | 4
        case .query(let serial): return serial < 1 << 29 ? table << 32 | serial << 3 | 5 : 0
        case .update, .upsert: return 0
        }
    }
}

/// A prepared statement, owned by one ``Connection``, whatever the engine.
///
/// The statement is finalized in `deinit`, so nothing leaks on an error path. Parameters
/// are 1-based; result columns are 0-based.
package final class Statement {
    // The engine's statement, through ``EngineStatement``; and SQLite's, when it is one, called
    // directly (a trivial value: reading it copies a pointer). Neither is optional where it is
    // called through: an Optional existential would be copied through a value witness per call.
    package let sqlite: SQLiteStatement?
    private let engine: any EngineStatement
    /// The SQL text, with `?` placeholders.
    package let sql: String
    unowned let connection: Connection
    /// Set while a caller steps the statement, so that re-entrant use prepares a copy.
    @exclusivity(unchecked) var isInUse = false
    /// The key it is cached under, for statements the library generates.
    @exclusivity(unchecked) var cacheKey: StatementKey? {
        didSet { cacheCode = cacheKey?.code ?? 0 }
    }
    /// ``cacheKey``'s ``StatementKey/code``.
    @exclusivity(unchecked) private(set) var cacheCode: UInt64 = 0
    /// Whether every use binds all its parameters again (the library's own SQL, cached by
    /// key), so that resetting it need not clear the bindings first: clearing frees SQLite's
    /// copies of the texts and blobs, which the next bind then allocates again (~700
    /// instructions an insert of the benchmark's row). The last values bound stay held by
    /// SQLite until the statement's next use.
    @exclusivity(unchecked) var rebindsEveryParameter = false

    init(sqlite: SQLiteStatement, sql: String, connection: Connection) {
        self.sqlite = sqlite
        engine = sqlite
        self.sql = sql
        self.connection = connection
    }

    init(engine: any EngineStatement, sql: String, connection: Connection) {
        sqlite = nil
        self.engine = engine
        self.sql = sql
        self.connection = connection
    }

    deinit {
        if let sqlite { sqlite.finalize() } else { engine.finalize() }
    }

    // MARK: Binding (1-based)

    @inline(__always)
    package func bind(_ value: DatabaseValue, at index: Int32) throws {
        if let sqlite { try sqlite.bind(value, at: index) } else { try engine.bind(value, at: index) }
    }

    /// Binds text the caller keeps valid until this parameter is bound again or the
    /// statement is finalized (SQLite reads it in place; other engines copy it).
    @inline(__always)
    package func bindText(borrowing utf8: UnsafeRawBufferPointer, at index: Int32) throws {
        if let sqlite {
            try sqlite.bindText(borrowing: utf8, at: index)
        } else {
            try engine.bind(.text(String(decoding: utf8, as: UTF8.self)), at: index)
        }
    }

    /// Binds bytes as ``bindText(borrowing:at:)`` binds text.
    @inline(__always)
    package func bindBlob(borrowing bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        if let sqlite { try sqlite.bindBlob(borrowing: bytes, at: index) } else { try engine.bind(.blob(Data(bytes)), at: index) }
    }

    package func bind(_ values: [DatabaseValue], from start: Int32 = 1) throws {
        // The engine told apart once, not per value.
        if let sqlite {
            for index in values.indices { try sqlite.bind(values[index], at: start + Int32(index)) }
        } else {
            for index in values.indices { try engine.bind(values[index], at: start + Int32(index)) }
        }
    }

    // MARK: Stepping

    /// Runs one step: `true` when a row is available, `false` when done.
    /// - Throws: the engine's error; the statement is dropped from its connection's cache.
    @inline(__always)
    package func step() throws -> Bool {
        do {
            if let sqlite { return try sqlite.step() } else { return try engine.step() }
        } catch {
            throw failed(error)
        }
    }

    /// Runs an `INSERT` made by ``SQLDialect/insertSQL(into:columns:)`` and returns the new row's id.
    @inline(__always)
    package func insert() throws -> Int64 {
        do {
            if let sqlite { return try sqlite.insert() } else { return try engine.insert() }
        } catch {
            throw failed(error)
        }
    }

    /// Runs an upsert made by ``SQLDialect/upsertSQL(into:columns:conflictColumns:updateColumns:returning:)``
    /// to its row (readable next) and says whether it inserted the row rather than updated one.
    package func upsert() throws -> Bool {
        do {
            if let sqlite { return try sqlite.upsert() } else { return try engine.upsert() }
        } catch {
            throw failed(error)
        }
    }

    /// A step's error, with the bound values when the database is asked for them; the
    /// statement leaves the cache (a failed statement is prepared afresh next time).
    @inline(never)
    private func failed(_ error: any Error) -> any Error {
        connection.evict(self)
        guard var failure = error as? ActiveRecordError else { return error }
        if failure.code == .timeout, sqlite != nil, let limit = connection.activeTimeout {
            // SQLite says "interrupted": name the limit that interrupted it.
            failure.message = "the statement ran longer than its statement timeout of \(limit.limitDescription) and SQLite "
                + "interrupted it; raise the limit (Database.statementTimeout, withStatementTimeout) or make the statement faster"
        }
        if connection.includesBoundValuesInErrors { failure.expandedSQL = expandedSQL() }
        return failure
    }

    /// The SQL with the bound values written in (`nil` when the engine cannot say).
    package func expandedSQL() -> String? {
        if let sqlite { sqlite.expandedSQL() } else { engine.expandedSQL() }
    }

    /// After a run through ``Connection``: reset for the next use (keeping the bindings of a
    /// statement whose every use binds all its parameters again), no longer in use.
    @inline(__always)
    func endUse() {
        if rebindsEveryParameter { resetForRebinding() } else { reset() }
        isInUse = false
    }

    /// Resets the statement and clears its bindings, ready for reuse.
    @inline(__always)
    package func reset() {
        if let sqlite { sqlite.reset() } else { engine.reset() }
    }

    /// Resets the statement for a caller that binds every parameter again (a batch's next
    /// row): SQLite keeps the old bindings rather than clearing them first.
    @inline(__always)
    package func resetForRebinding() {
        if let sqlite { sqlite.resetKeepingBindings() } else { engine.reset() }
    }

    // MARK: Columns (0-based)

    package var columnCount: Int32 {
        if let sqlite { sqlite.columnCount } else { engine.columnCount }
    }

    package func columnName(_ index: Int32) -> String {
        if let sqlite { sqlite.columnName(index) } else { engine.columnName(index) }
    }

    @inline(__always)
    package func isNull(_ index: Int32) -> Bool {
        if let sqlite { sqlite.isNull(index) } else { engine.isNull(index) }
    }

    @inline(__always)
    package func int64(_ index: Int32) -> Int64 {
        if let sqlite { sqlite.int64(index) } else { engine.int64(index) }
    }

    @inline(__always)
    package func double(_ index: Int32) -> Double {
        if let sqlite { sqlite.double(index) } else { engine.double(index) }
    }

    /// The column as a `Double`, or `nil` when it is NULL.
    @inline(__always)
    package func optionalDouble(_ index: Int32) -> Double? {
        if let sqlite { sqlite.optionalDouble(index) } else { engine.isNull(index) ? nil : engine.double(index) }
    }

    /// The column's text; `nil` when its bytes are not valid UTF-8 (written by another
    /// program): read as a String they would be changed, so they are a mismatch instead.
    @inline(__always)
    package func string(_ index: Int32) -> String? {
        if let sqlite { sqlite.string(index) } else { engine.string(index) }
    }

    package func data(_ index: Int32) -> Data {
        if let sqlite { sqlite.data(index) } else { engine.data(index) }
    }

    /// The column as a ``DatabaseValue``.
    /// - Throws: `.typeMismatch` for text that is not valid UTF-8.
    @inline(__always)
    package func value(_ index: Int32) throws -> DatabaseValue {
        if let sqlite { try sqlite.value(index) } else { try engine.value(index) }
    }

    /// The column's value with text and bytes borrowed from the row, not copied: valid until
    /// the next step, reset or call of `cell`.
    @inline(__always)
    package func cell(_ index: Int32) -> Cell {
        if let sqlite { sqlite.cell(index) } else { engine.cell(index) }
    }
}

@available(*, unavailable, message: "A statement belongs to its connection's thread")
extension Statement: Sendable {}
