// What Relations.md's has-one, children's-values, owners-by-children and scoped-relation blocks
// take as given (`<!-- snippet: prelude Associations -->`): groups of users with ages and profiles.

final class Group: Model {
    @Column var title: String = ""
    @HasMany(dependency: .nullify) var users: Query<User>
    @HasMany(scope: { $0.where(\.age >= 18).order(by: \.name) }) var adults: Query<User>
}
final class User: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @BelongsTo var group: Group?
    @HasOne(dependency: .destroy) var profile: Profile?
}
final class Profile: Model {
    @Column var bio: String = ""
    @BelongsTo var user: User?
}
nonisolated(unsafe) let students = Group()
nonisolated(unsafe) let john = User()
