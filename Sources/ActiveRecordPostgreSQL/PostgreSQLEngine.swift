import ARLibPQ
@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// PostgreSQL through libpq: a pool of connections, each transaction owning one.
struct PostgreSQLEngine: DatabaseEngine, CustomReflectable {
    /// What `PQconnectdbParams` gets (see ``connectionParameters(_:connectTimeout:)``).
    let keywords: [String]
    let values: [String]
    /// The replicas' `PQconnectdbParams` keywords and values, their descriptions, and the masks
    /// of their own passwords.
    let replicas: [(keywords: [String], values: [String], description: String, mask: PasswordMask)]
    let readOnly: Bool
    let maximumConnections: Int
    let connectionWait: Duration
    let description: String
    let mask: PasswordMask

    var dialect: any SQLDialect { PostgreSQLDialect() }

    var sharing: ConnectionSharing { .pool(maximum: maximumConnections, wait: connectionWait) }

    var notes: [String] { [] }

    /// The database's name, from the connection string (masked like ``description``).
    let namespace: String?
    /// Whether a pooler in transaction mode is between the library and the server (see
    /// ``DatabaseLocation/postgres(_:maximumConnections:connectionWait:connectTimeout:transactionPooling:)``).
    let transactionPooling: Bool
    /// The server processes of this database's connections, whose notifications its
    /// observers' listener skips (see PostgreSQLListener.swift).
    let backends = BackendRegistry()

    /// A mirror without the connection string (`dump` of a database shows none of it).
    var customMirror: Mirror { Mirror(self, children: ["description": description]) }

    var replicaCount: Int { replicas.count }

    func connect(_ role: ConnectionRole) throws -> any EngineConnection {
        if case .replica(let index) = role {
            let replica = replicas[index]
            // Read-only whatever the database: a replica serves reads (and a standby refuses writes).
            // Not among `backends`: its server is another, whose process ids may be the primary's.
            return try PostgreSQLConnection(
                keywords: replica.keywords, values: replica.values, readOnly: true, description: replica.description, mask: replica.mask,
                transactionPooling: transactionPooling)
        }
        let connection = try PostgreSQLConnection(
            keywords: keywords, values: values, readOnly: readOnly, description: description, mask: mask,
            transactionPooling: transactionPooling)
        connection.backends = backends
        return connection
    }

    /// The keywords and values for `PQconnectdbParams`, in libpq's order of precedence (a later
    /// value wins): the library's defaults for a bounded connection, then the connection
    /// string as `dbname` (expanded: what it says wins over the defaults), then what the
    /// library needs whatever it says.
    ///
    /// The defaults: `connect_timeout` (`connectTimeout`, else 10 s), and TCP keepalives
    /// (`keepalives=1`, first probe after 30 s idle, then every 10 s, 3 unanswered: a dead
    /// peer is noticed in about a minute) and `tcp_user_timeout` (60 s for data the peer does
    /// not acknowledge). A default whose `PG…` environment variable is set (`PGCONNECT_TIMEOUT`)
    /// is left to it, except a `connectTimeout` given; a keyword this libpq does not know is
    /// left out.
    static func connectionParameters(_ connection: String, connectTimeout: Duration?) -> (keywords: [String], values: [String]) {
        var known: [String: String?] = [:]  // keyword: its environment variable
        if let defaults = PQconndefaults() {
            var option = defaults
            while let keyword = option.pointee.keyword {
                known.updateValue(option.pointee.envvar.map { String(cString: $0) }, forKey: String(cString: keyword))
                option += 1
            }
            PQconninfoFree(defaults)
        }
        let seconds = connectTimeout.map { max(1, ($0.limitMilliseconds + 999) / 1000) } ?? 10
        let defaults: [(String, String)] = [
            ("connect_timeout", String(seconds)),
            ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
            ("tcp_user_timeout", "60000"),
        ]
        var keywords: [String] = [], values: [String] = []
        for (keyword, value) in defaults {
            guard let variable = known[keyword] else { continue }
            let setInEnvironment = variable.flatMap { ProcessInfo.processInfo.environment[$0] }.map { !$0.isEmpty } ?? false
            if setInEnvironment && !(keyword == "connect_timeout" && connectTimeout != nil) { continue }
            keywords.append(keyword)
            values.append(value)
        }
        keywords += ["dbname", "client_encoding", "fallback_application_name"]
        values += [connection, "UTF8", "activerecord"]
        return (keywords, values)
    }

    /// `postgresql://user@host:port/database` for a connection string, without its password
    /// (for messages and ``Database/path``).
    /// - Throws: `.configuration` when libpq cannot read the string, or it holds a NUL byte
    ///   (libpq would stop reading there, and connect elsewhere than written); libpq's reason
    ///   with the passwords masked.
    static func describe(_ conninfo: String, mask: PasswordMask) throws -> String {
        let values = try options(conninfo, mask: mask)
        let user = values["user"].map { $0 + "@" } ?? ""
        let host = values["host"] ?? values["hostaddr"] ?? "localhost"
        let port = values["port"].map { ":" + $0 } ?? ""
        let database = values["dbname"].map { "/" + $0 } ?? ""
        return mask.mask("postgresql://\(user)\(host)\(port)\(database)")
    }

    /// The database a connection string names (`dbname`, in either form), for tracing; `nil`
    /// when it names none (libpq's default, the user's name) or cannot be read.
    static func databaseName(_ conninfo: String, mask: PasswordMask) -> String? {
        (try? options(conninfo, mask: mask))?["dbname"]
    }

    /// The options a connection string sets, as libpq reads them, each value masked when it
    /// touches a password.
    private static func options(_ conninfo: String, mask: PasswordMask) throws -> [String: String] {
        guard !conninfo.utf8.contains(0) else {
            throw ActiveRecordError(
                .configuration,
                "the PostgreSQL connection string holds a NUL byte, where libpq would stop reading it (and connect "
                    + "elsewhere than written); remove it")
        }
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            let reason = message.map { mask.mask(String(cString: $0).trimmingTrailingNewlines) } ?? "out of memory"
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
        // Each value masked when it touches a password: a URL libpq misreads (an unencoded
        // `/` or `@` in the password) puts part of the password in the host, port or database.
        return values.mapValues(mask.maskToken)
    }
}

/// ``PostgreSQLEngine/connectionParameters(_:connectTimeout:)``, for the tests.
package func postgreSQLConnectionParameters(_ connection: String, connectTimeout: Duration?) -> (keywords: [String], values: [String]) {
    PostgreSQLEngine.connectionParameters(connection, connectTimeout: connectTimeout)
}
