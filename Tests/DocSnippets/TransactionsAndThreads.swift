// What TransactionsAndThreads.md's blocks take as given. Its lost-update block declares Account.

let db = try! Database(.inMemory)
final class User: Model {
    @Column var name: String = ""
}
nonisolated(unsafe) let alex = User(), maria = User()
final class Tag: Model {
    @Column var name: String = ""
}
final class Bookmark: Model {
    @Column var url: String = ""
    @Column var tagId: Int64? = nil
    @Column var starred: Bool = false
}
let from: Int64 = 1, to: Int64 = 2
final class Order: Model { @Column var total: Double = 0 }
final class Stock: Model { @Column var count: Int = 0 }
nonisolated(unsafe) let order = Order(), stock = Stock()
func show(_ bookmarks: [Bookmark]) {}
