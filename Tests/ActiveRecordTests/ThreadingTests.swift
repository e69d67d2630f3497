@_spi(Engines) import ARCore
import ActiveRecord
import Dispatch
import Foundation
import Synchronization
import Testing

@Suite("Threads")
struct ThreadingTests {
    /// 4 threads each save 250 records into one file database while reading
    /// counts; the connection is serialized, so no row is lost and no
    /// "database is locked" surfaces. One thread's transaction holds the
    /// connection until it ends, so the others' saves never run inside it.
    @Test(arguments: TestEngine.all) func concurrentSavesLoseNothing(engine: TestEngine) throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let db = test.database
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                try db.use {
                    for index in 0..<250 {
                        try Item.create(["title": "w\(worker)-\(index)"])
                        if index % 50 == 0 { _ = try Item.count() }
                    }
                    if worker == 0 {
                        try db.transaction {
                            try Item.create(["title": "rolled back"])
                            throw Rollback()
                        }
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        try db.use { () throws in
            #expect(try Item.count() == 1000)
            #expect(try Item.all(where: "title", equals: "rolled back").isEmpty)
        }
    }
}
