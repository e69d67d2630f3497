import ActiveRecord
import CSQLiteRaw
import Foundation

/// What the query and relation tables share: filling their database file
/// through the library, then reopening it raw for their checks.
enum TableFile {
    /// Opens the library's `Database` on `path` and runs `insert` inside its
    /// `use`, in one transaction; then opens a separate raw connection,
    /// checkpoints the WAL into the main file and returns that connection for
    /// the table's checks.
    static func fill(path: String, _ insert: () throws -> Void) throws -> RawDatabase {
        let database = try Database(.file(path))
        try database.use {
            try database.transaction(insert)
        }
        let raw = try RawDatabase(path: path)
        try raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return raw
    }
}

/// The columns every table the library creates starts with, read by hand
/// from the current row of a raw statement (or a binary libpq result): the raw side's plain objects for
/// the query and relation tables extend it with their declared columns,
/// which their select lists put after these (from column 3 on).
class RawRecord {
    let id: Int64
    /// Seconds since 1970, as the library stores dates.
    let createdAt: Double
    let updatedAt: Double

    /// Reads columns 0 (`id`), 1 (`createdAt`) and 2 (`updatedAt`).
    init(_ statement: RawStatement) {
        let handle = statement.handle
        id = sqlite3_column_int64(handle, 0)
        createdAt = sqlite3_column_double(handle, 1)
        updatedAt = sqlite3_column_double(handle, 2)
    }

    /// Reads columns 0, 1 and 2 of row `row` of a binary libpq result (the PostgreSQL section).
    init(_ result: OpaquePointer?, row: Int32) {
        id = BinaryResult.int8(result, row, 0)
        createdAt = BinaryResult.float8(result, row, 1)
        updatedAt = BinaryResult.float8(result, row, 2)
    }
}
