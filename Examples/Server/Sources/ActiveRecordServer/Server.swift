import ActiveRecord
import ActiveRecordPostgreSQL
import Foundation
import Hummingbird
import Logging

/// The example server: opens the database (one `Database` value, the handle every route is
/// given: nothing is configured process-wide), seeds it if asked, and serves the API.
@main
struct Server {
    static func main() async {
        let options: Options
        do {
            options = try Options(Array(CommandLine.arguments.dropFirst()))
        } catch let error as OptionError {
            if let message = error.message { FileHandle.standardError.write(Data("ActiveRecordServer: \(message)\n".utf8)) }
            FileHandle.standardError.write(Data((Options.usage + "\n").utf8))
            exit(error.message == nil ? 0 : 2)
        } catch {
            exit(2)
        }
        do {
            try await run(options)
        } catch {
            FileHandle.standardError.write(Data("ActiveRecordServer: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: Options) async throws {
        let db = try Database(options.isPostgreSQL ? .postgres(options.database, maximumConnections: options.pool) : .file(options.database))
        db.awaitedFinds = options.awaitedFinds
        if options.seed > 0 { try await seed(db, authors: options.seed) }

        let router = Router()
        router.add(middleware: JSONErrorMiddleware())
        router.get("health") { _, _ in jsonResponse(["status": "ok"]) }
        AuthorRoutes(db: db).add(to: router)
        PostRoutes(db: db).add(to: router)

        var logger = Logger(label: "ActiveRecordServer")
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .notice
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: nil),
            onServerRunning: { channel in
                // The port actually bound (`--port 0` asks for a free one), for scripts to read.
                let port = channel.localAddress?.port ?? options.port
                FileHandle.standardOutput.write(
                    Data("listening on http://\(options.host):\(port) (\(db.location); awaited finds \(db.awaitedFinds))\n".utf8))
            },
            logger: logger)
        try await app.runService()      // until SIGINT or SIGTERM, then a graceful shutdown
    }

    /// `authors` authors with 10 posts each, in one transaction.
    static func seed(_ db: Database, authors: Int) async throws {
        try await db.write {
            let first = try Author.count()
            for number in first..<first + authors {
                let author = try Author.create(["name": "Author \(number)", "email": "author\(number)@seed.example"])
                try Post.insertAll((0..<10).map { index in
                    let post = Post()
                    post.$author.id = author.id
                    post.title = "Post \(index) of author \(number)"
                    post.body = "Seeded."
                    post.score = (number * 10 + index) % 1001
                    post.published = index % 2 == 0
                    return post
                })
            }
        }
    }
}
