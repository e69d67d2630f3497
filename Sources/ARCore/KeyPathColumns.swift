#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which column a key path names: `\User.name` → `name`, `\User.group` (a belongs-to)
/// → `groupId`. Resolved once per key path (one cache for queries, validations and
/// relations), on the model's reflected mapping (``ModelMapping/reflected(_:)``), so that
/// a model's validations can name their columns by key path while its final mapping is
/// being built.
///
/// A key path is resolved by writing a probe value through it on a scratch record and
/// seeing which column changed. Types for which no second value can be made (an enum
/// that is not `CaseIterable`, say) resolve when the column is the only one of exactly
/// that type; otherwise the error says to use the column name.
package enum KeyPathColumns {
    /// A key path as a dictionary key. `@unchecked Sendable`: key paths are immutable
    /// objects, safe to share between threads (the standard library does not mark
    /// `AnyKeyPath` Sendable).
    private struct Key: Hashable, @unchecked Sendable {
        let keyPath: AnyKeyPath
    }

    /// Key path → index of the column in the model's declared columns.
    private static let cache = Lock<[Key: Int]>([:])

    /// The name of the column a key path to a `@Column` property names.
    /// - Throws: `.unknownColumn` when the key path is not a column of `Root`.
    package static func columnName<Root: Model, Value: ColumnValue>(_ keyPath: KeyPath<Root, Value>) throws -> String {
        try ModelMapping.reflected(Root.self).table.schema.columns[columnIndex(keyPath)].name
    }

    /// The index (in the model's declared columns) of the column a key path names.
    /// - Throws: `.unknownColumn` when the key path is not a column of `Root`.
    package static func columnIndex<Root: Model, Value: ColumnValue>(_ keyPath: KeyPath<Root, Value>) throws -> Int {
        try cached(keyPath) {
            let mapping = try ModelMapping.reflected(Root.self)
            guard let writable = keyPath as? ReferenceWritableKeyPath<Root, Value> else {
                throw notAColumn(keyPath, Root.self, mapping)
            }
            let changed = try changedColumns(Root.self, mapping) { record in
                let original = record[keyPath: writable]
                guard let different = ColumnProbes.distinctValue(from: original) else { return false }
                record[keyPath: writable] = different
                return true
            }
            guard let changed else {
                // No second value to write: the column is known if it is the only one of this type.
                let sameType = mapping.fields.indices.filter { mapping.fields[$0].kind == Column<Value>.self }
                if sameType.count == 1 { return sameType[0] }
                throw ActiveRecordError(
                    .invalidPredicate,
                    "cannot tell which column \(keyPath) is (no probe value for \(Value.self)); use its column name instead")
            }
            guard changed.count == 1 else { throw notAColumn(keyPath, Root.self, mapping) }
            return changed[0]
        }
    }

    /// The index of the key column of a belongs-to relation property (`\User.group`).
    /// - Throws: `.misuse` when the key path is not such a relation of `Root`.
    package static func columnIndex<Root: Model, Parent: Model>(ofRelation keyPath: ReferenceWritableKeyPath<Root, Parent?>) throws -> Int {
        try cached(keyPath) {
            let mapping = try ModelMapping.reflected(Root.self)
            let sentinel = Int64.min + 7
            // A parent keyed by a declared column: a saved probe holding a key of its own.
            let parentKey = try Parent.primaryKey.isAutoincrement ? nil : ModelMapping.reflected(Parent.self).table.keyIndex
            let changed = try changedColumns(Root.self, mapping) { record in
                let probe = Parent()
                probe.header.id = sentinel
                if let parentKey {
                    probe.header.id = 0
                    try probe.assignColumn(parentKey, .text(UUID().uuidString))
                }
                record[keyPath: keyPath] = probe
                return true
            }
            guard let changed, changed.count == 1,
                  mapping.hooks.contains(where: { $0.columnIndex == changed[0] }) else {
                throw ActiveRecordError(.misuse, "\(keyPath) is not a @BelongsTo relation of \(Root.self)")
            }
            return changed[0]
        }
    }

    private static func cached(_ keyPath: AnyKeyPath, _ resolve: () throws -> Int) throws -> Int {
        let key = Key(keyPath: keyPath)
        if let index = cache.withLock({ $0[key] }) { return index }
        let index = try resolve()
        cache.withLock { $0[key] = index }
        return index
    }

    /// The declared columns whose value `write` changed on a scratch record; `nil` when it
    /// wrote nothing.
    private static func changedColumns<Root: Model>(
        _ type: Root.Type, _ mapping: ModelMapping, _ write: (Root) throws -> Bool
    ) throws -> [Int]? {
        let record = Root()
        record.adopt(mapping)
        let columns = mapping.table.schema.columns.indices
        let before = columns.map { try? record.currentValue($0) }
        guard try write(record) else { return nil }
        return columns.filter { (try? record.currentValue($0)) != before[$0] }
    }

    private static func notAColumn(_ keyPath: AnyKeyPath, _ root: Model.Type, _ mapping: ModelMapping) -> ActiveRecordError {
        ActiveRecordError(
            .unknownColumn, "the key path \(keyPath) of \(root) is not a settable @Column property; "
                + "its columns are: \(mapping.table.schema.allColumnNames.joined(separator: ", "))")
    }
}
