// What UsingItInAServer.md's blocks take as given: the example server's two models and a handle.

let db = try! Database(.inMemory)
final class Author: Model, Validating {
    @Column var name: String = ""
    @Column var email: String = ""
    @HasMany(dependency: .destroy) var posts: Query<Post>
    static let validations = Validations(for: Author.self) { $0.presence(\.name) }
}
final class Post: Model {
    @Column var title: String = ""
    @Column var score: Int = 0
    @Column var published: Bool = false
    @BelongsTo var author: Author?
}
struct NotFound: Error {}
struct PostInput: Sendable { let title: String; let score: Int }
let id: Int64 = 1
nonisolated(unsafe) let created = Author()
