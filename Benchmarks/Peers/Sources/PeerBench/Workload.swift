import Foundation

/// The measured workloads, in report order. Each runs `ops` operations; a counted unit is one row
/// written, one query, or one group walked (see ``unit``).
enum Workload: String, CaseIterable {
    /// Insert `ops` rows in one transaction (rows 1...ops).
    case insertTx = "insert-tx"
    /// Insert `ops` rows, each statement its own transaction.
    case insertAutocommit = "insert-autocommit"
    /// Fetch the whole table (N rows, id order) `ops` times; counted per row.
    case fetchAll = "fetch-all"
    /// `age > 80` (10 % of the rows, id order) `ops` times; counted per query.
    case ageQuery = "age-query"
    /// Find ids 1...ops, one query each.
    case find
    /// Load every row (untimed), then add 1 to the score of rows 1...ops and save each (score and
    /// updatedAt), in one transaction.
    case update
    /// Delete ids 1...ops, one statement each, in one transaction (nothing loaded).
    case delete
    /// `ops` walks: the groups, then one query per group for its members (by `groupId`);
    /// counted per group.
    case lazy
    /// `ops` walks: the groups, then all their members in one more query; counted per group.
    case eager

    var title: String {
        switch self {
        case .insertTx: "insert (1 tx)"
        case .insertAutocommit: "insert (autocommit)"
        case .fetchAll: "fetch all (per row)"
        case .ageQuery: "age > 80 (per query)"
        case .find: "find by id"
        case .update: "update score (1 tx)"
        case .delete: "delete by id (1 tx)"
        case .lazy: "lazy walk (per group)"
        case .eager: "eager walk (per group)"
        }
    }

    /// Whether the table starts empty (the workload fills it).
    var inserts: Bool { self == .insertTx || self == .insertAutocommit }

    /// Counted units per operation: rows per fetch, groups per walk, 1 otherwise.
    func units(rows: Int, groups: Int) -> Int {
        switch self {
        case .fetchAll: rows
        case .lazy, .eager: groups
        default: 1
        }
    }

    /// The default number of operations for a table of `rows` rows: every row once for the
    /// per-row workloads, so many fetches, queries or walks that each counts about `rows` units.
    func defaultOps(rows: Int, groups: Int) -> Int {
        switch self {
        case .fetchAll: 5
        case .ageQuery: max(1, rows / 10)
        case .lazy, .eager: 5
        default: rows
        }
    }
}

/// The benchmark's shape: N rows in G groups.
struct Shape {
    var rows = 1000
    var groups = 100

    /// Ids `1...rows` and the row values.
    var values: [RowValues] { RowValues.table(rows, groups: groups) }
}
