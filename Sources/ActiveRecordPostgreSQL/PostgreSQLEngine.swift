import ActiveRecordLibPQ
import ARCore
import Foundation

/// PostgreSQL through libpq: a pool of connections, each transaction owning one.
struct PostgreSQLEngine: DatabaseEngine {
    let conninfo: String
    let readOnly: Bool
    let maximumConnections: Int
    let connectionWait: Duration
    let description: String

    var dialect: any SQLDialect { PostgreSQLDialect() }

    var sharing: ConnectionSharing { .pool(maximum: maximumConnections, wait: connectionWait) }

    var notes: [String] { [] }

    func connect(_ role: ConnectionRole) throws -> any EngineConnection {
        try PostgreSQLConnection(conninfo: conninfo, readOnly: readOnly, description: description)
    }

    /// `postgresql://user@host:port/database` for a connection string, without its password
    /// (for messages and ``Database/path``).
    /// - Throws: `.configuration` when libpq cannot read the string.
    static func describe(_ conninfo: String) throws -> String {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            let reason = message.map { String(cString: $0).trimmingTrailingNewlines } ?? "out of memory"
            if let message { PQfreemem(message) }
            throw ActiveRecordError(.configuration, "the PostgreSQL connection string is not valid: \(reason)")
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        let user = values["user"].map { $0 + "@" } ?? ""
        let host = values["host"] ?? values["hostaddr"] ?? "localhost"
        let port = values["port"].map { ":" + $0 } ?? ""
        let database = values["dbname"].map { "/" + $0 } ?? ""
        return "postgresql://\(user)\(host)\(port)\(database)"
    }
}
