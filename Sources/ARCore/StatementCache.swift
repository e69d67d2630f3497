/// A connection's prepared statements: by SQL text (SQL the caller wrote), by key (SQL the
/// library generates for a table), and queries' by their shape's key, bounded.
struct StatementCache {
    var byText: [String: Statement] = [:]
    private var byKey: [StatementKey: Statement] = [:]
    /// Queries' statements (``StatementKey/Kind/query(_:)``): a query shape is compiled per
    /// thread and its serial changes when that cache is cleared, so these are bounded.
    private var queries: [StatementKey: Statement] = [:]
    private static let queryLimit = 200
    /// The keyed statement used last: a loop of saves finds it without hashing its key.
    /// Unretained, so that a run reaches it without a retain and release: it is one of
    /// ``byKey`` or ``queries``, and is forgotten when it leaves them (see ``drop(_:)``).
    var lastKeyed: Unretained<Statement>?
    /// Statements dropped from the caches while running (a failed step evicts its statement;
    /// a full query cache is emptied under a running query): kept alive until they end.
    private var retired: [Statement] = []

    init() {
        // The caches' storage is made now: the first one a process makes has the runtime
        // instantiate the dictionary type, checking `StatementKey: Hashable` against every
        // conformance in the binary (see the benchmark notes), which would otherwise fall on
        // the first save or query.
        byKey.reserveCapacity(8)
        byText.reserveCapacity(8)
    }

    /// The statement cached under `key`.
    func cached(_ key: StatementKey, isQuery: Bool) -> Statement? {
        isQuery ? queries[key] : byKey[key]
    }

    /// Caches `statement` under `key`, as the statement used last (a full query cache is
    /// emptied first).
    mutating func insert(_ statement: Statement, under key: StatementKey, isQuery: Bool) {
        if isQuery {
            if queries.count >= Self.queryLimit {
                queries.values.forEach { drop($0) }
                queries.removeAll()
            }
            queries[key] = statement
        } else {
            byKey[key] = statement
        }
        lastKeyed = Unretained(statement)
    }

    /// Drops a statement after a failed step (it is prepared afresh next time).
    mutating func evict(_ statement: Statement) {
        if let key = statement.cacheKey {
            if byKey[key] === statement {
                drop(statement)
                byKey[key] = nil
            } else if queries[key] === statement {
                drop(statement)
                queries[key] = nil
            }
        } else if byText[statement.sql] === statement {
            byText[statement.sql] = nil
        }
    }

    /// Before a keyed statement leaves the caches: ``lastKeyed`` forgets it, and one still
    /// running is kept in ``retired`` until it ends (its run holds no reference of its own).
    private mutating func drop(_ statement: Statement) {
        if lastKeyed?.address == Unretained(statement).address { lastKeyed = nil }
        if statement.isInUse { retired.append(statement) }
    }

    /// Whether statements dropped while running wait to be released.
    var hasRetired: Bool {
        @inline(__always) get { !retired.isEmpty }
    }

    /// Lets go of the retired statements that have ended.
    @inline(never)
    mutating func releaseRetired() {
        retired.removeAll { !$0.isInUse }
    }

    /// Forgets every cached statement (finalizing those not running).
    mutating func removeAll() {
        byKey.values.forEach { drop($0) }
        queries.values.forEach { drop($0) }
        lastKeyed = nil
        byText.removeAll()
        byKey.removeAll()
        queries.removeAll()
    }
}
