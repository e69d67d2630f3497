// The issue-33 service (/work/notes/server-api-33.md, the same routes and JSON as
// Examples/Server) written the way a Fluent user writes it, without Vapor: Hummingbird 2 for
// HTTP, FluentKit's `Databases` set up by hand on NIO's event loops.
//
//   FluentServer [--port 8080] [--host 127.0.0.1] [--database ./server.sqlite | postgresql://...] [--seed N]
import FluentKit
import FluentPostgresDriver
import FluentSQL
import FluentSQLiteDriver
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix

struct Options {
    var port = 8080
    var host = "127.0.0.1"
    var database = "./server.sqlite"
    var seed = 0

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            guard let value = iterator.next() else { Self.usage("\(flag) needs a value") }
            switch flag {
            case "--port": port = Self.integer(value, flag)
            case "--host": host = value
            case "--database": database = value
            case "--seed": seed = Self.integer(value, flag)
            default: Self.usage("unknown option \(flag)")
            }
        }
    }

    static func integer(_ text: String, _ flag: String) -> Int {
        guard let value = Int(text), value >= 0 else { usage("\(flag) needs a number, not \(text)") }
        return value
    }

    static func usage(_ message: String) -> Never {
        FileHandle.standardError.write(Data("FluentServer: \(message)\nusage: FluentServer [--port N] [--host H] [--database PATH|postgresql://...] [--seed N]\n".utf8))
        exit(2)
    }
}

/// postgresql://user[:password]@[host][:port]/database[?host=/socket/dir&port=N], as libpq
/// reads it (postgres-kit's own URL form wants postgres+uds:// for a Unix socket).
func postgresConfiguration(_ text: String) throws -> SQLPostgresConfiguration {
    guard let url = URLComponents(string: text) else { Options.usage("not a URL: \(text)") }
    let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
    let username = url.user ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
    let database = url.path.isEmpty || url.path == "/" ? username : String(url.path.dropFirst())
    let host = query["host"] ?? url.host ?? ""
    let port = query["port"].flatMap(Int.init) ?? url.port ?? 5432
    if host.isEmpty || host.hasPrefix("/") {
        let directory = host.isEmpty ? "/var/run/postgresql" : host
        return SQLPostgresConfiguration(
            unixDomainSocketPath: "\(directory)/.s.PGSQL.\(port)",
            username: username, password: url.password, database: database)
    }
    return SQLPostgresConfiguration(
        hostname: host, port: port, username: username, password: url.password, database: database, tls: .disable)
}

@main
struct FluentServer {
    static func main() async throws {
        let options = Options(CommandLine.arguments)
        var logger = Logger(label: "FluentServer")
        logger.logLevel = .warning

        // One event loop group for HTTP and the database drivers, as hummingbird-fluent does: the
        // process-wide singleton, one loop per core. SQLite's blocking calls run on the singleton
        // thread pool (also one thread per core).
        let eventLoopGroup = MultiThreadedEventLoopGroup.singleton
        let databases = Databases(threadPool: NIOThreadPool.singleton, on: eventLoopGroup)
        let isPostgres = options.database.hasPrefix("postgresql://") || options.database.hasPrefix("postgres://")
        if isPostgres {
            // Pool: 4 connections per event loop, 8 on this 2-core machine. Fluent's pool is per event
            // loop; a request takes a connection of the loop its Database is on. More connections than
            // the server's cores only queue inside PostgreSQL (it runs on the same 2 cores); 4 per loop
            // keeps every loop supplied while one connection waits on the network.
            databases.use(.postgres(configuration: try postgresConfiguration(options.database),
                                    maxConnectionsPerEventLoop: 4, connectionPoolTimeout: .seconds(30)),
                          as: .psql)
        } else {
            // fluent-sqlite-driver opens exactly one connection per event loop (its
            // maxConnectionsPerEventLoop is ignored): two here.
            databases.use(.sqlite(.file(options.database), connectionPoolTimeout: .seconds(30)), as: .sqlite)
        }

        let migrations = Migrations()
        migrations.add(CreateAuthors(), CreatePosts())
        let migrator = Migrator(databases: databases, migrations: migrations, logger: logger, on: eventLoopGroup.any(),
                                migrationLogLevel: .debug)
        try await migrator.setupIfNeeded().get()
        try await migrator.prepareBatch().get()

        if !isPostgres, let sql = databases.database(logger: logger, on: eventLoopGroup.any()) as? any SQLDatabase {
            // The same settings the library's SQLite connections use: WAL (kept in the file) and
            // synchronous=NORMAL (per connection: once on each event loop's connection).
            try await sql.raw("PRAGMA journal_mode=WAL").run()
            for loop in eventLoopGroup.makeIterator() {
                if let db = databases.database(logger: logger, on: loop) as? any SQLDatabase {
                    try await db.raw("PRAGMA synchronous=NORMAL").run()
                }
            }
        }

        if options.seed > 0 {
            try await seed(authors: options.seed, on: databases.database(logger: logger, on: eventLoopGroup.any())!)
        }

        let router = Router(context: AppContext.self)
        router.add(middleware: JSONErrorMiddleware())
        addRoutes(to: router, store: Store(databases: databases, eventLoopGroup: eventLoopGroup))

        let app = Application(
            router: router,
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: nil),
            onServerRunning: { channel in
                print("FluentServer: listening on \(options.host):\(channel.localAddress?.port ?? options.port) (\(isPostgres ? "PostgreSQL" : "SQLite"))")
                fflush(nil)
            },
            eventLoopGroupProvider: .shared(eventLoopGroup),
            logger: logger
        )
        try await app.runService()
        await databases.shutdownAsync()
    }

    /// N authors × 10 posts in one transaction, the same rows as the library's example seeds
    /// (names, emails, titles, bodies, scores), so that both servers answer the same JSON.
    static func seed(authors count: Int, on db: any Database) async throws {
        try await db.transaction { db in
            let first = try await Author.query(on: db).count()
            for number in first..<first + count {
                let author = Author(name: "Author \(number)", email: "author\(number)@seed.example")
                try await author.create(on: db)
                let posts = (0..<10).map { index in
                    Post(authorID: author.id!, title: "Post \(index) of author \(number)", body: "Seeded.",
                         score: (number * 10 + index) % 1001, published: index % 2 == 0)
                }
                try await posts.create(on: db)
            }
        }
    }
}
