import ActiveRecord
import Foundation
import Synchronization
import Testing

/// A model whose records count their `init()`s: a fetch that reads its rows column after
/// column makes each record once, by its own initializer, whatever path the read then takes.
final class ColumnReadRecord: Model {
    static let made = Atomic<Int>(0)

    @Column var name: String = ""
    @Column var count: Int = 0
    @Column var ratio: Double = 0
    @Column var flag: Bool = false
    @Column var note: String? = nil
    @Column var parent: Int64? = nil

    required init() {
        Self.made.add(1, ordering: .relaxed)
        super.init()
    }
}

/// Fetching a result of several rows, which PostgreSQL reads column after column (each column's
/// kind and field type looked at once per result), and the row-by-row read it falls back to
/// when one value is left to the cells. (On SQLite, the same fetches through its cells.)
@Suite("Reading a result column by column", .serialized)
struct ColumnByColumnReadingTests {
    /// Five rows with every column set, some optionals `nil`.
    private func saveFive() throws -> [ColumnReadRecord] {
        try (1...5).map { number in
            let record = ColumnReadRecord()
            record.name = number == 3 ? "Ünïcode row \(number), long enough not to fit inline" : "row \(number)"
            record.count = number * 10
            record.ratio = Double(number) / 4
            record.flag = number.isMultiple(of: 2)
            record.note = number.isMultiple(of: 2) ? nil : "note \(number)"
            record.parent = number == 4 ? nil : Int64(number) * 100
            try record.save()
            return record
        }
    }

    /// `NULL` in the `count` column (declared `NOT NULL`) of row `id`.
    private func setCountNull(inRow id: Int64, _ db: Database, _ engine: TestEngine) throws {
        if engine == .postgres {
            try db.execute(#"ALTER TABLE "ColumnReadRecord" ALTER COLUMN "count" DROP NOT NULL"#)
        } else {
            // SQLite's NOT NULL cannot be dropped in place: a table without it under the same name.
            try db.execute(#"ALTER TABLE "ColumnReadRecord" RENAME TO "ColumnReadRecordOld""#)
            try db.execute(#"CREATE TABLE "ColumnReadRecord" AS SELECT * FROM "ColumnReadRecordOld""#)
        }
        try db.execute(#"UPDATE "ColumnReadRecord" SET "count" = NULL WHERE "id" = ?"#, [.integer(id)])
    }

    private func expectSame(_ read: [ColumnReadRecord], as saved: [ColumnReadRecord], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(read.count == saved.count, sourceLocation: sourceLocation)
        for (got, want) in zip(read, saved) {
            #expect(got.id == want.id && got.createdAt == want.createdAt && got.updatedAt == want.updatedAt, sourceLocation: sourceLocation)
            #expect(got.name == want.name && got.count == want.count && got.ratio == want.ratio, sourceLocation: sourceLocation)
            #expect(got.flag == want.flag && got.note == want.note && got.parent == want.parent, sourceLocation: sourceLocation)
            #expect(!got.hasChanges, sourceLocation: sourceLocation)
        }
    }

    /// Every row's values, header and originals, and each record made once.
    @Test(arguments: TestEngine.all) func everyRowReadOnceEach(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let saved = try saveFive()
            let before = ColumnReadRecord.made.load(ordering: .relaxed)
            let read = try ColumnReadRecord.query().order(by: "id").fetch()
            #expect(ColumnReadRecord.made.load(ordering: .relaxed) - before == 5)
            expectSame(read, as: saved)
            // A changed value of a record read so is tracked as any record's.
            read[1].count = 99
            #expect(read[1].hasChanges && read[1].changes.map(\.column) == ["count"])
        }
    }

    /// A column the engine leaves to the cells (a `bigint` for a `Double`: a conversion): the same
    /// records are read row by row instead, made once each, with the values the cells give.
    @Test(arguments: TestEngine.all) func aColumnLeftToTheCellsIsReadRowByRow(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let saved = try saveFive()
            if engine == .postgres {
                try db.execute(#"ALTER TABLE "ColumnReadRecord" ALTER COLUMN "ratio" DROP DEFAULT"#)
                try db.execute(#"ALTER TABLE "ColumnReadRecord" ALTER COLUMN "ratio" TYPE bigint USING ("id" * 2)"#)
            } else {
                try db.execute(#"UPDATE "ColumnReadRecord" SET "ratio" = "id" * 2"#)
            }
            let before = ColumnReadRecord.made.load(ordering: .relaxed)
            let read = try ColumnReadRecord.query().order(by: "id").fetch()
            #expect(ColumnReadRecord.made.load(ordering: .relaxed) - before == 5)
            #expect(read.map(\.ratio) == saved.map { Double($0.id! * 2) })
            #expect(read.map(\.name) == saved.map(\.name) && read.map(\.parent) == saved.map(\.parent))
            #expect(read.allSatisfy { !$0.hasChanges })
        }
    }

    /// `NULL` in a later row of a column whose type holds none: the error names the column and
    /// that row's id, as the row-by-row read reports it.
    @Test(arguments: TestEngine.all) func aNullInALaterRowNamesThatRow(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let saved = try saveFive()
            let bad = saved[3].id!
            try setCountNull(inRow: bad, db, engine)
            let error = expectError(.typeMismatch) { _ = try ColumnReadRecord.query().order(by: "id").fetch() }
            #expect(error?.message.contains("ColumnReadRecord.count (id \(bad))") == true)
        }
    }

    /// More rows than one pass reads at a time (128): every row's values, each record made
    /// once, and a `NULL` in a later pass named with its row's id.
    @Test(arguments: TestEngine.all) func rowsBeyondOnePass(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let saved = (1...300).map { number in
                let record = ColumnReadRecord()
                record.name = "row \(number)"
                record.count = number
                record.note = number.isMultiple(of: 3) ? nil : "note \(number)"
                return record
            }
            try ColumnReadRecord.insertAll(saved)
            let before = ColumnReadRecord.made.load(ordering: .relaxed)
            let read = try ColumnReadRecord.query().order(by: "id").fetch()
            #expect(ColumnReadRecord.made.load(ordering: .relaxed) - before == 300)
            #expect(read.map(\.count) == Array(1...300) && read.map(\.note) == saved.map(\.note))
            #expect(read.map(\.name) == saved.map(\.name) && read.allSatisfy { !$0.hasChanges })
            let bad = read[259].id!
            try setCountNull(inRow: bad, db, engine)
            let error = expectError(.typeMismatch) { _ = try ColumnReadRecord.query().order(by: "id").fetch() }
            #expect(error?.message.contains("ColumnReadRecord.count (id \(bad))") == true)
        }
    }
}
