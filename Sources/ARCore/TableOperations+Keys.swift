#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Tables keyed by a declared `UUID` or `String` column (``TableSchema/keyIndex``): the key a
/// write binds, the key an insert needs, finding and deleting by key. A record of such a table
/// is marked saved by a header id of 0; its key is its column's value.
extension TableOperations {
    /// The value the key column is compared with: the record's id for an integer key, else
    /// its key column's value as last loaded or saved (a change not saved, which a save
    /// refuses, does not move the record to another row).
    package func keyValue(of record: some RecordStorage, id: Int64) throws -> DatabaseValue {
        guard let keyIndex else { return .integer(id) }
        return record.originalValue(keyIndex)
    }

    /// `id 42`, `code 'FR'`, for messages (a key is the caller's data, not a bound value).
    package func keyText(of record: some RecordStorage) -> String {
        guard let keyIndex else { return "id \(record.header.id ?? 0)" }
        return keyText(record.header.id == nil ? (try? record.currentValue(keyIndex)) ?? .null : record.originalValue(keyIndex))
    }

    /// ``keyText(of:)`` of a key value.
    package func keyText(_ key: DatabaseValue) -> String {
        switch key {
        case .integer(let id): "\(schema.primaryKey.name) \(id)"
        case .text(let text): "\(schema.primaryKey.name) '\(text)'"
        default: "\(schema.primaryKey.name) \(key)"
        }
    }

    /// Before an insert: a `UUID` key left unset (`nil`, the nil UUID) is given a new random
    /// one (version 4); a `String` key must be set.
    /// - Throws: `.invalidValue` for a `String` key left empty (nothing is written).
    @inline(never)
    func prepareKey(of record: some RecordStorage, _ keyIndex: Int) throws {
        let key = schema.primaryKey
        guard PrimaryKey.isUnset(try record.currentValue(keyIndex), kind: key.kind) else { return }
        switch key.kind {
        case .uuid:
            try record.assignColumn(keyIndex, .text(UUID().uuidString))
        case .string, .autoincrement:
            throw ActiveRecordError(
                .invalidValue,
                "\(schema.name).\(key.name) is its primary key and is empty; set it before the first save (nothing was written)")
        }
    }

    /// ``update(_:columns:in:)`` of a table keyed by a declared column: by its key as last
    /// saved, which the update may not change.
    /// - Throws: `.misuse` when `changed` holds the key column (nothing is written).
    @inline(never)
    func updateKeyed(_ record: some RecordStorage, columns changed: [Int], in connection: Connection) throws {
        let key = try keyOfUpdate(record, changed)
        if let locking = schema.lockingIndex {
            return try updateLocked(record, id: 0, columns: changed, locking: locking, in: connection)
        }
        let previous = record.header
        let inTransaction = connection.transaction.depth > 0
        let original = inTransaction && changed.count == 1 ? record.originalValue(changed[0]) : .null
        let originals = inTransaction && changed.count > 1 ? changed.map { record.originalValue($0) } : []
        let now = Date.nowAsStored
        try connection.withStatement(self.key(.update(changed)), sql: { schema.updateSQL(columns: changed) }) { statement in
            for (offset, index) in changed.enumerated() {
                try record.bindColumn(index, to: statement, at: Int32(offset + 1))
            }
            try statement.bind(.real(now.timeIntervalSince1970), at: Int32(changed.count + 1))
            try statement.bind(key, at: Int32(changed.count + 2))
            _ = try statement.step()
        }
        guard connection.changedRowCount > 0 else {
            throw ActiveRecordError(.notFound, "\(schema.name) with \(keyText(key)) no longer exists; nothing was updated")
        }
        finishUpdate(record, columns: changed, previous: previous, original: original, originals: originals, at: now, in: connection)
    }

    /// Before an update of a table keyed by a declared column: the key the `WHERE` compares
    /// (the record's as last saved), once checked that the update does not change it.
    /// - Throws: `.misuse` when `changed` holds the key column (nothing is written).
    @inline(never)
    func keyOfUpdate(_ record: some RecordStorage, _ changed: [Int]) throws -> DatabaseValue {
        let keyIndex = keyIndex.unsafelyUnwrapped
        guard changed.contains(keyIndex) else { return record.originalValue(keyIndex) }
        let original = keyText(record.originalValue(keyIndex))
        throw ActiveRecordError(
            .misuse,
            "\(schema.name) with \(original): its primary key \(schema.primaryKey.name) cannot change once saved (nothing "
                + "was written); make a new record with the new key and destroy this one")
    }

    /// `DELETE`s the row with this key (no record involved); returns whether there was one.
    package func delete(key: DatabaseValue, in connection: Connection) throws -> Bool {
        let deleted = try connection.withStatement(self.key(.delete), sql: { deleteSQL }, [key]) { statement in
            _ = try statement.step()
            return connection.changedRowCount > 0
        }
        if deleted { connection.noteChange(self) }
        return deleted
    }

    /// The record with this key, decoded into a new `type` given `mapping` (its class's), or `nil`.
    package func findRecord(key: DatabaseValue, in connection: Connection, of type: Model.Type, mapping: ModelMapping) throws -> Model? {
        try connection.withStatement(self.key(.find), sql: { findSQL }, [key]) { statement in
            guard try statement.step() else { return nil }
            let record = type.init()
            record.adopt(mapping)
            try decode(record, from: statement, columns: nil)
            return record
        }
    }
}

extension PrimaryKey {
    /// Whether a key column's value counts as not set: `NULL`, an empty text, or for a `UUID`
    /// key the nil UUID (a non-optional `UUID` column's zero).
    package static func isUnset(_ value: DatabaseValue, kind: Kind) -> Bool {
        switch value {
        case .null: true
        case .text(let text): text.isEmpty || (kind == .uuid && text == "00000000-0000-0000-0000-000000000000")
        default: false
        }
    }
}
