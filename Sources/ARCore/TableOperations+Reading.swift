#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reading a table's rows into records: decoding a row, fetching, finding, reloading.
extension TableOperations {
    /// Reads a row selected with ``TableSchema/selectList`` into `record`.
    ///
    /// - Parameters:
    ///   - offset: the result column holding `id` (later tables of a join start further right).
    ///   - columns: the declared columns selected after `id`, `createdAt`, `updatedAt`, in
    ///     result order; `nil` for all of them. Columns left out keep their current values.
    package func decode(
        _ record: some RecordStorage, from statement: Statement, at offset: Int32 = 0, columns: [Int]? = nil
    ) throws {
        record.header = RecordHeader(decoding: statement, at: offset)
        if let columns {
            for (position, index) in columns.enumerated() {
                try decodeColumn(index, of: record, from: statement, at: offset + 3 + Int32(position))
            }
        } else {
            try record.decodeAllColumns(count: schema.columns.count, from: statement, at: offset + 3) { index in
                try decodeColumn(index, of: record, from: statement, at: offset + 3 + Int32(index))
            }
        }
        record.didDecode()
    }

    private func decodeColumn(_ index: Int, of record: some RecordStorage, from statement: Statement, at column: Int32) throws {
        do {
            try record.decodeColumn(index, from: statement, at: column)
        } catch let error as ActiveRecordError {
            var located = error.with(message: "\(schema.name).\(schema.columns[index].name) (id \(record.header.id ?? 0)): \(error.message)")
            located.sql = statement.sql
            throw located
        }
    }

    /// Runs a query selecting ``TableSchema/selectList`` (or, with `columns`, `id`, the
    /// timestamps and those declared columns) and decodes each row into a new record.
    /// `key`, when given, caches the statement by key.
    /// `bind` binds parameters (from 1) before the first step, for a caller that passes no
    /// `arguments`: a query binds its values straight from its clauses, with no array of them.
    package func fetch<R: RecordStorage>(
        _ sql: @autoclosure () -> String, key kind: StatementKey.Kind? = nil, _ arguments: [DatabaseValue],
        columns: [Int]? = nil, in connection: Connection, bind: (Statement) throws -> Void = { _ in }, make: () -> R
    ) throws -> [R] {
        func body(_ statement: Statement) throws -> [R] {
            try bind(statement)
            var records: [R] = []
            while try statement.step() {
                let record = make()
                try decode(record, from: statement, columns: columns)
                records.append(record)
            }
            return records
        }
        if let kind { return try connection.withStatement(key(kind), sql: sql, arguments, body) }
        return try connection.withStatement(sql(), arguments, body)
    }

    /// ``fetch(_:key:_:columns:in:bind:make:)`` for a model class's records, compiled for `Model`
    /// here (a caller's generic `R` would run it unspecialised: a metadata look-up per array,
    /// every column decoded through a witness). Each record is made here as `type.init()` and
    /// given `mapping` (the class's): made in a caller's closure, the record was retained and
    /// released around that call, and again when appended. The caller may cast the array to
    /// its subclass's.
    package func fetchRecords(
        _ sql: @autoclosure () -> String, key kind: StatementKey.Kind? = nil, _ arguments: [DatabaseValue],
        columns: [Int]? = nil, in connection: Connection, bind: (Statement) throws -> Void = { _ in },
        of type: Model.Type, mapping: ModelMapping
    ) throws -> [Model] {
        func body(_ statement: Statement) throws -> [Model] {
            try bind(statement)
            var records: [Model] = []
            if columns == nil, statement.readsRowsDirectly {
                // The engine reads each row straight into its record (no cells made first).
                guard try statement.stepLeavingCells() else { return records }
                let fields = mapping.fieldBuffer
                let left = statement.rowsLeftInResult
                if left > 1 { return try fetchColumnByColumn(left, from: statement, of: type, mapping: mapping) }
                // The rows the engine knows of go straight into the array's memory (appending
                // checks the array's uniqueness and room per record); any after them, appended.
                var more = true
                records = try Array(unsafeUninitializedCapacity: max(statement.rowCountHint, 1)) { buffer, count in
                    while count < buffer.count {
                        let record = type.init()
                        record.adopt(mapping)
                        try decodeDirectly(record, from: statement, fields: fields)
                        (buffer.baseAddress.unsafelyUnwrapped + count).initialize(to: consume record)
                        count += 1
                        more = try statement.stepLeavingCellsAfterRow()
                        if !more { return }
                    }
                }
                while more {
                    let record = type.init()
                    record.adopt(mapping)
                    try decodeDirectly(record, from: statement, fields: fields)
                    records.append(consume record)
                    more = try statement.stepLeavingCellsAfterRow()
                }
                return records
            }
            guard try statement.step() else { return records }
            // Room for the rows the engine knows of (all of them on an engine holding its result).
            records.reserveCapacity(statement.rowCountHint)
            repeat {
                let record = type.init()
                record.adopt(mapping)
                try decode(record, from: statement, columns: columns)
                records.append(consume record)
            } while try statement.step()
            return records
        }
        if let kind { return try connection.withStatement(key(kind), sql: sql, arguments, body) }
        return try connection.withStatement(sql(), arguments, body)
    }

    /// ``fetchRecords(_:key:_:columns:in:bind:make:of:mapping:)``'s direct read of a result the
    /// engine holds `count` rows of (from the current one): the records are made first (each
    /// by its `init()`), then read column after column
    /// (``DirectRowReading/readRows(into:headers:fields:)``), ``columnReadRows`` rows at a time
    /// (their headers on the stack). When the engine leaves a value to the cells, the same
    /// records are read row by row instead, as ``decodeDirectly(_:from:fields:)`` reads them (its
    /// conversions and errors, in row order). Rows after the result (a cursor's next batch)
    /// are read one by one.
    @inline(never)
    private func fetchColumnByColumn(_ count: Int, from statement: Statement, of type: Model.Type, mapping: ModelMapping) throws -> [Model] {
        let fields = mapping.fieldBuffer
        var records = [Model](unsafeUninitializedCapacity: count) { buffer, made in
            while made < count {
                let record = type.init()
                record.adopt(mapping)
                (buffer.baseAddress.unsafelyUnwrapped + made).initialize(to: consume record)
                made += 1
            }
        }
        var start = 0
        while start < count {
            let end = min(count, start + Self.columnReadRows)
            if start > 0 { try statement.moveToNextRowOfResult() }
            let readAll = withUnsafeTemporaryAllocation(of: ModelMapping.HeaderValues.self, capacity: end - start) { headers in
                let base = headers.baseAddress.unsafelyUnwrapped
                base.initialize(repeating: ModelMapping.HeaderValues(), count: end - start)
                return records.withUnsafeBufferPointer { records in
                    let pass = UnsafeBufferPointer(rebasing: records[start..<end])
                    guard statement.readRows(into: pass, headers: base, fields: fields) else { return false }
                    for index in 0..<pass.count {
                        Unretained(pass[index]).with {
                            $0.header = base[index].header
                            $0.markAllColumnsSaved(count: fields.count)
                            $0.didDecode()
                        }
                    }
                    return true
                }
            }
            if !readAll {
                for index in start..<end {
                    if index > start { try statement.moveToNextRowOfResult() }
                    try decodeDirectly(records[index], from: statement, fields: fields)
                }
            }
            start = end
        }
        while try statement.stepLeavingCellsAfterRow() {
            let record = type.init()
            record.adopt(mapping)
            try decodeDirectly(record, from: statement, fields: fields)
            records.append(consume record)
        }
        return records
    }

    /// How many rows ``fetchColumnByColumn(_:from:of:mapping:)`` reads column after column at a
    /// time: their headers, 40 bytes a row, are kept on the stack.
    static let columnReadRows = 128

    /// The record with this id, decoded into a new `type` given `mapping` (its class's), or
    /// `nil`: a find without an array of results or of arguments (each an allocation per call).
    package func findRecord(id: Int64, in connection: Connection, of type: Model.Type, mapping: ModelMapping) throws -> Model? {
        try connection.run(connection.keyedStatement(key(.find), sql: { findSQL }), binding: id) { statement in
            if statement.readsRowsDirectly { return try findDirectly(statement, id: id, of: type, mapping: mapping) }
            guard try statement.step() else { return nil }
            let record = type.init()
            record.adopt(mapping)
            try decode(record, from: statement, columns: nil)
            return record
        }
    }

    /// ``findRecord(id:in:of:mapping:)``'s step and read on an engine that reads rows straight
    /// into records (out of line: the other engines' finds stay as short as they were).
    @inline(never)
    private func findDirectly(_ statement: Statement, id: Int64, of type: Model.Type, mapping: ModelMapping) throws -> Model? {
        guard try statement.stepLeavingCells() else { return nil }
        let record = type.init()
        record.adopt(mapping)
        try decodeDirectly(record, from: statement, fields: mapping.fieldBuffer, foundByID: id)
        return record
    }

    /// Reads a row selected with ``TableSchema/selectList`` into `record`, as
    /// ``decode(_:from:at:columns:)`` does, for a statement stepped without its cells
    /// (``Statement/stepLeavingCells()``) whose engine reads rows straight into records: each
    /// column the engine cannot read so (``DirectRowReading``) is read from the row's cells,
    /// made then, as ``decode(_:from:at:columns:)`` reads it (its conversions and errors).
    @inline(__always)
    private func decodeDirectly(
        _ record: Model, from statement: Statement, fields: UnsafeBufferPointer<ModelMapping.Field>, foundByID id: Int64? = nil
    ) throws {
        var header = ModelMapping.HeaderValues()
        let base = Unretained(record).address
        // A find's row has the id it was found by (`WHERE id = ?`): not read again.
        let read = withUnsafeMutablePointer(to: &header) { header in
            if let id { return statement.readRow(foundByID: id, header: header, fields: fields, into: base) }
            return statement.readRow(header: header, fields: fields, into: base)
        }
        guard var index = read else {
            statement.loadCells()
            return try decode(record, from: statement, columns: nil)
        }
        record.header = header.header
        // Every column is read: the originals a reloaded record kept aside go.
        record.markAllColumnsSaved(count: fields.count)
        while index < fields.count {
            statement.loadCells()
            try decodeColumn(index, of: record, from: statement, at: 3 + Int32(index))
            index = index + 1 < fields.count ? statement.readColumns(fields, from: index + 1, at: 3, into: base) : fields.count
        }
        record.didDecode()
    }

    /// Re-reads the record's row into it, discarding unsaved changes.
    /// - Throws: `.notFound` when the row is gone.
    /// - Parameter locking: lock the row until the transaction ends (`FOR UPDATE` where the
    ///   engine needs it; see ``SQLDialect/rowLockClause(_:of:)``).
    package func reload(_ record: some RecordStorage, in connection: Connection, locking: Bool = false) throws {
        guard let id = record.header.id, !record.header.isDestroyed else {
            throw ActiveRecordError(.notFound, "cannot reload a \(schema.name) that is not saved")
        }
        func body(_ statement: Statement) throws -> Bool {
            guard try statement.step() else { return false }
            try decode(record, from: statement)
            return true
        }
        let lockClause = locking ? connection.dialect.rowLockClause(.wait, of: schema.name) : ""
        let key = try keyValue(of: record, id: id)
        let found = lockClause.isEmpty
            ? try connection.withStatement(self.key(.find), sql: { findSQL }, [key], body)
            : try connection.withStatement(findSQL + lockClause, [key], body)
        guard found else {
            throw ActiveRecordError(.notFound, "\(schema.name) with \(keyText(key)) no longer exists")
        }
    }

    /// The condition and arguments for `column = value` (`IS NULL` for `NULL`).
    package func condition(_ column: String, _ value: DatabaseValue) throws -> (RowCondition, [DatabaseValue]) {
        guard column == "id" || column == schema.primaryKey.name || column == "createdAt" || column == "updatedAt"
                || schema.columnIndex(named: column) != nil else {
            throw schema.unknownColumn(column)
        }
        if value.isNull { return (.isNull(column), []) }
        return (.equals(column), [value])
    }
}
