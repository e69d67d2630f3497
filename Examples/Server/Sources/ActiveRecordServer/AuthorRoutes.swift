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
        let result = try await db.read {
            var query = Author.query()
            if !prefix.isEmpty {
                // Case-sensitive: the names from the prefix up to the prefix and the highest
                // scalar, which where text compares by bytes (SQLite; PostgreSQL in the C
                // collation) are exactly the names that start with it. hasPrefix (ASCII case
                // ignored, as LIKE in SQLite) keeps other collations to the prefix's case variants.
                query = query.where(\.name >= prefix).where(\.name < prefix + "\u{10FFFF}").where("name", .hasPrefix(prefix))
            }
            let total = try query.count()
            let authors = try query.order(by: "id").offset(offset).limit(per).fetch()
            return PageJSON(items: authors.map { AuthorJSON($0) }, page: page, per: per, total: total)
        }
        return jsonResponse(result)
    }

    /// GET /authors/:id: the author with its posts, loaded with one more query (`includes`).
    @Sendable func show(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        let author = try await db.read { () -> AuthorJSON? in
            guard let author = try Author.query().where("id", .equal(id)).includes(\.posts).fetch().first else { return nil }
            return AuthorJSON(author, posts: try author.posts.fetch())    // no SQL: loaded already
        }
        guard let author else { throw APIError.notFound("author", id) }
        return jsonResponse(author)
    }

    /// POST /authors {name, email}.
    @Sendable func create(_ request: Request, context: BasicRequestContext) async throws -> Response {
        var request = request
        let input = try await request.jsonObject(allowed: ["name", "email"])
        let name = try input.string("name"), email = try input.string("email")
        let created = try await db.write {
            let author = Author()
            author.name = name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            author.email = email ?? ""
            try author.save()
            return AuthorJSON(author)
        }
        return jsonResponse(created, status: .created)
    }

    /// PATCH /authors/:id {name?, email?}: changes what is given.
    @Sendable func update(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        var request = request
        let input = try await request.jsonObject(allowed: ["name", "email"])
        let name = try input.string("name"), email = try input.string("email")
        let updated = try await db.write {
            guard let author = try Author.find(id) else { throw APIError.notFound("author", id) }
            if let name { author.name = name.trimmingCharacters(in: .whitespacesAndNewlines) }
            if let email { author.email = email }
            try author.save()
            return AuthorJSON(author)
        }
        return jsonResponse(updated)
    }

    /// DELETE /authors/:id: the author and its posts (the relation's `.destroy` dependency).
    @Sendable func destroy(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.id()
        try await db.write {
            guard let author = try Author.find(id) else { throw APIError.notFound("author", id) }
            try author.destroy()
        }
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
