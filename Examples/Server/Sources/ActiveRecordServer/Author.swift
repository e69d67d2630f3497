import ActiveRecord

/// An author: a name, a unique email, and posts that go with it when it is destroyed.
final class Author: Model, Validating {
    @Column var name: String = ""
    @Column var email: String = ""
    @HasMany(dependency: .destroy) var posts: Query<Post>     // Post.authorId = Author.id

    static let validations = Validations(for: Author.self) {
        $0.presence(\.name)
        $0.length(\.name, max: 100)
        $0.presence(\.email)
        // Checked only when there is an email: a missing one is "can't be blank" alone.
        $0.validate(\.email, key: "invalid_format", message: "is invalid") { email in
            email.isEmpty || email.wholeMatch(of: /[^@\s]+@[^@\s]+/) != nil
        }
        $0.uniqueness(\.email, index: true)     // a UNIQUE index too: two racing creates cannot both win
    }
}
