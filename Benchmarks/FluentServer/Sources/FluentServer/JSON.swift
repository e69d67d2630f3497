import Foundation
import Hummingbird

// What goes out: snake_case keys, dates ISO 8601 to the second (the context's encoder).

struct AuthorJSON: ResponseEncodable {
    let id: Int
    let name: String
    let email: String
    let createdAt: Date
    /// Only GET /authors/:id and POST /authors/with-posts carry it.
    let posts: [PostJSON]?

    enum CodingKeys: String, CodingKey {
        case id, name, email, createdAt = "created_at", posts
    }

    init(_ author: Author, posts: [Post]? = nil) {
        id = author.id!
        name = author.name
        email = author.email
        createdAt = author.createdAt ?? Date(timeIntervalSince1970: 0)
        self.posts = posts?.sorted { $0.id! < $1.id! }.map(PostJSON.init)
    }
}

struct PostJSON: ResponseEncodable {
    let id: Int
    let authorID: Int
    let title: String
    let body: String
    let score: Int
    let published: Bool
    let createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id, authorID = "author_id", title, body, score, published, createdAt = "created_at"
    }

    init(_ post: Post) {
        id = post.id!
        authorID = post.$author.id
        title = post.title
        body = post.body
        score = post.score
        published = post.published
        createdAt = post.createdAt ?? Date(timeIntervalSince1970: 0)
    }
}

struct ListJSON<Item: Encodable & Sendable>: ResponseEncodable {
    let items: [Item]
    let page: Int
    let per: Int
    let total: Int
}

struct StatusJSON: ResponseEncodable {
    let status: String
}

struct ErrorJSON: Encodable {
    let error: String
    let errors: [String: [String]]?
}

// What comes in: every field optional (a missing required one is a validation failure,
// 422), unknown fields rejected (400), wrong types rejected by the decoder (400).

struct AnyKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Thrown from a decoder when the body names a field the route does not know.
struct UnknownField: Error {
    let name: String
}

extension Decoder {
    /// A keyed container over the body's object, after checking that it names only `known` fields.
    func fields(_ known: Set<String>, prefix: String = "") throws -> KeyedDecodingContainer<AnyKey> {
        let container = try container(keyedBy: AnyKey.self)
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw UnknownField(name: prefix + key.stringValue)
        }
        return container
    }
}

extension KeyedDecodingContainer<AnyKey> {
    func optional<T: Decodable>(_ key: String, as type: T.Type = T.self) throws -> T? {
        try decodeIfPresent(T.self, forKey: AnyKey(stringValue: key))
    }
}

struct AuthorInput: Decodable {
    var name: String?
    var email: String?

    init(from decoder: any Decoder) throws {
        let c = try decoder.fields(["name", "email"])
        name = try c.optional("name")
        email = try c.optional("email")
    }
}

struct PostInput: Decodable {
    var authorID: Int?
    var title: String?
    var body: String?
    var score: Int?
    var published: Bool?

    init(from decoder: any Decoder) throws {
        let c = try decoder.fields(["author_id", "title", "body", "score", "published"])
        authorID = try c.optional("author_id")
        title = try c.optional("title")
        body = try c.optional("body")
        score = try c.optional("score")
        published = try c.optional("published")
    }
}

/// A post inside POST /authors/with-posts: no author_id (the new author is theirs).
struct NestedPostInput: Decodable {
    var title: String?
    var body: String?
    var score: Int?
    var published: Bool?

    init(from decoder: any Decoder) throws {
        let index = decoder.codingPath.last?.intValue.map { "posts[\($0)]." } ?? "posts[]."
        let c = try decoder.fields(["title", "body", "score", "published"], prefix: index)
        title = try c.optional("title")
        body = try c.optional("body")
        score = try c.optional("score")
        published = try c.optional("published")
    }
}

struct AuthorWithPostsInput: Decodable {
    var name: String?
    var email: String?
    var posts: [NestedPostInput]?

    init(from decoder: any Decoder) throws {
        let c = try decoder.fields(["name", "email", "posts"])
        name = try c.optional("name")
        email = try c.optional("email")
        posts = try c.optional("posts")
    }
}
