import FluentKit
import FluentSQL
import Foundation

/// An author: has many posts, which go with it when it is deleted.
final class Author: Model, @unchecked Sendable {
    static let schema = "authors"

    @ID(custom: .id, generatedBy: .database) var id: Int?
    @Field(key: "name") var name: String
    @Field(key: "email") var email: String
    @Timestamp(key: "created_at", on: .create) var createdAt: Date?
    @Children(for: \.$author) var posts: [Post]

    init() {}

    init(name: String, email: String) {
        self.name = name
        self.email = email
    }
}

/// A post, which belongs to an author.
final class Post: Model, @unchecked Sendable {
    static let schema = "posts"

    @ID(custom: .id, generatedBy: .database) var id: Int?
    @Parent(key: "author_id") var author: Author
    @Field(key: "title") var title: String
    @Field(key: "body") var body: String
    @Field(key: "score") var score: Int
    @Field(key: "published") var published: Bool
    @Timestamp(key: "created_at", on: .create) var createdAt: Date?

    init() {}

    init(authorID: Int, title: String, body: String, score: Int, published: Bool) {
        self.$author.id = authorID
        self.title = title
        self.body = body
        self.score = score
        self.published = published
    }
}

struct CreateAuthors: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(Author.schema)
            .field(.id, .int64, .identifier(auto: true))
            .field("name", .string, .required)
            .field("email", .string, .required)
            .field("created_at", .datetime, .required)
            .unique(on: "email")
            .create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(Author.schema).delete()
    }
}

struct CreatePosts: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(Post.schema)
            .field(.id, .int64, .identifier(auto: true))
            .field("author_id", .int64, .required, .references(Author.schema, .id, onDelete: .cascade))
            .field("title", .string, .required)
            .field("body", .string, .required)
            .field("score", .int64, .required)
            .field("published", .bool, .required)
            .field("created_at", .datetime, .required)
            .create()
        // Fluent's schema builder has no indexes: SQLKit's, for GET /authors/:id's eager load
        // and the author_id filter.
        if let sql = database as? any SQLDatabase {
            try await sql.create(index: "posts_author_id").on(Post.schema).column("author_id").run()
        }
    }

    func revert(on database: any Database) async throws {
        try await database.schema(Post.schema).delete()
    }
}
