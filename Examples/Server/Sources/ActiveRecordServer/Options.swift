import ActiveRecord
import Foundation

/// The command line: `--host`, `--port`, `--database`, `--seed`, `--pool`, `--awaited-finds`.
struct Options {
    var host = "127.0.0.1"
    var port = 8080
    /// A SQLite file's path, or a `postgresql://` (or `postgres://`) URL.
    var database = "./server.sqlite"
    /// Authors to create at start, each with 10 posts (for benchmarks).
    var seed = 0
    /// PostgreSQL connections (and so database threads): by default twice the cores, since the
    /// server and PostgreSQL share them; more only queue inside PostgreSQL.
    var pool = 2 * ProcessInfo.processInfo.activeProcessorCount
    /// Where awaited finds by id run (`Database.awaitedFinds`): `automatic` by default, or the
    /// environment's `AWAITED_FINDS` (for benchmarks comparing them).
    var awaitedFinds: AwaitedFindPolicy = .automatic

    static let usage = """
        usage: ActiveRecordServer [--host 127.0.0.1] [--port 8080] [--database ./server.sqlite | postgresql://…] [--seed N] [--pool N]
                                [--awaited-finds automatic|onCallingThread|onExecutor]
          --port 0 picks a free port; the first line printed says which ("listening on http://HOST:PORT").
        """

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        if let policy = ProcessInfo.processInfo.environment["AWAITED_FINDS"] {
            awaitedFinds = try Self.policy(policy, from: "AWAITED_FINDS")
        }
        func value(_ flag: String) throws -> String {
            guard let value = rest.popFirst() else { throw OptionError("\(flag) needs a value") }
            return value
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--host": host = try value(flag)
            case "--port":
                let text = try value(flag)
                guard let port = Int(text), (0...65535).contains(port) else { throw OptionError("--port must be 0...65535, not \(text)") }
                self.port = port
            case "--database": database = try value(flag)
            case "--seed":
                let text = try value(flag)
                guard let seed = Int(text), seed >= 0 else { throw OptionError("--seed must be a number of authors, not \(text)") }
                self.seed = seed
            case "--pool":
                let text = try value(flag)
                guard let pool = Int(text), (1...1000).contains(pool) else { throw OptionError("--pool must be 1...1000 connections, not \(text)") }
                self.pool = pool
            case "--awaited-finds": awaitedFinds = try Self.policy(try value(flag), from: flag)
            case "--help", "-h": throw OptionError(nil)
            default: throw OptionError("unknown option \(flag)")
            }
        }
    }

    /// The policy named `name` (its Swift case name), else an error naming `source`.
    private static func policy(_ name: String, from source: String) throws -> AwaitedFindPolicy {
        guard let policy = AwaitedFindPolicy.allCases.first(where: { $0.description == name }) else {
            throw OptionError("\(source) must be automatic, onCallingThread or onExecutor, not \(name)")
        }
        return policy
    }

    /// Whether `database` names a PostgreSQL server.
    var isPostgreSQL: Bool { database.hasPrefix("postgresql://") || database.hasPrefix("postgres://") }
}

/// A command line the server cannot run with; `nil`: only the usage is asked for.
struct OptionError: Error {
    let message: String?
    init(_ message: String?) { self.message = message }
}
