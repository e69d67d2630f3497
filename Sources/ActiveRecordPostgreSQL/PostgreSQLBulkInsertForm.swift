import ARLibPQ
@_spi(Engines) import ARCore

/// What a connection knows of one table's bulk insert, kept by its one-row SQL
/// (``PostgreSQLConnection/bulkStatements``): the columns' server types, the returned id's, and
/// the name of the full-size statement once prepared.
final class BulkInsertForm {
    /// The server type of each column (from the description of the one-row `INSERT`).
    let columnTypes: [Oid]
    /// Whether the id comes back as a binary integer (`bigint`, `integer`, `smallint`), else as text.
    let binaryIds: Bool
    /// The full-size statement prepared on the server (named: not behind a transaction pooler).
    var preparedName: String?
    /// Whether a binary COPY may insert the rows (PostgreSQLConnection+BulkCopy.swift): a
    /// `bigint` id, and columns of types whose binary form is written here.
    let copyable: Bool

    init(columnTypes: [Oid], binaryIds: Bool, copyable: Bool) {
        self.columnTypes = columnTypes
        self.binaryIds = binaryIds
        self.copyable = copyable
    }
}

extension BulkInsertForm {
    /// The form of the one-row `INSERT` `sql`: prepared unnamed with its parameters' types left
    /// to the server, which gives each its column's, and described (two round trips).
    static func describe(_ sql: String, table: String, columns: Int, on connection: PostgreSQLConnection) throws
        -> BulkInsertForm
    {
        PQclear(try connection.checked(sql, connection.exchange(for: sql) { PQsendPrepare(connection.handle, "", sql, Int32(columns), nil) }))
        let description = try connection.checked(sql, connection.exchange(for: sql) { PQsendDescribePrepared(connection.handle, "") })
        defer { PQclear(description) }
        guard PQnparams(description) == Int32(columns), PQnfields(description) == 1 else {
            throw ActiveRecordError(.engine, "the bulk INSERT's description has \(PQnparams(description)) parameters for \(columns) columns", sql: sql)
        }
        let columnTypes = (0..<Int32(columns)).map { PQparamtype(description, $0) }
        let idType = Int(PQftype(description, 0))
        return BulkInsertForm(
            columnTypes: columnTypes, binaryIds: idType == AR_PG_INT8 || idType == AR_PG_INT4 || idType == AR_PG_INT2,
            copyable: idType == AR_PG_INT8 && columnTypes.allSatisfy(copyTakesBinary))
    }

    /// The `INSERT` of `rows` rows of `columns` values: `head`, the placeholders, and ` RETURNING "id"`,
    /// written as bytes (the full statement has 10,000 placeholders or so).
    static func sql(head: String, rows: Int, columns: Int) -> String {
        let tail = " RETURNING \("id".quotedIdentifier)"
        // Per placeholder: ", $" and up to 5 digits (65,535 parameters at most); per row: ", (" and ")".
        let capacity = head.utf8.count + rows * (columns * 8 + 4) + tail.utf8.count
        return String(unsafeUninitializedCapacity: capacity) { text in
            let base = UnsafeMutableRawPointer(text.baseAddress!)
            var length = 0
            func append(_ string: String) {
                for byte in string.utf8 {
                    base.storeBytes(of: byte, toByteOffset: length, as: UInt8.self)
                    length += 1
                }
            }
            func append(_ byte: Unicode.Scalar) {
                base.storeBytes(of: UInt8(ascii: byte), toByteOffset: length, as: UInt8.self)
                length += 1
            }
            append(head)
            var number: Int64 = 0
            for row in 0..<rows {
                if row > 0 { append(","); append(" ") }
                append("(")
                for column in 0..<columns {
                    if column > 0 { append(","); append(" ") }
                    append("$")
                    number += 1
                    length += Int(ParameterLayout.writeDecimal(number, to: base + length))
                }
                append(")")
            }
            append(tail)
            return length
        }
    }
}
