// snippet-imports: ActiveRecordPostgreSQL
// What GettingStarted.md's blocks take as given. Its first block declares User.

let path = "app.sqlite"
let migrator = Migrator()
nonisolated(unsafe) let newUsers: [User] = []

final class Tag: Model {
    @Column(index: .unique) var name: String = ""
    @Column var uses: Int = 0
}
nonisolated(unsafe) let tag = Tag()
nonisolated(unsafe) let tags: [Tag] = []

final class Account: Model {
    @Column(index: .unique) var email: String = ""
}
