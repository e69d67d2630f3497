import ActiveRecord

/// A post of an author.
final class Post: Model, Validating {
    @BelongsTo var author: Author?          // the column "authorId", a foreign key to Author
    @Column var title: String = ""
    @Column var body: String = ""
    @Column var score: Int = 0
    @Column var published: Bool = false

    static let validations = Validations(for: Post.self) {
        $0.presence(\.$author.id)
        // The author must exist (the foreign key checks it again at commit, against a
        // concurrent delete): runs in the save's transaction, on the database the save uses.
        $0.validate(\.$author.id, key: "does_not_exist", message: "does not exist") { authorId in
            guard let authorId else { return true }
            return try Author.exists(id: authorId)
        }
        $0.presence(\.title)
        $0.length(\.title, max: 200)
        $0.length(\.body, max: 10_000)
        $0.numericality(\.score, onlyInteger: true, in: 0...1000)
    }
}
