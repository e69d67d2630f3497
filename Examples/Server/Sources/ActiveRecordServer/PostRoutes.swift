import ActiveRecord
import Hummingbird

/// The fields a post takes from JSON (POST and PATCH /posts, the posts of /authors/with-posts).
struct PostInput: Sendable {
    static let fields: Set<String> = ["title", "body", "score", "published"]

    var title: String?
    var body: String?
    var score: Int?
    var published: Bool?

    init(_ object: JSONObject) throws {
        title = try object.string("title")
        body = try object.string("body")
        score = try object.integer("score")
        published = try object.bool("published")
    }

    /// Sets what was given.
    func apply(to post: Post) {
        if let title { post.title = title }
        if let body { post.body = body }
        if let score { post.score = score }
        if let published { post.published = published }
    }
}

/// /posts: the routes of posts, on one database handle.
struct PostRoutes {
    let db: Database

    func add(to router: Router<BasicRequestContext>) {
        router.get("posts", use: list)
        router.post("posts", use: create)
        router.get("posts/:id", use: show)
        router.patch("posts/:id", use: update)
        router.delete("posts/:id", use: destroy)
    }

    /// GET /posts?page&per&author_id&published&min_score: a page of posts in id order.
    @Sendable func list(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let parameters = ListParameters(request)
        let (page, per, offset) = try parameters.paging()
        let authorId = try parameters.id("author_id")
        let published = try parameters.bool("published")
        let minScore = try parameters.integer("min_score", in: Int(Int32.min)...Int(Int32.max))
        let (posts, total) = try await db.read {      // one snapshot, as for authors
            var query = Post.query()
            if let authorId { query = query.where(\.$author.id == authorId) }
            if let published { query = query.where(\.published == published) }
            if let minScore { query = query.where(\.score >= minScore) }
            return (try query.order(by: "id").offset(offset).limit(per).fetch(), try query.count())
        }
        let result = PageJSON(items: posts.map(PostJSON.init), page: page, per: per, total: total)
        return jsonResponse(result)
    }

    /// GET /posts/:id.
    @Sendable func show(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        guard let post = try await Post.find(id, on: db) else { throw APIError.notFound("post", id) }
        return jsonResponse(PostJSON(post))
    }

    /// POST /posts {author_id, title, body?, score?, published?}.
    @Sendable func create(_ request: Request, context: BasicRequestContext) async throws -> Response {
        var request = request
        let object = try await request.jsonObject(allowed: PostInput.fields.union(["author_id"]))
        let authorId = try object.id("author_id")
        let input = try PostInput(object)
        let post = Post()
        post.$author.id = authorId
        input.apply(to: post)
        try await post.save(on: db)       // validates, the author's existence too, on the database's thread
        let created = PostJSON(post)
        return jsonResponse(created, status: .created)
    }

    /// PATCH /posts/:id {title?, body?, score?, published?}.
    @Sendable func update(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        var request = request
        let input = try await PostInput(request.jsonObject(allowed: PostInput.fields))
        guard let post = try await Post.find(id, on: db) else { throw APIError.notFound("post", id) }
        input.apply(to: post)
        try await post.save(on: db)
        let updated = PostJSON(post)
        return jsonResponse(updated)
    }

    /// DELETE /posts/:id.
    @Sendable func destroy(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        guard try await Post.delete(id: id, on: db) else { throw APIError.notFound("post", id) }   // one DELETE
        return Response(status: .noContent)
    }
}
