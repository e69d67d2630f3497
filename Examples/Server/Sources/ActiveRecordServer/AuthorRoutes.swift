import ActiveRecord
import Foundation
import Hummingbird

/// /authors: the routes of authors, on one database handle.
struct AuthorRoutes {
    let db: Database

    func add(to router: Router<BasicRequestContext>) {
        router.get("authors", use: list)
        router.post("authors", use: create)
        router.post("authors/with-posts", use: createWithPosts)
        router.get("authors/:id", use: show)
        router.patch("authors/:id", use: update)
        router.delete("authors/:id", use: destroy)
    }

    /// GET /authors?page&per&name: a page of authors in id order; `name` is a case-sensitive prefix.
    @Sendable func list(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let parameters = ListParameters(request)
        let (page, per, offset) = try parameters.paging()
        let prefix = try parameters.value("name").map(String.init) ?? ""
        // The page and the total from one snapshot (one read transaction). The records come
        // back to this task (`sending`: they were made in the closure, which holds nothing of
        // this task's) and become JSON here.
        let (authors, total) = try await db.read {
            let query = Self.authors(named: prefix)
            return (try query.order(by: "id").offset(offset).limit(per).fetch(), try query.count())
        }
        let result = PageJSON(items: authors.map { AuthorJSON($0) }, page: page, per: per, total: total)
        return jsonResponse(result)
    }

    /// The authors whose name starts with `prefix` (all of them for "").
    static func authors(named prefix: String) -> Query<Author> {
        guard !prefix.isEmpty else { return Author.query() }
        // Case-sensitive: the names from the prefix up to the prefix and the highest scalar,
        // which where text compares by bytes (SQLite; PostgreSQL in the C collation) are
        // exactly the names that start with it. hasPrefix (ASCII case ignored, as LIKE in
        // SQLite) keeps other collations to the prefix's case variants.
        return Author.query().where(\.name >= prefix).where(\.name < prefix + "\u{10FFFF}").where("name", .hasPrefix(prefix))
    }

    /// GET /authors/:id: the author with its posts, loaded with one more query (`includes`).
    @Sendable func show(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        // Two queries: the author, then the posts of it (`includes`), on a reader.
        guard let author = try await Author.query().where("id", .equal(id)).includes(\.posts).first(on: db) else {
            throw APIError.notFound("author", id)
        }
        let shown = AuthorJSON(author, posts: try author.posts.fetch())    // no SQL: loaded already
        return jsonResponse(shown)
    }

    /// POST /authors {name, email}.
    @Sendable func create(_ request: Request, context: BasicRequestContext) async throws -> Response {
        var request = request
        let input = try await request.jsonObject(allowed: ["name", "email"])
        let name = try input.string("name"), email = try input.string("email")
        let author = Author()
        author.name = name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        author.email = email ?? ""
        try await author.save(on: db)     // the record goes to the database's thread and comes back
        let created = AuthorJSON(author)
        return jsonResponse(created, status: .created)
    }

    /// PATCH /authors/:id {name?, email?}: changes what is given.
    @Sendable func update(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        var request = request
        let input = try await request.jsonObject(allowed: ["name", "email"])
        let name = try input.string("name"), email = try input.string("email")
        guard let author = try await Author.find(id, on: db) else { throw APIError.notFound("author", id) }
        if let name { author.name = name.trimmingCharacters(in: .whitespacesAndNewlines) }
        if let email { author.email = email }
        try await author.save(on: db)     // only what changed; nothing at all when nothing did
        let updated = AuthorJSON(author)
        return jsonResponse(updated)
    }

    /// DELETE /authors/:id: the author and its posts (the relation's `.destroy` dependency).
    @Sendable func destroy(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        guard let author = try await Author.find(id, on: db) else { throw APIError.notFound("author", id) }
        try await author.destroy(on: db)  // its posts too, in the same transaction
        return Response(status: .noContent)
    }

    /// POST /authors/with-posts {name, email, posts: [{title, body?, score?, published?}]}: the
    /// author and its posts in one transaction. Every record is validated first, so that the
    /// 422 lists every failure ("posts[1].title"); a failure anywhere writes nothing.
    @Sendable func createWithPosts(_ request: Request, context: BasicRequestContext) async throws -> Response {
        var request = request
        let input = try await request.jsonObject(allowed: ["name", "email", "posts"])
        let name = try input.string("name"), email = try input.string("email")
        let posts = try (input.array("posts") ?? []).enumerated().map { index, value in
            try PostInput(JSONObject(value, path: "posts[\(index)]", allowed: PostInput.fields))
        }
        let created = try await db.write {
            let author = Author()
            author.name = name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            author.email = email ?? ""
            var failures = APIError.validation(try author.validate() ? [] : author.errors).fieldErrors ?? [:]
            if failures.isEmpty { try author.save() }
            let records = posts.map { input in
                let post = Post()
                post.$author.id = author.id
                input.apply(to: post)
                return post
            }
            for (index, post) in records.enumerated() where try !post.validate() {
                // The posts' author is the one above: its failures are its own keys.
                let own = post.errors.filter { APIError.jsonName($0.property) != "author_id" }
                failures.merge(APIError.validation(own, prefix: "posts[\(index)].").fieldErrors ?? [:]) { $0 + $1 }
            }
            if !failures.isEmpty { throw APIError(.unprocessableContent, "validation failed", fieldErrors: failures) }
            for post in records { try post.save() }
            return AuthorJSON(author, posts: records)
        }
        return jsonResponse(created, status: .created)
    }
}
