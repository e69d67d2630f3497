@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CompiledQuery {
    /// Runs `head` (`DELETE FROM "T"` or `UPDATE "T" SET …`) on the rows this query selects,
    /// as `head WHERE "id" IN (SELECT "T"."id" FROM … WHERE … ORDER BY … LIMIT …)`: one
    /// statement for every shape of query (joins, order and limit included), on both engines.
    /// - Parameter verb: the caller's name, for messages.
    /// - Returns: how many rows it changed.
    /// - Throws: `.misuse` for a grouped query (its rows are groups, not records).
    func writeMatchingRows(_ verb: String, _ head: String, _ headArguments: [DatabaseValue], grouped: Bool) throws -> Int {
        guard !grouped else {
            throw ActiveRecordError(.misuse, "\(verb) on a grouped query: group(by:) makes rows of groups, not records; drop the grouping")
        }
        let base = tables[0]
        let id = base.table.schema.quotedKey
        let sql = "\(head) WHERE \(id) IN (SELECT \(base.quotedName).\(id) \(body)\(tail))"
        return try (database ?? Database.current).withWriter(tables.map(\.table)) { connection in
            try connection.execute(sql, headArguments + arguments)
            let changed = connection.changedRowCount
            if changed > 0 { connection.noteChange(base.table) }
            return changed
        }
    }

    /// `UPDATE "T" SET "c" = ?, …` for `values` (and `"updatedAt"` set to now unless given),
    /// checked against the base table's columns.
    /// - Throws: `.unknownColumn` naming the columns; `.misuse` for `id`, or no values;
    ///   `.typeMismatch` for a value of another storage class than its column's;
    ///   `.invalidValue` for one that cannot be stored.
    func updateHead(_ values: [(column: String, value: DatabaseValue)]) throws -> (String, [DatabaseValue]) {
        guard !values.isEmpty else { throw ActiveRecordError(.misuse, "updateAll: give at least one column and its value") }
        let schema = tables[0].table.schema
        var assignments: [String] = []
        var arguments: [DatabaseValue] = []
        for (name, value) in values.sorted(by: { $0.column < $1.column }) {
            let column: String
            if name == "createdAt" || name == "updatedAt" {
                column = name
            } else if name == "id" || name == schema.primaryKey.name {
                throw ActiveRecordError(.misuse, "updateAll: id is the row's identity and is not changed")
            } else {
                let position = tables[0].table.position(of: name)
                guard let position, position >= 3 else { throw schema.unknownColumn(name) }
                let declared = schema.columns[position - 3]
                column = declared.name
                try checkStorage(value, fits: declared)
            }
            assignments.append("\(column.quotedIdentifier) = ?")
            arguments.append(value)
        }
        if !values.contains(where: { $0.column == "updatedAt" }) {
            assignments.append("\("updatedAt".quotedIdentifier) = ?")
            arguments.append(.real(Date().timeIntervalSince1970))
        }
        return ("UPDATE \(tables[0].quotedName) SET \(assignments.joined(separator: ", "))", arguments)
    }

    private func checkStorage(_ value: DatabaseValue, fits column: ColumnSchema) throws {
        do {
            try value.checkStorable()
        } catch let error as ActiveRecordError {
            throw error.with(message: "updateAll: \(tables[0].table.schema.name).\(column.name): \(error.message)")
        }
        let fits = switch (value, column.type) {
        case (.null, _): column.isNullable
        case (.integer, .integer), (.integer, .real), (.real, .real), (.text, .text), (.blob, .blob): true
        default: false
        }
        guard fits else {
            throw ActiveRecordError(
                .typeMismatch,
                "updateAll: \(tables[0].table.schema.name).\(column.name) holds \(column.isNullable ? "" : "non-NULL ")"
                    + "\(column.type.rawValue), not \(value.storageClassName)")
        }
    }
}
