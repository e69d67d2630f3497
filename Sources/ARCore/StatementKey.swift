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

    /// The ``TableOperations/serial`` of the table.
    package var table: UInt64
    package var kind: Kind

    package init(table: UInt64, kind: Kind) {
        self.table = table
        self.kind = kind
    }

    /// The key as one number, different for different keys, or 0 (the kinds with an array,
    /// but for the update of one column; serials too large to pack): a statement's key is
    /// compared by it without copying the key out of the statement. The low three bits tell
    /// the kind.
    @inline(__always)
    package var code: UInt64 {
        guard table < 1 << 32 else { return 0 }
        switch kind {
        case .insert: return table << 3 | 1
        case .find: return table << 3 | 2
        case .delete: return table << 3 | 3
        case .all: return table << 3 | 4
        case .query(let serial): return serial < 1 << 29 ? table << 32 | serial << 3 | 5 : 0
        case .update(let columns):
            // Most saves change one column (a loop of them runs this look-up each time).
            guard columns.count == 1, columns[0] >= 0, columns[0] < 1 << 29 else { return 0 }
            return table << 32 | UInt64(columns[0]) << 3 | 6
        case .upsert: return 0
        }
    }
}
