// What the JSON columns and Pagination sections of Queries.md take as given: an account with
// JSON settings, and a cursor a client sent back.

struct Settings: Codable, ColumnValue {
    var theme = "light"
    var rank = 0
    var notifications: [String: Bool] = [:]
}
final class Account: Model {
    @Column var name: String = ""
    @Column var age: Int = 0
    @Column var settings: Settings = Settings()
}
let cursorFromClient: PageCursor? = nil
let tokenFromClient: String? = nil
