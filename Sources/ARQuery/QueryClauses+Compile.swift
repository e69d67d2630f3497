@_spi(Engines) import ARCore
import Synchronization

extension QueryClauses {
    /// `clauses.compile(…)`, taking the clauses in place: for a query's box (`QueryState`), a
    /// call on its stored property would first copy the clauses out of it (a class, whose
    /// property a callee could change), retaining every field.
    static func compile(
        _ clauses: inout QueryClauses, _ base: @autoclosure () throws -> QueryTable, caching model: Model.Type?,
        for database: Database, defaultsToIdOrder: Bool
    ) throws -> CompiledQuery {
        try clauses.compile(try base(), caching: model, for: database, defaultsToIdOrder: defaultsToIdOrder)
    }

    /// `clauses.shape(…)`, taking the clauses in place (see the `compile` above).
    static func shape(
        _ clauses: inout QueryClauses, _ base: @autoclosure () throws -> QueryTable, caching model: Model.Type,
        for database: Database, defaultsToIdOrder: Bool
    ) throws -> CompiledShape {
        try clauses.shape(try base(), caching: model, for: database, defaultsToIdOrder: defaultsToIdOrder)
    }

    /// SQLite's default `SQLITE_MAX_VARIABLE_NUMBER`.
    static var maximumParameters: Int { 32_766 }

    /// Builds the query's SQL: from the calling thread's cache of compiled shapes when a
    /// query of the same shape was compiled on it before (then nothing is parsed, resolved
    /// or written, and no lock is taken), else by ``compileShape(_:dialect:defaultsToIdOrder:)``.
    ///
    /// - Parameters:
    ///   - base: the queried table (made only on a cache miss).
    ///   - model: the model class `base` is the table of, whose shapes are cached; `nil` for a
    ///     run-time model, whose query is compiled each time (a cached shape would keep its
    ///     table, and through the table's parents the C API's database, alive for the thread's life).
    ///   - database: the database it runs on, whose dialect the SQL is written in.
    ///   - defaultsToIdOrder: order by the base table's id when no order is given
    ///     (record fetches, so that results are repeatable).
    /// - Throws: `.invalidPredicate` (syntax, argument count, with the position),
    ///   `.unknownColumn` / `.unknownTable` (naming the columns), `.invalidValue` (a
    ///   negative limit or offset), a conversion error of an argument.
    func compile(
        _ base: @autoclosure () throws -> QueryTable, caching model: Model.Type?, for database: Database,
        defaultsToIdOrder: Bool = false
    ) throws -> CompiledQuery {
        try shape(try base(), caching: model, for: database, defaultsToIdOrder: defaultsToIdOrder).query(self)
    }

    /// The compiled shape of the query (see ``compile(_:caching:for:defaultsToIdOrder:)``), for a
    /// caller that binds the values itself (``CompiledShape/bind(_:to:)``, after
    /// ``CompiledShape/checkLimits(_:_:)``).
    func shape(
        _ base: @autoclosure () throws -> QueryTable, caching model: Model.Type?, for database: Database,
        defaultsToIdOrder: Bool
    ) throws -> CompiledShape {
        guard let model, !compilesEachTime else {
            // A locking query is compiled each time (its shapes are not cached): it runs in a
            // transaction that writes what it read, where the compilation is little of the cost.
            // So is a query with SQL about its owners' children, whose values its shape holds.
            if rowLock != nil { try database.requireTransaction(for: "lock()") }
            return try compileShape(try base(), dialect: database.dialect, defaultsToIdOrder: defaultsToIdOrder)
        }
        let target = QueryShape.Target(
            base: ObjectIdentifier(model), dialect: database.dialectType, defaultsToIdOrder: defaultsToIdOrder)
        // A condition that failed to build, or an argument that does not convert, matches no
        // cached shape: the full compilation then reports the first error, as it finds them.
        // The closures capture no clauses (a capture of `self` would copy every field).
        if let compiled = QueryShape.cache.withValue({ $0.last })?.compiled(matching: self, target) { return compiled }
        let key = fingerprint(target)
        if let entry = QueryShape.cache.withValue({ $0.entries[key] }), let compiled = entry.compiled(matching: self, target) {
            QueryShape.cache.withValue { $0.last = entry }
            return compiled
        }
        let compiled = try compileShape(try base(), dialect: database.dialect, defaultsToIdOrder: defaultsToIdOrder)
        compiled.markCached()
        let entry = QueryShape.Entry(QueryShape(self, target), compiled)
        QueryShape.cache.withValue { cache in
            if cache.entries.count >= QueryShape.cacheLimit { cache.entries.removeAll() }
            // A different shape with the same fingerprint is replaced.
            cache.entries[key] = entry
            cache.last = entry
        }
        return compiled
    }

    /// Resolves the query's tables (`base`, then the joined models) and builds its SQL,
    /// checking that every argument converted.
    /// - Throws: as ``compile(_:caching:for:defaultsToIdOrder:)``, but for a negative limit or offset.
    func compileShape(_ base: QueryTable, dialect: any SQLDialect, defaultsToIdOrder: Bool) throws -> CompiledShape {
        var tables = [base]
        var from = "FROM \(base.quotedName)"
        for join in joins {
            let joined = try QueryTable(join.model)
            guard !tables.contains(where: { isSameName($0.table.schema.name, joined.table.schema.name) }) else {
                throw ActiveRecordError(
                    .invalidPredicate, "the table \(joined.table.schema.name) is already in the query; it cannot be joined twice")
            }
            let (local, foreign) = try joinColumns(join, joined, tables, dialect)
            tables.append(joined)
            from += " \(join.kind.rawValue) \(joined.quotedName) ON \(local) = \(foreign)"
        }
        let selected = try selectedColumns(base)
        var slots: [ArgumentSlot] = []
        var clauses = [from]
        var wheres = try conditions.enumerated().map { try render($1, number: $0, tables, dialect, slots: &slots) }
        for condition in subqueryConditions { wheres.append(try condition.render(base, dialect, slots: &slots)) }
        if !wheres.isEmpty { clauses.append("WHERE " + wheres.joined(separator: " AND ")) }
        if !groupColumns.isEmpty {
            var constants: [DatabaseValue] = []
            let keys = try groupColumns.map { try renderExpression($0, tables, dialect, into: &constants) }
            slots += constants.map { .constant($0) }
            clauses.append("GROUP BY " + keys.joined(separator: ", "))
        }
        let havings = try havingConditions.enumerated().map {
            try render($1, number: conditions.count + $0, tables, dialect, slots: &slots)
        }
        if !havings.isEmpty { clauses.append("HAVING " + havings.joined(separator: " AND ")) }

        var orderArguments: [DatabaseValue] = []
        var orders = subqueryOrderings.isEmpty
            ? try orderings.map { ordering in
                dialect.orderTerm(try renderExpression(ordering.column, tables, dialect, into: &orderArguments), ascending: ordering.ascending)
            }
            : try renderOrders(tables, dialect, into: &orderArguments)
        if randomOrder { orders.append("random()") }
        if orders.isEmpty && defaultsToIdOrder { orders.append("\(base.quotedName).\(base.table.schema.quotedKey) ASC") }
        var tail = ""
        if !orders.isEmpty { tail += " ORDER BY " + orders.joined(separator: ", ") }
        let hasLimitOrOffset = limitCount != nil || offsetCount != nil
        if hasLimitOrOffset { tail += " LIMIT ? OFFSET ?" }
        let total = slots.count + orderArguments.count + (hasLimitOrOffset ? 2 : 0)
        guard total <= Self.maximumParameters else {
            throw ActiveRecordError(
                .invalidPredicate,
                "the query has \(total) values to bind; SQLite binds at most \(Self.maximumParameters). Split a long IN list.")
        }
        var lockClause = ""
        if let rowLock {
            guard !isDistinct, groupColumns.isEmpty else {
                throw ActiveRecordError(
                    .misuse, "lock() locks the rows of a record query: it cannot be used with distinct() or group(by:)")
            }
            lockClause = dialect.rowLockClause(rowLock, of: base.table.schema.name)
        }
        return CompiledShape(
            tables: tables, body: clauses.joined(separator: " "), tail: tail, selectedColumns: selected,
            isDistinct: isDistinct, needsSubquery: hasLimitOrOffset || isDistinct || !groupColumns.isEmpty,
            dialect: dialect, bodySlots: slots, orderArguments: orderArguments, hasLimitOrOffset: hasLimitOrOffset,
            lockClause: lockClause)
    }

    private func joinColumns(
        _ join: Join, _ joined: QueryTable, _ tables: [QueryTable], _ dialect: any SQLDialect
    ) throws -> (String, String) {
        if let (local, foreign) = join.on {
            return (
                try resolveNamed(local, tables, dialect, context: "join(\(joined.modelName).self, on: \"\(local)\", …)"),
                try resolveNamed(foreign, [joined], dialect, context: "join(\(joined.modelName).self, on: …, \"\(foreign)\")"))
        }
        let base = tables[0]
        let foreignKey = foreignKeyName(forModelNamed: joined.modelName)
        if let column = base.qualifiedColumn(foreignKey), let id = joined.qualifiedColumn("id") {
            return (column, id)
        }
        let backKey = foreignKeyName(forModelNamed: base.modelName)
        if let column = joined.qualifiedColumn(backKey), let id = base.qualifiedColumn("id") {
            return (id, column)
        }
        throw ActiveRecordError(
            .unknownColumn,
            "cannot join \(joined.modelName) to \(base.modelName) by convention: neither \(base.modelName).\(foreignKey) "
                + "nor \(joined.modelName).\(backKey) exists; name the columns with join(_:_:on:_:)")
    }

    private func selectedColumns(_ base: QueryTable) throws -> [Int]? {
        switch selection {
        case .all: return nil
        case .only(let names):
            let indexes = Set(try names.compactMap { try index(of: $0, in: base) })
            return base.table.schema.columns.indices.filter(indexes.contains)
        case .except(let names):
            let indexes = Set(try names.compactMap { try index(of: $0, in: base) })
            return base.table.schema.columns.indices.filter { !indexes.contains($0) }
        }
    }

    /// The declared column index for `only`/`except`; `nil` for `id` and the timestamps (always loaded).
    private func index(of name: String, in base: QueryTable) throws -> Int? {
        if TableSchema.reservedColumnNames.contains(name) { return nil }
        return try base.columnIndex(name)
    }
}
