import ActiveRecord
import Foundation
import Testing

/// A record for the header tests: the header (`id`, `createdAt`, `updatedAt`) and two columns.
final class HeaderReadRecord: Model {
    @Column var name: String = ""
    @Column var rank: Int = 0
}

/// The header of each record of a result of several rows, which PostgreSQL reads a column at a
/// time (each timestamp column for every row, then the next): `NULL` timestamps in any row,
/// in either column, read as `nil`, every other row's as saved, whatever the mix; the same on
/// SQLite (read through its cells).
@Suite("Reading the header of several rows")
struct HeaderColumnReadingTests {
    /// Seven records, saved one second apart in their timestamps.
    private func saveSeven() throws -> [HeaderReadRecord] {
        try (1...7).map { number in
            let record = HeaderReadRecord()
            record.name = "row \(number)"
            record.rank = number
            try record.save()
            return record
        }
    }

    @Test(arguments: TestEngine.all) func nullTimestampsInAnyRowReadAsNil(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let saved = try saveSeven()
            #expect(saved.allSatisfy { $0.createdAt != nil && $0.updatedAt != nil })
            // createdAt NULL in rows 2 and 7 (the last), updatedAt in 1 (the first) and 2, neither in the others.
            try db.execute(#"UPDATE "HeaderReadRecord" SET "createdAt" = NULL WHERE "id" IN (2, 7)"#)
            try db.execute(#"UPDATE "HeaderReadRecord" SET "updatedAt" = NULL WHERE "id" IN (1, 2)"#)
            for _ in 0..<2 {
                let read = try HeaderReadRecord.query().order(by: "id").fetch()
                #expect(read.compactMap(\.id) == saved.compactMap(\.id))
                for (got, want) in zip(read, saved) {
                    let id = want.id ?? 0
                    #expect(got.createdAt == ([2, 7].contains(id) ? nil : want.createdAt), "row \(id) createdAt")
                    #expect(got.updatedAt == ([1, 2].contains(id) ? nil : want.updatedAt), "row \(id) updatedAt")
                    #expect(got.name == want.name && got.rank == want.rank && !got.hasChanges)
                    // The single-row read (find) agrees.
                    let found = try HeaderReadRecord.find(id)
                    #expect(found?.createdAt == got.createdAt && found?.updatedAt == got.updatedAt)
                }
                // A narrower result (two rows, both with a NULL) reads the same.
                let pair = try HeaderReadRecord.query().where("rank", .lessThanOrEqual(2)).order(by: "id").fetch()
                #expect(pair.map(\.createdAt) == [saved[0].createdAt, nil])
                #expect(pair.map(\.updatedAt) == [nil, nil])
            }
        }
    }

    @Test(arguments: TestEngine.all) func everyTimestampNullOrNoneNull(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let saved = try saveSeven()
            let read = try HeaderReadRecord.query().order(by: "id", ascending: false).fetch()
            #expect(read.map(\.createdAt) == saved.reversed().map(\.createdAt))
            #expect(read.map(\.updatedAt) == saved.reversed().map(\.updatedAt))
            try db.execute(#"UPDATE "HeaderReadRecord" SET "createdAt" = NULL, "updatedAt" = NULL"#)
            let cleared = try HeaderReadRecord.query().order(by: "id").fetch()
            #expect(cleared.count == 7)
            #expect(cleared.allSatisfy { $0.createdAt == nil && $0.updatedAt == nil })
            #expect(cleared.map(\.name) == saved.map(\.name))
        }
    }
}
