@_spi(Engines) import ARCore

/// Where a page of a keyset-paginated query ends: the ordered values of its last record
/// (the query's order keys, then the primary key). Give it to ``Query/page(size:after:)`` or
/// `Query.after(_:)` for the next page; send it to a client as its ``token`` (it is `Codable`
/// too) and read it back with ``init(token:)``.
///
/// ```swift
/// let first = try User.query().order(by: \.age).page(size: 20)
/// let second = try User.query().order(by: \.age).page(size: 20, after: first.nextCursor)
/// let token = second.nextCursor?.token   // for the client; PageCursor(token:) reads it back
/// ```
public struct PageCursor: Sendable, Hashable {
    /// The last record's value of each order key, then of its primary key.
    public let values: [DatabaseValue]

    /// A cursor of these values (a client sent them back, say).
    public init(values: [DatabaseValue]) { self.values = values }
}

/// One page of records and the cursor of the next page.
public struct Page<Record: Model> {
    /// The records of the page, in the query's order (at most the page's size).
    public let records: [Record]
    /// Where the next page starts; `nil` when this page is the last one.
    public let nextCursor: PageCursor?
}

extension Query {
    /// The column that breaks ties between equal order keys when paginating: the primary key.
    /// The one place that names it.
    static var tieBreakColumn: String { "id" }

    /// The order keys `clauses` pages by: its orderings, then the primary key (ascending) unless
    /// one of them is the key already.
    /// - Throws: `.misuse` for `orderRandomly()`.
    private static func pagingKeys(of clauses: QueryClauses) throws -> [QueryClauses.Ordering] {
        guard !clauses.randomOrder else {
            throw ActiveRecordError(.misuse, "a query ordered randomly cannot be paginated: order it by columns")
        }
        var keys = Array(clauses.orderings)
        if !keys.contains(where: { isSameName($0.column, tieBreakColumn) }) {
            keys.append(QueryClauses.Ordering(column: tieBreakColumn, ascending: true))
        }
        return keys
    }

    /// ``pagingKeys()`` for keyset pagination, which pages by column values only.
    /// - Throws: `.invalidPredicate` when the query orders by its records' children
    ///   (`order(byCount:)`, `order(bySum:)`, …): no column holds those values.
    private mutating func keysetKeys() throws -> [QueryClauses.Ordering] {
        guard clauses.subqueryOrderings.isEmpty else {
            throw ActiveRecordError(
                .invalidPredicate,
                "cannot page by a count: the query is ordered by its records' children (order(byCount:), order(bySum:)…), "
                    + "which keyset pagination cannot continue from; use page(number:size:)")
        }
        return try pagingKeys()
    }

    /// ``pagingKeys(of:)``, the query's orderings completed with the primary key.
    private mutating func pagingKeys() throws -> [QueryClauses.Ordering] {
        isPristine = false  // a relation's query no longer answers from memory
        let keys = try Self.pagingKeys(of: clauses)
        if keys.count > clauses.orderings.count, let key = keys.last { clauses.orderings.append(key) }
        return keys
    }

    /// The same query with the primary key as the last order key (unless it is one already), so
    /// that rows with equal order keys come in one order every time: what `limit`/`offset`
    /// pages need, or a row may be shown twice and another never. `page(number:size:)` and
    /// `page(size:after:)` order so themselves.
    ///
    /// ```swift
    /// User.query().order(by: \.age).orderedStably().limit(20).offset(40)   // ORDER BY age, id
    /// ```
    public consuming func orderedStably() -> Query {
        do {
            _ = try pagingKeys()
        } catch {
            clauses.add(.failed(error as? ActiveRecordError ?? ActiveRecordError(.misuse, "\(error)")))
        }
        return self
    }

    /// Keyset pagination: only the records after the row whose ordered values are `values`
    /// (its value of each order key, then of its primary key), in the query's order.
    ///
    /// ```swift
    /// // ORDER BY "age", "id" — rows after (age 30, id 17):
    /// User.query().order(by: \.age).after([30, 17])
    /// ```
    /// The primary key is added as the last order key (ascending) unless the query orders by it
    /// already, so that ties are broken the same way on every page. The condition means
    /// `(age, id) > (30, 17)` whatever each key's direction: `age > 30 OR (age = 30 AND id > 17)`
    /// with `<` for a descending key. NULLs sort first when ascending and last when descending
    /// (on every engine), and a `nil` value pages past them accordingly. Unlike an offset, the
    /// page stays right when rows are inserted or deleted before it, and an index on the order
    /// keys finds it without reading the rows before it.
    ///
    /// Call it after the `order(by:)` calls: it pages by the orderings given so far.
    /// - Note: the terminal call throws `.invalidValue` when the number of values is not the
    ///   number of order keys, `.invalidPredicate` when an order key is not a column (an
    ///   aggregate, a JSON path, a count of children from `order(byCount:)`: page such a query
    ///   with ``page(number:size:)``), and `.misuse` after `orderRandomly()`.
    public consuming func after(_ values: [(any ColumnValue)?]) -> Query {
        isPristine = false
        let converted: [DatabaseValue]
        do {
            converted = try values.map { try $0?.toSQL() ?? .null }
        } catch {
            clauses.add(.failed(error as? ActiveRecordError ?? ActiveRecordError(.invalidValue, "\(error)")))
            return self
        }
        return after(converted)
    }

    /// `after(_:)` with the values as database values (a
    /// ``PageCursor``'s).
    public consuming func after(_ values: [DatabaseValue]) -> Query {
        isPristine = false
        do {
            let keys = try keysetKeys()
            guard values.count == keys.count else {
                throw ActiveRecordError(
                    .invalidValue,
                    "after(_:) was given \(values.count) value\(values.count == 1 ? "" : "s") but the query pages by "
                        + "\(keys.count) key\(keys.count == 1 ? "" : "s") (\(keys.map(\.column).joined(separator: ", "))): "
                        + "give the last row's value of each, the primary key last")
            }
            let (node, arguments) = try Self.keysetCondition(keys, values)
            clauses.add(.tree(node, arguments: arguments))
        } catch {
            clauses.add(.failed(error as? ActiveRecordError ?? ActiveRecordError(.invalidPredicate, "\(error)")))
        }
        return self
    }

    /// Keyset pagination after `record`: `after(_:)` with the record's
    /// values of the order keys.
    ///
    /// ```swift
    /// let next = try User.query().order(by: \.age).after(lastShown).limit(20).fetch()
    /// ```
    public consuming func after(_ record: Record) -> Query {
        isPristine = false
        let values: [DatabaseValue]
        do {
            values = try Self.cursorValues(of: record, Self.pagingKeys(of: clauses))
        } catch {
            clauses.add(.failed(error as? ActiveRecordError ?? ActiveRecordError(.misuse, "\(error)")))
            return self
        }
        return after(values)
    }

    /// One page of keyset pagination: at most `size` records after `cursor` (from the start when
    /// `nil`), and the cursor of the next page.
    ///
    /// ```swift
    /// var cursor: PageCursor? = nil
    /// repeat {
    ///     let page = try User.query().order(by: \.age).page(size: 100, after: cursor)
    ///     for user in page.records { print(user.name) }
    ///     cursor = page.nextCursor
    /// } while cursor != nil
    /// ```
    /// Runs one `SELECT … LIMIT size + 1` (the extra row tells whether a next page exists; it
    /// is not returned). See `after(_:)` for the condition.
    /// - Throws: `.invalidValue` for a size below 1, and what `after(_:)`
    ///   and `fetch()` throw.
    public func page(size: Int, after cursor: PageCursor? = nil) throws -> Page<Record> {
        guard size > 0 else { throw ActiveRecordError(.invalidValue, "page(size: \(size)) needs a size of at least 1") }
        var query = self
        let keys = try query.keysetKeys()
        if let cursor { query = query.after(cursor.values) }
        var records = try query.limit(size + 1).fetch()
        let hasMore = records.count > size
        if hasMore { records.removeLast() }
        let next = try hasMore ? records.last.map { PageCursor(values: try Self.cursorValues(of: $0, keys)) } : nil
        return Page(records: records, nextCursor: next)
    }

    /// Page `number` (from 1) of `size` records, by `LIMIT`/`OFFSET`, ordered stably (see
    /// ``orderedStably()``).
    ///
    /// ```swift
    /// let third = try User.query().order(by: \.age).page(number: 3, size: 20)   // rows 41…60
    /// ```
    /// An offset reads and skips every row before the page; for deep pages, or rows that change
    /// while a client pages, prefer ``page(size:after:)``.
    /// - Throws: `.invalidValue` for a number or size below 1.
    public func page(number: Int, size: Int) throws -> [Record] {
        guard number > 0, size > 0 else {
            throw ActiveRecordError(.invalidValue, "page(number: \(number), size: \(size)) needs a number and a size of at least 1")
        }
        let (offset, overflow) = (number - 1).multipliedReportingOverflow(by: size)
        guard !overflow else { throw ActiveRecordError(.invalidValue, "page(number: \(number), size: \(size)) is out of range") }
        return try orderedStably().limit(size).offset(offset).fetch()
    }

    /// `record`'s value of each key.
    private static func cursorValues(of record: Record, _ keys: [QueryClauses.Ordering]) throws -> [DatabaseValue] {
        guard try !record.value(of: tieBreakColumn).isNull else {
            throw ActiveRecordError(.misuse, "a page cannot start after a record that was never saved (it has no \(tieBreakColumn))")
        }
        return try keys.map { key in
            do {
                return try record.value(of: key.column)
            } catch let error as ActiveRecordError {
                throw ActiveRecordError(
                    error.code, "after a record, the query pages by its own columns: \(error.message); give the values instead")
            }
        }
    }

    /// `(k1, k2, …) > (v1, v2, …)` in the keys' order: `k1 ▹ v1 OR (k1 = v1 AND k2 ▹ v2) OR …`, where
    /// `▹` is `>` for an ascending key and `<` (or NULL, which sorts last) for a descending one;
    /// NULL values compare as they sort. The first term is preceded by `k1 >= v1` when `k1` is
    /// ascending and `v1` not NULL, which an index on `k1` can start from.
    static func keysetCondition(
        _ keys: [QueryClauses.Ordering], _ values: [DatabaseValue]
    ) throws -> (PredicateNode, QueryArgument.Sources) {
        var arguments: [DatabaseValue] = []
        func placeholder(_ value: DatabaseValue) -> PredicateOperand {
            arguments.append(value)
            return .placeholder(index: arguments.count - 1, position: 0)
        }
        let columns = try keys.map { key -> PredicateOperand in
            let operands: [PredicateOperand]
            do {
                operands = try PredicateCache.parseOperands(key.column)
            } catch {
                throw ActiveRecordError(.invalidPredicate, "cannot page by \"\(key.column)\": \((error as? PredicateSyntaxError)?.message ?? "\(error)")")
            }
            guard operands.count == 1, case .column = operands[0] else {
                throw ActiveRecordError(
                    .invalidPredicate, "cannot page by \"\(key.column)\": keyset pagination pages by columns (use page(number:size:))")
            }
            return operands[0]
        }
        let never = PredicateNode.comparison(.integer(1), .equal, .integer(0), position: 0)
        var alternatives: [PredicateNode] = []
        for index in keys.indices {
            var terms: [PredicateNode] = []
            for earlier in 0..<index {
                terms.append(values[earlier].isNull
                    ? .isNull(columns[earlier], negated: false)
                    : .comparison(columns[earlier], .equal, placeholder(values[earlier]), position: 0))
            }
            let value = values[index]
            switch (keys[index].ascending, value.isNull) {
            case (true, true): terms.append(.isNull(columns[index], negated: true))  // NULLs sort first
            case (true, false): terms.append(.comparison(columns[index], .greater, placeholder(value), position: 0))
            case (false, true): terms.append(never)  // NULLs sort last: nothing is after them
            case (false, false):
                terms.append(.or([
                    .comparison(columns[index], .less, placeholder(value), position: 0), .isNull(columns[index], negated: false),
                ]))
            }
            alternatives.append(terms.count == 1 ? terms[0] : .and(terms))
        }
        var node = alternatives.count == 1 ? alternatives[0] : PredicateNode.or(alternatives)
        if keys.count > 1, keys[0].ascending, !values[0].isNull {
            node = .and([.comparison(columns[0], .greaterOrEqual, placeholder(values[0]), position: 0), node])
        }
        guard let first = arguments.first else { return (node, QueryArgument.Sources()) }
        return (node, QueryArgument.Sources(.converted(.value(first)), arguments.dropFirst().map { .converted(.value($0)) }))
    }
}
