import ActiveRecord
import Foundation

// What the API answers: plain Sendable values made from records where the records are (in
// the database's closure), so that only values cross from the database's thread back to
// the handler's task.

/// An author as JSON; `posts` only where the route includes them (GET /authors/:id).
struct AuthorJSON: Encodable, Sendable {
    var id: Int64
    var name: String
    var email: String
    var createdAt: String
    var posts: [PostJSON]?

    enum CodingKeys: String, CodingKey {
        case id, name, email, posts
        case createdAt = "created_at"
    }

    init(_ author: Author, posts: [Post]? = nil) {
        id = author.id ?? 0
        name = author.name
        email = author.email
        createdAt = iso8601(author.createdAt)
        self.posts = posts.map { $0.sorted { ($0.id ?? 0) < ($1.id ?? 0) }.map(PostJSON.init) }
    }
}

/// A post as JSON.
struct PostJSON: Encodable, Sendable {
    var id: Int64
    var authorId: Int64
    var title: String
    var body: String
    var score: Int
    var published: Bool
    var createdAt: String

    enum CodingKeys: String, CodingKey {
        case id, title, body, score, published
        case authorId = "author_id"
        case createdAt = "created_at"
    }

    init(_ post: Post) {
        id = post.id ?? 0
        authorId = post.$author.id ?? 0
        title = post.title
        body = post.body
        score = post.score
        published = post.published
        createdAt = iso8601(post.createdAt)
    }
}

/// A page of a list.
struct PageJSON<Item: Encodable & Sendable>: Encodable, Sendable {
    var items: [Item]
    var page: Int
    var per: Int
    var total: Int
}

/// ISO 8601 with seconds, in UTC: "2026-11-26T10:00:00Z".
func iso8601(_ date: Date?) -> String {
    (date ?? Date(timeIntervalSince1970: 0)).formatted(.iso8601)
}
