#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The class methods of every ``Model`` — finders, `create`, `destroyAll`, `query()` —
/// typed by the model (`User.all()` is `[User]`). A protocol because a class method
/// cannot return `[Self]`; ``Model`` adopts it, nothing else should.
public protocol ModelClassMethods: AnyObject {}

extension Model: ModelClassMethods {}

extension ModelClassMethods where Self: Model {
    /// Makes a record from column values and saves it.
    ///
    /// ```swift
    /// let alex = try User.create(["name": "Alex", "age": 31])
    /// ```
    /// - Throws: what ``Model/init(_:)`` and ``Model/save()`` throw; nothing is saved on error.
    @discardableResult
    public static func create(_ values: [String: (any ColumnValue)?] = [:]) throws -> Self {
        let record = try Self(values)
        try record.save()
        return record
    }

    /// Runs a record query (`SELECT <all columns> FROM "T" [WHERE …] [ORDER BY …] [LIMIT 1]`,
    /// in the current database's dialect) on the current database.
    package static func fetch(
        where conditions: [RowCondition], order: [RowOrder], limitOne: Bool = false, _ arguments: [DatabaseValue] = []
    ) throws -> [Self] {
        let dialect = try Database.current.dialect
        return try fetch(key: nil, arguments) { table in
            // `id` orders by the primary key, whatever its name.
            let key = table.schema.primaryKey.name
            let order = key == "id" ? order : order.map { term in
                switch term {
                case .ascending("id"): .ascending(key)
                case .descending("id"): .descending(key)
                default: term
                }
            }
            return dialect.selectSQL(
                table.schema.selectedColumns, from: table.schema.name, where: conditions, order: order, limitOne: limitOne)
        }
    }

    /// Runs a record query whose SQL `sql` makes from the table; the engine's
    /// own queries are cached by `key`, so their text is made only once.
    package static func fetch(
        key: StatementKey.Kind?, _ arguments: [DatabaseValue], sql: (TableOperations) -> String
    ) throws -> [Self] {
        try fetchModels(key: key, arguments, sql: sql).asRecords(of: Self.self)
    }

    /// ``fetch(key:_:sql:)`` as `[Model]`, every element a `Self`: built through the `Model`
    /// specialisation, since an array of `Self` touched in this generic context looks up its
    /// metadata on every use: per row, or per find (see Benchmarks/README.md, Hot-path notes).
    private static func fetchModels(
        key: StatementKey.Kind?, _ arguments: [DatabaseValue], sql: (TableOperations) -> String
    ) throws -> [Model] {
        let mapping = try mapping()
        let table = mapping.table
        return try Database.current.withReader(table) { connection in
            try table.fetchRecords(sql(table), key: key, arguments, in: connection, of: self, mapping: mapping)
        }
    }

    /// Runs a query returning one integer (`count(*)`, `EXISTS`).
    package static func scalar(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> Int64 {
        let table = try mapping().table
        return try Database.current.withReader(table) { connection in
            try connection.withStatement(sql, arguments) { statement in
                try statement.step() ? statement.int64(0) : 0
            }
        }
    }

    /// The model's table name, and the current database's dialect (which writes the SQL).
    private static var tableAndDialect: (String, any SQLDialect) {
        get throws { (try mapping().table.schema.name, try Database.current.dialect) }
    }

    /// Every record, in id order: `SELECT … FROM "T" ORDER BY "id"`.
    public static func all() throws -> [Self] {
        try fetch(key: .all, []) { $0.allSQL }
    }

    /// The record with this id, or `nil`.
    public static func find(_ id: Int64) throws -> Self? {
        let found = try Model.findRecord(id: id, of: self)
        // Not `found.map { … }`: `Optional.map` ran unspecialised here, a generic call on every
        // find (see Benchmarks/README.md, Hot-path notes).
        guard let found else { return nil }
        return unsafeDowncast(found, to: Self.self)
    }

    /// Deletes the row with this id without loading it, with one `DELETE`, and returns
    /// whether there was one.
    ///
    /// ```swift
    /// try Bookmark.delete(id: 42)
    /// ```
    /// SQL only, as Rails' `delete`: no callbacks and no dependencies run (`destroy()` runs
    /// them), and a record of that id already in memory is not marked destroyed. To delete
    /// the rows of a query, see `Query.deleteAll()`.
    /// - Throws: the engine's errors (a foreign key that still points at the row).
    @discardableResult
    public static func delete(id: Int64) throws -> Bool {
        try Model.deleteRow(id: id, of: self)
    }

    /// The first record (lowest id) whose `column` equals `value` (`IS NULL` for `nil`).
    ///
    /// ```swift
    /// let alex = try User.first(where: "name", equals: "Alex")
    /// ```
    /// - Throws: `.unknownColumn`, listing the model's columns.
    public static func first(where column: String, equals value: (any ColumnValue)?) throws -> Self? {
        let mapping = try mapping()
        let (condition, arguments) = try mapping.table.condition(mapping.columnName(column), value?.toSQL() ?? .null)
        return try fetch(where: [condition], order: [.ascending("id")], limitOne: true, arguments).first
    }

    /// Every record whose `column` equals `value`, in id order.
    /// - Throws: `.unknownColumn`, listing the model's columns.
    public static func all(where column: String, equals value: (any ColumnValue)?) throws -> [Self] {
        let mapping = try mapping()
        let (condition, arguments) = try mapping.table.condition(mapping.columnName(column), value?.toSQL() ?? .null)
        return try fetch(where: [condition], order: [.ascending("id")], arguments)
    }

    /// The first record matching every value, or a new unsaved one holding them.
    ///
    /// ```swift
    /// let alex = try User.findOrBuild(["name": "Alex"])   // alex.isNewRecord when not found
    /// ```
    public static func findOrBuild(_ values: [String: (any ColumnValue)?]) throws -> Self {
        let mapping = try mapping()
        var conditions: [RowCondition] = []
        var arguments: [DatabaseValue] = []
        for (column, value) in values.sorted(by: { $0.key < $1.key }) {
            let (condition, bound) = try mapping.table.condition(mapping.columnName(column), value?.toSQL() ?? .null)
            conditions.append(condition)
            arguments += bound
        }
        if let found = try fetch(where: conditions, order: [.ascending("id")], limitOne: true, arguments).first { return found }
        return try Self(values)
    }

    /// The number of records: `SELECT count(*) FROM "T"`.
    public static func count() throws -> Int {
        let (table, dialect) = try tableAndDialect
        return Int(try scalar(dialect.selectSQL([.count], from: table, where: [], order: [], limitOne: false)))
    }

    /// The record with the lowest id, or `nil` when there is none.
    public static func first() throws -> Self? {
        try fetch(where: [], order: [.ascending("id")], limitOne: true).first
    }

    /// The record with the highest id, or `nil` when there is none.
    public static func last() throws -> Self? {
        try fetch(where: [], order: [.descending("id")], limitOne: true).first
    }

    /// Whether there is any record.
    public static func exists() throws -> Bool {
        let (table, dialect) = try tableAndDialect
        return try scalar(dialect.existsSQL(in: table, where: [])) != 0
    }

    /// Whether a record with this id exists.
    public static func exists(id: Int64) throws -> Bool {
        let (table, dialect) = try tableAndDialect
        let key = try mapping().table.schema.primaryKey.name
        return try scalar(dialect.existsSQL(in: table, where: [.equals(key)]), [.integer(id)]) != 0
    }

    /// Destroys every record of the model, each as ``Model/destroy()`` does (callbacks and
    /// dependencies), all in one transaction: if one fails, none is destroyed. A record an
    /// earlier one's dependencies destroyed is skipped. A model with no callbacks and no
    /// dependencies needs no records in memory: it runs `DELETE FROM "T"`. Records already
    /// in memory are not marked destroyed.
    /// - Returns: how many rows of the model's table were deleted.
    @discardableResult
    public static func destroyAll() throws -> Int {
        let mapping = try mapping()
        let table = mapping.table
        let database = try Database.current
        guard mapping.hasDestroyLifecycle else {
            return try database.withWriter(table) { connection in
                try connection.execute(connection.dialect.deleteSQL(from: table.schema.name, where: []))
                connection.noteChange(table)
                return connection.changedRowCount
            }
        }
        var deleted = 0
        try database.transaction {
            let before = try count()
            for record in try all() where try exists(key: record.primaryKeyValue) {  // not destroyed by an earlier one
                try record.destroy()
            }
            deleted = before - (try count())
        }
        return deleted
    }
}

extension Model {
    /// ``ModelClassMethods/find(_:)``'s work for every class, compiled once and not generic:
    /// in the generic method, each closure layer took the class's metadata along.
    /// The mapping, its table and the database are shared by every thread that finds: reached
    /// without a retain, so that no reference count of theirs is written per call.
    @inline(never)
    package static func findRecord(id: Int64, of type: Model.Type) throws -> Model? {
        let unretained = try ModelMapping.unretained(type)
        return try unretained.with { mapping in
            try Database.withCurrent { database in
                // The closure takes the mapping unretained too: given the mapping itself, its
                // specialised callee retained and released it on every find.
                try database.withReader(mapping.table) { connection in
                    try unretained.with { mapping in try mapping.table.findRecord(id: id, in: connection, of: type, mapping: mapping) }
                }
            }
        }
    }

    /// ``ModelClassMethods/delete(id:)``'s work for every class, as ``findRecord(id:of:)``.
    @inline(never)
    package static func deleteRow(id: Int64, of type: Model.Type) throws -> Bool {
        try ModelMapping.unretained(type).with { mapping in
            try Database.withCurrent { database in
                try database.withWriter(mapping.table) { connection in try mapping.table.delete(id: id, in: connection) }
            }
        }
    }
}
