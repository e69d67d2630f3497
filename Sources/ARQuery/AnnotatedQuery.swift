@_spi(Engines) import ARCore

extension Query {
    /// Fetches each owner with the number of its children in `relation` (within its scope),
    /// in the owners' one statement: no query per owner.
    ///
    /// ```swift
    /// for group in try Group.query().order(by: "title").withCount(\.users).fetch() {
    ///     print(group.title, group.count(of: \.users))     // "admins 0", "students 2"
    /// }
    /// ```
    /// The owners' conditions, orderings and limit come first (`where`, `order`,
    /// `order(byCount:)`, `limit`, `includes`); `withCount`, `withSum`, `withMin`, `withMax`
    /// and `withAverage` then add a value each, read from the fetched ``Annotated`` rows.
    /// - Parameter relation: a `@HasMany` or `@HasManyThrough` property of the owner.
    public func withCount<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Query<Child>>) -> AnnotatedQuery<Record> {
        AnnotatedQuery(query: self).withCount(relation)
    }

    /// Fetches each owner with the sum of a column over its children in `relation` (0 for none).
    ///
    /// ```swift
    /// let rows = try Group.query().withSum(\.users, \.age).fetch()
    /// rows[0].sum(of: \.users, \.age)                        // Int, as the column
    /// ```
    public func withSum<Child: Model, Value: NumericColumnValue>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> AnnotatedQuery<Record> {
        AnnotatedQuery(query: self).withSum(relation, column)
    }

    /// Fetches each owner with the smallest value of a column over its children (`nil` for none).
    public func withMin<Child: Model, Value: ColumnValue>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> AnnotatedQuery<Record> {
        AnnotatedQuery(query: self).withMin(relation, column)
    }

    /// Fetches each owner with the largest value of a column over its children (`nil` for none).
    public func withMax<Child: Model, Value: ColumnValue>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> AnnotatedQuery<Record> {
        AnnotatedQuery(query: self).withMax(relation, column)
    }

    /// Fetches each owner with the average of a column over its children (`nil` for none).
    public func withAverage<Child: Model, Value: NumericColumnValue>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> AnnotatedQuery<Record> {
        AnnotatedQuery(query: self).withAverage(relation, column)
    }
}

/// A query of owners that also selects values of their children (counts, sums, minimums,
/// maximums, averages): `Group.query().withCount(\.users)`. One statement, each value a
/// correlated subquery in its select list; the owners' query decides which owners, in what
/// order.
///
/// ```swift
/// let rows = try Group.query()
///     .where(\.title != "archive")
///     .order(byCount: \.users, ascending: false)
///     .limit(10)
///     .withCount(\.users)
///     .withMax(\.users, \.age)
///     .fetch()
/// for row in rows { print(row.title, row.count(of: \.users), row.max(of: \.users, \.age) ?? 0) }
/// ```
public struct AnnotatedQuery<Record: Model> {
    /// The owners' query.
    var query: Query<Record>
    /// The values to select, in order.
    var annotations: [Annotation] = []

    /// A value of each owner's children: what it is (its key, to find it in a row), its SQL
    /// and how to read it.
    struct Annotation {
        let key: AnnotationKey
        let clause: SubqueryClause
        /// Reads the value as its Swift type, checking it (a sum beyond the column type's range throws).
        let decode: (DatabaseValue) throws -> Any
    }

    init(query: Query<Record>) { self.query = query }

    /// Adds the number of each owner's children in `relation` (see ``Query/withCount(_:)``).
    public func withCount<Child: Model>(_ relation: ReferenceWritableKeyPath<Record, Query<Child>>) -> AnnotatedQuery {
        adding(.count, relation, column: nil, Query<Record>.subquery(relation) { $0.aggregate(.count, of: nil) }) {
            Int(try Int64.fromSQL($0))
        }
    }

    /// Adds the sum of a column over each owner's children, 0 for none (see ``Query/withSum(_:_:)``).
    public func withSum<Child: Model, Value: NumericColumnValue>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> AnnotatedQuery {
        adding(.sum, relation, column: column) { try Value.fromSQL($0) }
    }

    /// Adds the smallest value of a column over each owner's children, `nil` for none.
    public func withMin<Child: Model, Value: ColumnValue>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> AnnotatedQuery {
        adding(.min, relation, column: column) { try Value?.fromSQL($0) as Any }
    }

    /// Adds the largest value of a column over each owner's children, `nil` for none.
    public func withMax<Child: Model, Value: ColumnValue>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> AnnotatedQuery {
        adding(.max, relation, column: column) { try Value?.fromSQL($0) as Any }
    }

    /// Adds the average of a column over each owner's children, `nil` for none.
    public func withAverage<Child: Model, Value: NumericColumnValue>(
        _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> AnnotatedQuery {
        adding(.avg, relation, column: column) { try Double?.fromSQL($0) as Any }
    }

    private func adding<Child: Model, Value: ColumnValue>(
        _ function: AggregateFunction, _ relation: ReferenceWritableKeyPath<Record, Query<Child>>, column: KeyPath<Child, Value>,
        decode: @escaping (DatabaseValue) throws -> Any
    ) -> AnnotatedQuery {
        let clause = Query<Record>.subquery(relation) { $0.aggregate(function, of: try KeyPathColumns.columnName(column)) }
        return adding(function, relation, column: column, clause, decode: decode)
    }

    private func adding(
        _ function: AggregateFunction, _ relation: AnyKeyPath, column: AnyKeyPath?, _ clause: SubqueryClause,
        decode: @escaping (DatabaseValue) throws -> Any
    ) -> AnnotatedQuery {
        var copy = self
        copy.annotations.append(Annotation(
            key: AnnotationKey(function: function, relation: relation, column: column), clause: clause, decode: decode))
        return copy
    }

    /// Runs the query: the owners, each with its values, in the owners' query's order (else by id).
    ///
    /// One `SELECT`: the owners' columns, then one correlated subquery per value. The
    /// relations the owners' query `includes` are loaded as for ``Query/fetch()``.
    /// - Throws: `.misuse` for a key path that is not a relation of `Record`, or a relation
    ///   scope that does more than filter and order; `.unknownColumn` for a relation's key
    ///   column the children do not have; `.typeMismatch` for a value its type cannot hold;
    ///   the owners' query's errors.
    public func fetch() throws -> [Annotated<Record>] {
        let sql = try query.compile(defaultsToIdOrder: true)
        let base = sql.tables[0]
        guard let mapping = base.mapping else { preconditionFailure("a model's query has its mapping") }
        var listArguments: [DatabaseValue] = []
        var list = [base.selectList(columns: sql.selectedColumns)]
        for (position, annotation) in annotations.enumerated() {
            let value = try annotation.clause.write(base, sql.dialect, &listArguments)
            list.append("\(value) AS \("activerecord_value_\(position)".quotedIdentifier)")
        }
        let text = sql.select(list.joined(separator: ", "))
        let first = Int32(3 + (sql.selectedColumns?.count ?? base.table.schema.columns.count))
        let positions = Dictionary(annotations.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first })
        let rows = try sql.withReader { connection in
            try connection.withStatement(text, listArguments + sql.arguments) { statement in
                var rows: [Annotated<Record>] = []
                while try statement.step() {
                    let record = Record()
                    record.adopt(mapping)
                    try base.table.decode(record, from: statement, columns: sql.selectedColumns)
                    var values: [Any] = []
                    values.reserveCapacity(annotations.count)
                    for (position, annotation) in annotations.enumerated() {
                        let value = try statement.value(first + Int32(position))
                        do {
                            values.append(try annotation.decode(value))
                        } catch let error as ActiveRecordError {
                            throw ActiveRecordError(error.code, "\(annotation.key) of \(Record.self) \(record.id ?? 0): \(error.message)")
                        }
                    }
                    rows.append(Annotated(record: record, values: values, positions: positions))
                }
                return rows
            }
        }
        if query.state.hasExtras { for preload in query.preloaders { try preload(rows.map(\.record)) } }
        return rows
    }

    /// The first owner (with `LIMIT 1`) and its values, or `nil`.
    public func first() throws -> Annotated<Record>? {
        var limited = self
        limited.query = query.limit(1)
        return try limited.fetch().first
    }
}

/// Which value of an owner's children an ``AnnotatedQuery`` selected: a function of a
/// relation (and of a column).
struct AnnotationKey: Hashable, CustomStringConvertible {
    let function: AggregateFunction
    /// The relation's key path. Key paths are immutable objects; the standard library does not
    /// mark them `Sendable`, and this key never leaves its rows.
    let relation: AnyKeyPath
    let column: AnyKeyPath?

    var description: String {
        let call = function == .avg ? "withAverage" : "with" + function.rawValue.prefix(1).uppercased() + function.rawValue.dropFirst()
        return "\(call)(\(relation)\(column.map { ", \($0)" } ?? ""))"
    }
}

/// An owner fetched by an ``AnnotatedQuery``, with the values of its children it selected.
/// Its properties read through (`row.title` is `row.record.title`).
///
/// ```swift
/// let row = try #require(try Group.query().where(\.title == "students").withCount(\.users).withSum(\.users, \.age).first())
/// row.count(of: \.users)          // 2
/// row.sum(of: \.users, \.age)     // 55
/// row.record                      // the Group
/// ```
/// Reading a value the query did not select (`count(of:)` without `withCount` of that
/// relation) is a programmer error that stops the program, naming the call to add.
@dynamicMemberLookup
public struct Annotated<Record: Model> {
    /// The owner.
    public let record: Record
    /// The values, in the order of the query's annotations, each of its Swift type.
    private let values: [Any]
    /// Where each annotation's value is in ``values``.
    private let positions: [AnnotationKey: Int]

    init(record: Record, values: [Any], positions: [AnnotationKey: Int]) {
        self.record = record
        self.values = values
        self.positions = positions
    }

    /// A property of the owner: `row.title` is `row.record.title`.
    public subscript<Value>(dynamicMember keyPath: KeyPath<Record, Value>) -> Value { record[keyPath: keyPath] }

    /// The owner's number of children in `relation`, selected by ``AnnotatedQuery/withCount(_:)``.
    public func count<Child: Model>(of relation: ReferenceWritableKeyPath<Record, Query<Child>>) -> Int {
        value(AnnotationKey(function: .count, relation: relation, column: nil), as: Int.self)
    }

    /// The sum of `column` over the owner's children (0 for none), selected by ``AnnotatedQuery/withSum(_:_:)``.
    public func sum<Child: Model, Value: NumericColumnValue>(
        of relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> Value {
        value(AnnotationKey(function: .sum, relation: relation, column: column), as: Value.self)
    }

    /// The smallest `column` of the owner's children (`nil` for none), selected by ``AnnotatedQuery/withMin(_:_:)``.
    public func min<Child: Model, Value: ColumnValue>(
        of relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> Value? {
        value(AnnotationKey(function: .min, relation: relation, column: column), as: Value?.self)
    }

    /// The largest `column` of the owner's children (`nil` for none), selected by ``AnnotatedQuery/withMax(_:_:)``.
    public func max<Child: Model, Value: ColumnValue>(
        of relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> Value? {
        value(AnnotationKey(function: .max, relation: relation, column: column), as: Value?.self)
    }

    /// The average of `column` over the owner's children (`nil` for none), selected by
    /// ``AnnotatedQuery/withAverage(_:_:)``.
    public func average<Child: Model, Value: NumericColumnValue>(
        of relation: ReferenceWritableKeyPath<Record, Query<Child>>, _ column: KeyPath<Child, Value>
    ) -> Double? {
        value(AnnotationKey(function: .avg, relation: relation, column: column), as: Double?.self)
    }

    private func value<Value>(_ key: AnnotationKey, as type: Value.Type) -> Value {
        guard let position = positions[key] else {
            preconditionFailure("\(key) was not selected: add it to the query before fetch()")
        }
        guard let value = values[position] as? Value else {
            preconditionFailure("\(key) holds \(Swift.type(of: values[position])), not \(Value.self)")
        }
        return value
    }
}

@available(*, unavailable, message: "A query holds its arguments, which need not be Sendable")
extension AnnotatedQuery: Sendable {}
