@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A model whose `day` column PostgreSQL holds as a `date` (altered below): a type the library
/// does not decode from binary, read as text.
final class BulkDay: Model {
    @Column var day: String = ""
}

/// Issue 35, point 4 (second pass): a PostgreSQL cursor reads growing batches (256 rows, then
/// up to 4,096), in binary after the first when its columns allow: every value reads as
/// `fetch()` reads it, across the batches' edges, and columns without a binary decoding stay text.
@Suite("Large results through cursors: binary batches")
struct LargeFetchBinaryTests {
    @Test(arguments: TestEngine.all) func everyTypeReadsAsFetchReadsItAcrossGrowingBatches(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { _ throws in
            // 256 + 1,024 + 4,096 rows: the fourth batch is reached.
            let records = (0..<6_000).map(BulkInsertBinaryTests.everything)
            try Everything.insertAll(records)
            var read: [Everything] = []
            try Everything.query().order(by: "id").forEach { read.append($0) }
            BulkInsertBinaryTests.expectSame(records, read)
            BulkInsertBinaryTests.expectSame(try Everything.query().order(by: "id").fetch(), read)
            // Stopping in the second batch (the first binary one), then reading again.
            let cursor = try Everything.query().order(by: "id").cursor()
            for offset in 0..<300 {
                let record = try #require(try cursor.next())
                #expect(BulkInsertBinaryTests.same(record, records[offset]), "record \(offset)")
            }
            cursor.close()
            #expect(try Everything.query().where("int64 < 0").order(by: "id").count() == records.filter { $0.int64 < 0 }.count)
        }
    }

    @Test(.enabled(if: TestEngine.postgresConnection != nil))
    func aColumnWithoutABinaryDecodingStaysText() throws {
        try withDatabase(.postgres) { db throws in
            _ = try BulkDay.count()
            try db.execute(#"ALTER TABLE "BulkDay" ALTER COLUMN "day" DROP DEFAULT, ALTER COLUMN "day" TYPE DATE USING NULL"#)
            try db.execute(#"""
                INSERT INTO "BulkDay" ("createdAt", "updatedAt", "day") \#
                SELECT 0, 0, DATE '2000-01-01' + i FROM generate_series(0, 5999) AS i
                """#)
            var days: [String] = []
            try BulkDay.query().order(by: "id").forEach { days.append($0.day) }
            #expect(days.count == 6_000 && days.first == "2000-01-01" && days.last == "2016-06-04", "\(days.last ?? "")")
            #expect(days == (try BulkDay.query().order(by: "id").fetch().map(\.day)))
        }
    }
}
