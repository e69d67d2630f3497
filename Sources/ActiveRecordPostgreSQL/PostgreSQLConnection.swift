import Foundation
import ActiveRecordLibPQ
import ARCore

/// One libpq connection, synchronous: every call runs one statement on the server and waits
/// for its whole result. Confined to one thread at a time (``Database`` hands it out).
///
/// At connect it asks for UTF-8, exact floating-point text (`extra_float_digits = 3`),
/// standard strings and hex `bytea` output, whatever the server's defaults; a connection to
/// a database opened read-only makes every transaction read-only.
final class PostgreSQLConnection: EngineConnection {
    let handle: OpaquePointer
    /// How many rows the last `INSERT`, `UPDATE` or `DELETE` changed.
    var lastChanged = 0
    /// Prepared statements no longer used, deallocated before the next statement runs (a
    /// round trip of their own would slow every eviction).
    var deallocations: [String] = []
    private var nextName = 0

    /// Connects with `conninfo` (a `postgresql://` URL or `key=value` pairs).
    /// - Throws: `.cannotOpen` with libpq's reason (no server, refused login, no database).
    init(conninfo: String, readOnly: Bool, description: String) throws {
        let keywords = ["dbname", "client_encoding", "fallback_application_name"]
        let values = [conninfo, "UTF8", "activerecord"]
        let handle = withCStrings(keywords) { keywords in
            withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let handle else {
            throw ActiveRecordError(.cannotOpen, "cannot connect to PostgreSQL at \(description): out of memory")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let reason = String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines
            PQfinish(handle)
            throw ActiveRecordError(.cannotOpen, "cannot connect to PostgreSQL at \(description): \(reason)")
        }
        self.handle = handle
        ar_pg_silence_notices(handle)
        var settings = "SET extra_float_digits = 3; SET standard_conforming_strings = on; SET bytea_output = 'hex'"
        if readOnly { settings += "; SET default_transaction_read_only = on" }
        do {
            try run(settings)
        } catch {
            PQfinish(handle)
            throw error
        }
    }

    /// Runs SQL without parameters through the simple protocol (several statements allowed).
    func run(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw postgreSQLError(result, handle, sql: sql)
        }
    }

    /// A name for a server-side statement or cursor, unique on this connection.
    func makeName(_ prefix: String) -> String {
        nextName += 1
        return "activerecord_\(prefix)\(nextName)"
    }

    /// Deallocates the prepared statements evicted since the last statement (when the
    /// transaction can still run statements; otherwise they live until the connection closes).
    func deallocateEvicted() {
        guard !deallocations.isEmpty, !isInFailedTransaction else { return }
        let sql = deallocations.map { "DEALLOCATE \($0.quotedIdentifier)" }.joined(separator: "; ")
        deallocations.removeAll()
        PQclear(PQexec(handle, sql))
    }

    // MARK: EngineConnection

    func prepare(_ sql: String, _ use: StatementUse) throws -> any EngineStatement {
        try PostgreSQLStatement(sql: sql, use: use, connection: self)
    }

    var changedRowCount: Int { lastChanged }

    var isInFailedTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INERROR }

    var isUsable: Bool { PQstatus(handle) == CONNECTION_OK }

    func close() { PQfinish(handle) }
}

/// Calls `body` with `strings` as a NULL-terminated array of C strings.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer<CChar>($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
