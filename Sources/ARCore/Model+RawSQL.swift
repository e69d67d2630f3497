#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Records from SQL the query language cannot write: `User.fetch(sql:arguments:)`.
extension ModelClassMethods where Self: Model {
    /// Runs one SQL query and decodes each row into a record, its columns found by NAME.
    ///
    /// ```swift
    /// let older = try User.fetch(sql: #"SELECT * FROM "User" WHERE "age" > ? ORDER BY "name""#, arguments: [.integer(30)])
    /// older[0].age += 1
    /// try older[0].save()          // UPDATE "User" SET "age" = ?, "updatedAt" = ? WHERE "id" = ?
    /// ```
    /// The result must hold `id`, `createdAt`, `updatedAt` and every declared column, each under
    /// its column name (in any order; `SELECT *` or `SELECT "User".*` selects them, `… AS "age"`
    /// names a computed one), each ONCE: in a join, select `"User".*` and the other tables'
    /// columns under other names, as two columns named `id` (any case) are an error, never a
    /// guess; other result columns are ignored. The records are saved ones:
    /// changed and saved, they write an `UPDATE` of their changed columns.
    ///
    /// - Parameters:
    ///   - sql: one query, with `?` placeholders (a `String`, or a `Substring`).
    ///   - arguments: the values bound to the placeholders.
    /// - Throws: `.unknownColumn` naming a column the result lacks, `.typeMismatch` naming a
    ///   column whose value does not fit its type (checked on the first row, then on each row as
    ///   read), `.misuse` naming a column the result holds more than once (compared as the
    ///   portable naming rule compares names: case-insensitively); the engine's errors, with
    ///   the SQL text.
    ///
    /// A string literal goes to ``fetch(sql:)-(SQL)`` (alone) or ``fetch(sql:arguments:)-(SQL,_)``
    /// (with arguments) instead, whose `\(value)` are bound: this form takes a `String` variable. (This form is disfavoured and generic: with a labelled argument, a disfavoured
    /// `String` form alone would still take an interpolated literal, and splice it.)
    @_disfavoredOverload
    public static func fetch(sql: some StringProtocol, arguments: [DatabaseValue] = []) throws -> [Self] {
        try Model.fetchRows(String(sql), arguments, of: self).asRecords(of: Self.self)
    }

    /// `fetch(sql:arguments:)` with SQL written with interpolation, its values bound (see ``SQL``).
    ///
    /// ```swift
    /// let older = try User.fetch(sql: "SELECT * FROM \(ident: "User") WHERE \"age\" > \(minimum)")
    /// ```
    /// - Throws: what `fetch(sql:arguments:)` throws, and `.invalidValue` for a marker that
    ///   could not be written (an empty identifier or list).
    public static func fetch(sql: SQL) throws -> [Self] {
        let (text, arguments) = try sql.resolved()
        return try Model.fetchRows(text, arguments, of: self).asRecords(of: Self.self)
    }

    /// ``fetch(sql:)-(SQL)`` given an arguments array too: a string literal with arguments is an
    /// ``SQL`` (a `String` variable goes to the `String` form), so that a `\(value)` in it is
    /// bound even then. The arguments bind the literal's `?` placeholders when it interpolates
    /// no value.
    ///
    /// ```swift
    /// let older = try User.fetch(sql: "SELECT * FROM \(ident: "User") WHERE \"age\" > ?", arguments: [.integer(30)])
    /// ```
    /// - Throws: `.misuse` when the literal interpolates values AND arguments are given (write
    ///   every value one way); what ``fetch(sql:)-(SQL)`` throws.
    public static func fetch(sql: SQL, arguments: [DatabaseValue]) throws -> [Self] {
        let (text, arguments) = try sql.resolved(with: arguments, in: "\(ModelMapping.modelName(self)).fetch(sql:arguments:)")
        return try Model.fetchRows(text, arguments, of: self).asRecords(of: Self.self)
    }
}

extension Model {
    /// Runs `sql` on the current database and decodes each row into a new `type`, its columns
    /// found by name (see `fetch(sql:arguments:)`).
    static func fetchRows(_ sql: String, _ arguments: [DatabaseValue], of type: Model.Type) throws -> [Model] {
        let mapping = try ModelMapping.of(type)
        let table = mapping.table
        return try Database.current.withReader(table) { connection in
            try connection.withStatement(sql, arguments) { statement in
                var records: [Model] = []
                guard try statement.step() else { return records }
                let layout = try RawRowLayout(statement, mapping: mapping, type: type)
                repeat {
                    let record = type.init()
                    record.adopt(mapping)
                    try layout.decode(record, from: statement)
                    records.append(record)
                } while try statement.step()
                return records
            }
        }
    }
}

/// Where a raw query's result holds each column of a model: found once per query, by name.
private struct RawRowLayout {
    let mapping: ModelMapping
    let type: Model.Type
    /// The result columns of `id` (-1 for a model keyed by a declared column), `createdAt`,
    /// `updatedAt`.
    let id: Int32, createdAt: Int32, updatedAt: Int32
    /// The result column of each declared column, in the schema's order.
    let columns: [Int32]

    /// - Throws: `.unknownColumn` naming the first column the result lacks; `.misuse` naming the
    ///   first column the result holds more than once.
    init(_ statement: Statement, mapping: ModelMapping, type: Model.Type) throws {
        self.mapping = mapping
        self.type = type
        let names = (0..<statement.columnCount).map { statement.columnName($0) }
        // Found as the portable naming rule folds names (an engine may fold an unquoted alias:
        // `AS createdat`), and only when exactly one result column has the name: in a join,
        // another table's `id` or `createdAt` must never be read as the record's (a save would
        // then UPDATE another row). Two columns of the name, in any case (SQLite's names are
        // case-insensitive), are an error, not a guess.
        func position(_ column: String, property: String) throws -> Int32 {
            let described = property == column ? "\"\(column)\"" : "\"\(column)\" (property \(property))"
            let matches = names.indices.filter { isSameName(names[$0], column) }
            if matches.count == 1 { return Int32(matches[0]) }
            if matches.count > 1 {
                let table = mapping.table.schema.name.quotedIdentifier
                throw ActiveRecordError(
                    .misuse,
                    "\(ModelMapping.modelName(type)).fetch(sql:): the query's result has \(matches.count) columns named "
                        + "\(described) (" + matches.map { "#\($0 + 1) \(names[$0].quotedIdentifier)" }.joined(separator: ", ")
                        + "), and which one is the record's cannot be told (in a join, another table's column of the same "
                        + "name); select the model's columns by its table, SELECT \(table).*, and the other tables' columns "
                        + "under other names (… AS \"otherId\")",
                    sql: statement.sql)
            }
            throw ActiveRecordError(
                .unknownColumn,
                "\(ModelMapping.modelName(type)).fetch(sql:): the query's result has no column \(described), which the "
                    + "model needs; select every column of the model (SELECT * or SELECT \(mapping.table.schema.name.quotedIdentifier).*), "
                    + "or name a computed one after the column (… AS \(column.quotedIdentifier)); the result has: "
                    + names.joined(separator: ", "),
                sql: statement.sql)
        }
        // The integer key under its name (`id`, or a custom one); a UUID or String key is one of
        // the declared columns, and its record's header id is 0 (see ``PrimaryKey``).
        let key = mapping.table.schema.primaryKey
        id = key.isAutoincrement ? try position(key.name, property: "id") : -1
        createdAt = try position("createdAt", property: "createdAt")
        updatedAt = try position("updatedAt", property: "updatedAt")
        columns = try mapping.table.schema.columns.indices.map { index in
            try position(mapping.table.schema.columns[index].name, property: mapping.propertyNames[index])
        }
    }

    /// Reads the current row into `record` (a new one), as a find reads it: the values are its
    /// originals, so that a change and a save write an `UPDATE` of the changed columns.
    func decode(_ record: Model, from statement: Statement) throws {
        record.header = try header(from: statement)
        for (index, column) in columns.enumerated() {
            do {
                try record.decodeColumn(index, from: statement, at: column)
            } catch let error as ActiveRecordError where error.code == .typeMismatch {
                let name = mapping.table.schema.columns[index].name
                throw mismatch(column: name, property: mapping.propertyNames[index], statement, error.message)
            }
        }
        record.didDecode()
    }

    /// The record's id and timestamps. (The one place this file reads the header's fields.)
    private func header(from statement: Statement) throws -> RecordHeader {
        var header = RecordHeader()
        if id < 0 {
            header.id = 0  // saved: a UUID or String key is a declared column
        } else {
            guard case .integer(let rowID) = try statement.value(id) else {
                throw mismatch(
                    column: "id", property: "id", statement,
                    "the id must be an integer and not NULL, but the row holds \(try statement.value(id).storageClassName)")
            }
            header.id = rowID
        }
        header.createdAt = try timestamp(createdAt, named: "createdAt", statement)
        header.updatedAt = try timestamp(updatedAt, named: "updatedAt", statement)
        return header
    }

    private func timestamp(_ column: Int32, named name: String, _ statement: Statement) throws -> Date? {
        switch try statement.value(column) {
        case .null: return nil
        case .real(let seconds): return Date(timeIntervalSince1970: seconds)
        case .integer(let seconds): return Date(timeIntervalSince1970: Double(seconds))
        case let other:
            throw mismatch(
                column: name, property: name, statement,
                "a timestamp is seconds since 1970 (a number), but the row holds \(other.storageClassName)")
        }
    }

    private func mismatch(column: String, property: String, _ statement: Statement, _ detail: String) -> ActiveRecordError {
        let where_ = property == column ? "column \"\(column)\"" : "column \"\(column)\" (property \(property))"
        return ActiveRecordError(
            .typeMismatch,
            "\(ModelMapping.modelName(type)).fetch(sql:): \(where_): \(detail); select the column as the table holds it "
                + "(or CAST it in the SQL to the type the model declares)",
            sql: statement.sql)
    }
}
