// The consumer's own Quickstart: a save and a fetch through the library.
import ActiveRecord
import ActiveRecordPostgreSQL
import CSQLite
import Foundation
import InMemoryTracing
import Metrics
import MetricsTestKit
import Tracing

final class Bookmark: Model {
    @Column var title: String = ""
    @Column var url: String = ""
}

// Once per process, before the database opens.
let metrics = TestMetrics()
let tracer = InMemoryTracer()
MetricsSystem.bootstrap(metrics)
InstrumentationSystem.bootstrap(tracer)

do {
    let database = try Database(.inMemory)
    try database.use {
        let bookmark = Bookmark()
        bookmark.title = "Swift"
        bookmark.url = "https://swift.org"
        try bookmark.save()
        let found = try Bookmark.find(bookmark.id!)
        print("saved and fetched: \(found?.title ?? "nothing") \(found?.url ?? "") (CSQLite says \(consumer_sqlite_marker()))")
        // Two selects timed: automatic migration's look at the table, then the find.
        let selects = metrics.timers(label: "activerecord_query_duration").filter { $0.dimensions.contains { $0 == ("operation", "select") } }
        let spans = tracer.finishedSpans.map(\.operationName).filter { $0.hasSuffix("Bookmark") }
        print("timed selects: \(selects.first?.values.count ?? 0), spans: \(spans.joined(separator: ", "))")
    }
    // The PostgreSQL product links: a location, described without connecting.
    print("postgres: \(DatabaseLocation.postgres("postgresql://app@db.example/app").description)")
} catch {
    print("error: \(error)")
    exit(1)
}
