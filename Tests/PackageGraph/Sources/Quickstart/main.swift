// The consumer's own Quickstart: a save and a fetch through the library.
import ActiveRecord
import CSQLite
import Foundation

final class Bookmark: Model {
    @Column var title: String = ""
    @Column var url: String = ""
}

do {
    let database = try Database(.inMemory)
    try database.use {
        let bookmark = Bookmark()
        bookmark.title = "Swift"
        bookmark.url = "https://swift.org"
        try bookmark.save()
        let found = try Bookmark.find(bookmark.id!)
        print("saved and fetched: \(found?.title ?? "nothing") \(found?.url ?? "") (CSQLite says \(consumer_sqlite_marker()))")
    }
} catch {
    print("error: \(error)")
    exit(1)
}
