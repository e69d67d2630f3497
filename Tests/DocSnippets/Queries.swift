// What Queries.md's blocks take as given: GettingStarted's User, in a group; a bookmark.

final class User: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @Column var avatar: Data? = nil
    @Column var groupId: Int64? = nil
}
final class Group: Model {
    @Column var title: String = ""
}
final class Bookmark: Model {
    @Column var title: String = ""
    @Column var visits: Int = 0
}
let searchField = "swift"
