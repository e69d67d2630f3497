// What Queries.md's "SQL with interpolation" and "Models from raw SQL" blocks take as given.

let db = try! Database(.inMemory)
final class Player: Model {
    @Column var name: String = ""
    @Column var score: Int = 0
    @Column var team: String? = nil
}
let minimum = 30
let searchField = "x'; DROP TABLE \"Player\"; --"
let sortColumn = "score"
