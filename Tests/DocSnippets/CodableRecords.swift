// What UsingItInAServer.md's "Records as JSON" blocks take as given: a team and its members.

let db = try! Database(.inMemory)
final class Team: Model {
    @Column var title: String = ""
    @HasMany var members: Query<Member>
}
final class Member: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @Column var role: String = "member"
    @BelongsTo var team: Team?
    // A client sets the name and the age: not the role, not the team (teamId).
    override class var decodableColumns: [String] { ["name", "age"] }
}
let body = Data(#"{"name": "Kim", "age": 28, "role": "admin", "teamId": 7, "id": 99}"#.utf8)
let edit = Data(#"{"age": 29}"#.utf8)
func hash(_ password: String) -> String { String(password.reversed()) }   // a stand-in for a real hash
