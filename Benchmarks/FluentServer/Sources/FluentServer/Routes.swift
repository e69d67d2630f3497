import FluentKit
import FluentSQL
import Foundation
import Hummingbird
import Logging
import NIOCore

/// The request context: bodies up to 1 MiB, JSON out with ISO 8601 dates.
struct AppContext: RequestContext {
    var coreContext: CoreRequestContextStorage

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    var maxUploadSize: Int { 1 << 20 }
    var responseEncoder: JSONEncoder { responseJSONEncoder }
}

private let responseJSONEncoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    // As the library's example encodes: the same bytes for the same rows.
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
}()

/// Where handlers get a database: the way hummingbird-fluent does it, a `Database` on one of
/// the group's event loops per request (Fluent's pools are per event loop).
struct Store: Sendable {
    let databases: Databases
    let eventLoopGroup: any EventLoopGroup

    func db(_ context: AppContext) -> any Database {
        databases.database(logger: context.logger, on: eventLoopGroup.any())!
    }
}

// MARK: - Input

func readJSON<T: Decodable>(_ type: T.Type, _ request: Request, _ context: AppContext) async throws -> T {
    if let contentType = request.headers[.contentType],
       !contentType.lowercased().hasPrefix("application/json") {
        throw APIError(status: .unsupportedMediaType, message: "the body must be application/json, not \(contentType)")
    }
    var request = request
    let buffer = try await request.collectBody(upTo: context.maxUploadSize)
    do {
        return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
    } catch let error as UnknownField {
        throw APIError.badRequest("unknown field \"\(error.name)\"")
    } catch let error as DecodingError {
        throw APIError.badRequest(describe(error))
    }
}

func pathID(_ context: AppContext) throws -> Int {
    guard let text = context.parameters.get("id"), let id = Int(text), id > 0 else {
        throw APIError.badRequest("the id in the path must be a positive integer")
    }
    return id
}

struct Paging {
    let page: Int
    let per: Int

    init(_ request: Request) throws {
        let query = request.uri.queryParameters
        page = try Self.integer(query.get("page"), "page", default: 1, in: 1...(Int(Int32.max) / 100))
        per = try Self.integer(query.get("per"), "per", default: 20, in: 1...100)
    }

    static func integer(_ text: String?, _ name: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw APIError.badRequest("\(name) must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }
}

/// A failed INSERT or UPDATE that a constraint refused: the race that the checks before it
/// cannot close (two requests taking one email; an author deleted meanwhile).
func constraintFailure(_ error: any Error, field: String, message: String) -> (any Error) {
    if let error = error as? any DatabaseError, error.isConstraintFailure {
        return APIError.invalid([field: [message]])
    }
    return error
}

/// Names are stored trimmed, as the library's example stores them.
func trimmed(_ text: String?) -> String {
    (text ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
}

// MARK: - Routes

func addRoutes(to router: Router<AppContext>, store: Store) {
    router.get("/health") { _, _ in StatusJSON(status: "ok") }

    // Authors

    router.get("/authors") { request, context -> ListJSON<AuthorJSON> in
        let paging = try Paging(request)
        var query = Author.query(on: store.db(context)).sort(\.$id)
        if let prefix = request.uri.queryParameters.get("name") {
            // Case-sensitive prefix, on both engines (LIKE is case-insensitive on SQLite and
            // reads % and _): substr(name, 1, n) = prefix.
            query = query.filter(.sql(SQLBinaryExpression(
                SQLFunction("substr", args: SQLColumn("name"), SQLLiteral.numeric("1"), SQLLiteral.numeric("\(prefix.unicodeScalars.count)")),
                .equal,
                SQLBind(prefix)
            )))
        }
        let page = try await query.paginate(PageRequest(page: paging.page, per: paging.per))
        return ListJSON(items: page.items.map { AuthorJSON($0) }, page: paging.page, per: paging.per, total: page.metadata.total)
    }

    router.get("/authors/:id") { _, context -> AuthorJSON in
        let id = try pathID(context)
        guard let author = try await Author.query(on: store.db(context)).filter(\.$id == id).with(\.$posts).first() else {
            throw APIError.notFound("author \(id) not found")
        }
        return AuthorJSON(author, posts: author.posts)
    }

    router.post("/authors") { request, context -> EditedResponse<AuthorJSON> in
        let input = try await readJSON(AuthorInput.self, request, context)
        let db = store.db(context)
        let author = Author(name: trimmed(input.name), email: input.email ?? "")
        var errors = Errors()
        author.validate(into: &errors)
        try await author.validateUniqueEmail(on: db, into: &errors)
        try errors.throwIfAny()
        do {
            try await author.create(on: db)
        } catch {
            throw constraintFailure(error, field: "email", message: "has already been taken")
        }
        return EditedResponse(status: .created, response: AuthorJSON(author))
    }

    router.patch("/authors/:id") { request, context -> AuthorJSON in
        let id = try pathID(context)
        let input = try await readJSON(AuthorInput.self, request, context)
        let db = store.db(context)
        guard let author = try await Author.find(id, on: db) else { throw APIError.notFound("author \(id) not found") }
        let emailChanges = input.email != nil && input.email != author.email
        if let name = input.name { author.name = trimmed(name) }
        if let email = input.email { author.email = email }
        var errors = Errors()
        author.validate(into: &errors)
        if emailChanges { try await author.validateUniqueEmail(on: db, into: &errors) }
        try errors.throwIfAny()
        do {
            try await author.save(on: db)
        } catch {
            throw constraintFailure(error, field: "email", message: "has already been taken")
        }
        return AuthorJSON(author)
    }

    router.delete("/authors/:id") { _, context -> Response in
        let id = try pathID(context)
        // dependency: destroy — its posts go first, in the same transaction.
        let found = try await store.db(context).transaction { db in
            guard let author = try await Author.find(id, on: db) else { return false }
            try await Post.query(on: db).filter(\.$author.$id == id).delete()
            try await author.delete(on: db)
            return true
        }
        guard found else { throw APIError.notFound("author \(id) not found") }
        return Response(status: .noContent)
    }

    router.post("/authors/with-posts") { request, context -> EditedResponse<AuthorJSON> in
        let input = try await readJSON(AuthorWithPostsInput.self, request, context)
        let db = store.db(context)
        let author = Author(name: trimmed(input.name), email: input.email ?? "")
        var errors = Errors()
        author.validate(into: &errors)
        let posts = (input.posts ?? []).enumerated().map { index, post in
            let model = Post(authorID: 0, title: post.title ?? "", body: post.body ?? "",
                             score: post.score ?? 0, published: post.published ?? false)
            model.validate(into: &errors, prefix: "posts[\(index)].")
            return model
        }
        try await author.validateUniqueEmail(on: db, into: &errors)
        try errors.throwIfAny()
        do {
            try await db.transaction { db in
                try await author.create(on: db)
                for post in posts {
                    post.$author.id = author.id!
                    try await post.create(on: db)
                }
            }
        } catch {
            throw constraintFailure(error, field: "email", message: "has already been taken")
        }
        return EditedResponse(status: .created, response: AuthorJSON(author, posts: posts))
    }

    // Posts

    router.get("/posts") { request, context -> ListJSON<PostJSON> in
        let paging = try Paging(request)
        let parameters = request.uri.queryParameters
        var query = Post.query(on: store.db(context)).sort(\.$id)
        if let text = parameters.get("author_id") {
            guard let authorID = Int(text) else { throw APIError.badRequest("author_id must be an integer") }
            query = query.filter(\.$author.$id == authorID)
        }
        if let text = parameters.get("published") {
            guard let published = Bool(text) else { throw APIError.badRequest("published must be true or false") }
            query = query.filter(\.$published == published)
        }
        if let text = parameters.get("min_score") {
            guard let minScore = Int(text) else { throw APIError.badRequest("min_score must be an integer") }
            query = query.filter(\.$score >= minScore)
        }
        let page = try await query.paginate(PageRequest(page: paging.page, per: paging.per))
        return ListJSON(items: page.items.map(PostJSON.init), page: paging.page, per: paging.per, total: page.metadata.total)
    }

    router.get("/posts/:id") { _, context -> PostJSON in
        let id = try pathID(context)
        guard let post = try await Post.find(id, on: store.db(context)) else { throw APIError.notFound("post \(id) not found") }
        return PostJSON(post)
    }

    router.post("/posts") { request, context -> EditedResponse<PostJSON> in
        let input = try await readJSON(PostInput.self, request, context)
        let db = store.db(context)
        let post = Post(authorID: input.authorID ?? 0, title: input.title ?? "", body: input.body ?? "",
                        score: input.score ?? 0, published: input.published ?? false)
        var errors = Errors()
        if let authorID = input.authorID {
            if try await Author.find(authorID, on: db) == nil { errors.add("author_id", "does not exist") }
        } else {
            errors.add("author_id", "can't be blank")
        }
        post.validate(into: &errors)
        try errors.throwIfAny()
        do {
            try await post.create(on: db)
        } catch {
            throw constraintFailure(error, field: "author_id", message: "does not exist")
        }
        return EditedResponse(status: .created, response: PostJSON(post))
    }

    router.patch("/posts/:id") { request, context -> PostJSON in
        let id = try pathID(context)
        let input = try await readJSON(PostInput.self, request, context)
        if input.authorID != nil { throw APIError.badRequest("unknown field \"author_id\"") }
        let db = store.db(context)
        guard let post = try await Post.find(id, on: db) else { throw APIError.notFound("post \(id) not found") }
        if let title = input.title { post.title = title }
        if let body = input.body { post.body = body }
        if let score = input.score { post.score = score }
        if let published = input.published { post.published = published }
        var errors = Errors()
        post.validate(into: &errors)
        try errors.throwIfAny()
        try await post.save(on: db)
        return PostJSON(post)
    }

    router.delete("/posts/:id") { _, context -> Response in
        let id = try pathID(context)
        let db = store.db(context)
        guard let post = try await Post.find(id, on: db) else { throw APIError.notFound("post \(id) not found") }
        try await post.delete(on: db)
        return Response(status: .noContent)
    }
}
