@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 35, point 4 (large results): a cursor reads many rows in constant memory (PostgreSQL:
/// a server-side cursor read a batch at a time), every row in order, and a consumer that stops
/// early leaves the database as usable as before.
@Suite("Large results through cursors")
struct LargeFetchTests {
    static let rowCount = 20_000

    /// `rowCount` items, inserted in bulk.
    static func seed() throws -> [Int64] {
        let items = (0..<rowCount).map(BulkInsertTests.item)
        try BulkItem.insertAll(items)
        return items.compactMap(\.id)
    }

    @Test(arguments: TestEngine.all) func aCursorYieldsEveryRowInOrder(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { _ throws in
            let ids = try Self.seed()
            var seen: [Int64] = []
            var codes = 0
            try BulkItem.query().order(by: "id").forEach { item in
                seen.append(item.id!)
                if item.code == "code \(seen.count - 1)" { codes += 1 }
            }
            #expect(seen == ids && codes == Self.rowCount)
            // The cursor's values are the fetched ones.
            let cursor = try BulkItem.query().where("count < 0").order(by: "id").cursor()
            var fromCursor: [BulkItem] = []
            while let item = try cursor.next() { fromCursor.append(item) }
            BulkInsertTests.expectStored(try BulkItem.query().where("count < 0").order(by: "id").fetch(), fromCursor)
        }
    }

    @Test(arguments: TestEngine.all) func aConsumerThatStopsEarlyLeavesTheDatabaseUsable(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { _ throws in
            let ids = try Self.seed()
            // More early stops than the pool has connections: each gives its connection back.
            for round in 0..<24 {
                let cursor = try BulkItem.query().order(by: "id").cursor()
                for offset in 0..<(round * 37 % 600 + 1) { #expect(try cursor.next()?.id == ids[offset]) }
                cursor.close()
                #expect(try cursor.next() == nil)
            }
            // A cursor dropped without close, and one left by a thrown error.
            do { _ = try BulkItem.query().order(by: "id").cursor().next() }
            struct Stop: Error {}
            #expect(throws: Stop.self) { try BulkItem.query().order(by: "id").forEach { _ in throw Stop() } }
            // Reads and writes go on, inside a transaction too.
            #expect(try BulkItem.count() == Self.rowCount)
            try Database.current.transaction {
                let cursor = try BulkItem.query().order(by: "id").cursor()
                _ = try cursor.next()
                let item = try #require(try cursor.next())
                item.note = "changed while a cursor is open"
                try item.save()
                cursor.close()
                #expect(try BulkItem.query().where("note = %@", "changed while a cursor is open").count() == 1)
            }
            _ = try BulkItem.create(["code": "after"])
            #expect(try BulkItem.count() == Self.rowCount + 1)
        }
    }

    @Test(arguments: TestEngine.all) func anAsyncSequenceOfRecordsStopsCleanly(engine: TestEngine) async throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let ids = try test.database.use { try Self.seed() }
        var seen: [Int64] = []
        for try await item in BulkItem.query().order(by: "id").records(on: test.database, pageSize: 500) { seen.append(item.id!) }
        #expect(seen == ids)
        for _ in 0..<12 {
            var count = 0
            for try await _ in BulkItem.query().order(by: "id").records(on: test.database, pageSize: 64) {
                count += 1
                if count == 100 { break }
            }
            #expect(count == 100)
        }
        #expect(try await BulkItem.query().count(on: test.database) == Self.rowCount)
    }
}
