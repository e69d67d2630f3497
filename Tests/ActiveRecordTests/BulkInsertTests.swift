@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// A row of every kind of value a bulk insert sends.
final class BulkItem: Model {
    @Column(index: .unique) var code: String = ""
    @Column var note: String? = nil
    @Column var count: Int64 = 0
    @Column var ratio: Double = 0
    @Column var bytes: Data = Data()
    @Column var takenAt: Date = Date(timeIntervalSince1970: 0)
    @Column var flag: Bool = false
}

/// Issue 35, point 4: `insertAll` of many rows (PostgreSQL: many rows per `INSERT`, each
/// statement after a savepoint) gives every record its id in order and stores every value as
/// the one-row insert does; a failing row leaves no row and is named; SQLite keeps its
/// one-statement-per-row path, with the same results.
@Suite("insertAll in bulk: ids in order, every value, a failing row named")
struct BulkInsertTests {
    /// Item `n` (from 0): extremes first, then NULLs, empty text, unicode, bytes with zeros.
    static func item(_ n: Int) -> BulkItem {
        let item = BulkItem()
        item.code = "code \(n)"
        switch n % 5 {
        case 0: item.note = nil
        case 1: item.note = ""
        case 2: item.note = "Ünïcødé ✓ 🚀 \(n) — 東京"
        case 3: item.note = "tab\there, newline\nthere, back\\slash, 'quote' \"double\" {brace} (paren), comma"
        default: item.note = String(repeating: "x", count: n % 300)
        }
        let counts: [Int64] = [.min, .max, 0, -1, 1]
        item.count = n < counts.count ? counts[n] : Int64(n) * 7_919 - 1_000_000
        let ratios: [Double] = [.infinity, -.infinity, 0.1, 1e-300, 1.7976931348623157e308, -2.5e-7]
        item.ratio = n < ratios.count ? ratios[n] : Double(n) / 3
        item.bytes = n % 7 == 0 ? Data() : Data([0, UInt8(n & 0xff), 0, 255, UInt8(n >> 8 & 0xff), 0])
        item.takenAt = Date(timeIntervalSince1970: 1_700_000_000.25 + Double(n))
        item.flag = n % 2 == 1
        return item
    }

    static func expectStored(_ items: [BulkItem], _ stored: [BulkItem], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(stored.count == items.count, sourceLocation: sourceLocation)
        var mismatches = 0
        for (item, row) in zip(items, stored) where mismatches < 5 {
            let same = item.id == row.id && item.code == row.code && item.note == row.note && item.count == row.count
                && item.ratio == row.ratio && item.bytes == row.bytes && item.takenAt == row.takenAt && item.flag == row.flag
                && item.createdAt == row.createdAt && item.updatedAt == row.updatedAt
            if !same {
                mismatches += 1
                let stored = "\(row.code) \(String(describing: row.note)) \(row.count) \(row.ratio) \(Array(row.bytes)) \(row.takenAt) \(row.flag)"
                Issue.record("\(item.code): stored \(stored)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test(arguments: TestEngine.all) func tenThousandRowsGetTheirIdsInOrderAndEveryValueRoundTrips(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            _ = try BulkItem.create(["code": "before"])
            let items = (0..<10_050).map(Self.item)
            let recorder = SQLRecorder(db)
            try BulkItem.insertAll(items)
            let inserts = recorder.all.filter { $0.hasPrefix("INSERT") }
            db.trace(nil)
            let ids = items.compactMap(\.id)
            #expect(ids.count == items.count && ids == ids.sorted() && Set(ids).count == ids.count && ids[0] > 1)
            #expect(items.allSatisfy { !$0.isNewRecord && $0.createdAt == items[0].createdAt && $0.updatedAt == items[0].createdAt })
            if engine == .postgres {
                // A binary COPY, after the ids are taken from the sequence (BulkCopyTests).
                #expect(inserts.isEmpty && recorder.all.filter { $0.hasPrefix("COPY") }.count == 1, "\(recorder.all.count) statements")
            } else {
                #expect(inserts.count == 1)  // one prepared statement, run for each row
            }
            let stored = try BulkItem.query().where("code <> %@", "before").order(by: "id").fetch()
            Self.expectStored(items, stored)
            // Nothing changed since the insert: a save writes nothing.
            #expect(items.allSatisfy { !$0.hasChanges })
        }
    }

    @Test(arguments: TestEngine.all) func aFailingRowLeavesNoRowAndTheErrorNamesIt(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let items = (0..<10_000).map(Self.item)
            items[5_000].code = items[9].code  // row 5,001 repeats row 10's unique code
            let error = expectError(.constraint) { try BulkItem.insertAll(items) }
            #expect(error?.isUniqueViolation == true)
            #expect(error?.message.hasPrefix("record 5001 of 10000: ") == true, "\(error?.message ?? "")")
            #expect(try BulkItem.count() == 0)
            #expect(items.allSatisfy { $0.isNewRecord && $0.id == nil })
            // The connection goes on, and the same records insert once the clash is gone.
            items[5_000].code = "code 5000"
            try BulkItem.insertAll(items)
            #expect(try BulkItem.count() == 10_000)
            // A clash with a row already stored, in the last (short) statement.
            let more = (20_000..<21_500).map(Self.item)
            more[1_499].code = "code 3"
            let clash = expectError(.constraint) { try BulkItem.insertAll(more) }
            #expect(clash?.message.hasPrefix("record 1500 of 1500: ") == true, "\(clash?.message ?? "")")
            #expect(try BulkItem.count() == 10_000)
            // -0.0 is refused as everywhere (at binding), NaN too: nothing inserted.
            let negative = (30_000..<33_000).map(Self.item)
            negative[2_500].ratio = -0.0
            _ = expectError(.invalidValue) { try BulkItem.insertAll(negative) }
            negative[2_500].ratio = .nan
            _ = expectError(.invalidValue) { try BulkItem.insertAll(negative) }
            #expect(try BulkItem.count() == 10_000 && negative.allSatisfy(\.isNewRecord))
        }
    }

    @Test(arguments: TestEngine.all) func insideAnOuterTransactionAndASavepoint(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let first = (0..<2_500).map(Self.item)
            let second = (10_000..<12_500).map(Self.item)
            let failing = (20_000..<21_200).map(Self.item)
            failing[1_100].code = "code 5"
            try db.transaction {
                try BulkItem.insertAll(first)
                try db.transaction {
                    try BulkItem.insertAll(second)
                    // A failing batch in a savepoint of its own: the transaction goes on.
                    let error = expectError(.constraint) {
                        try db.transaction { try BulkItem.insertAll(failing) }
                    }
                    #expect(error?.message.hasPrefix("record 1101 of 1200: ") == true, "\(error?.message ?? "")")
                    #expect(try BulkItem.count() == 5_000)
                }
                #expect(try BulkItem.count() == 5_000)
            }
            #expect(try BulkItem.count() == 5_000 && failing.allSatisfy(\.isNewRecord))
            Self.expectStored(first + second, try BulkItem.query().order(by: "id").fetch())
            // Rolled back with the transaction: the records are new again, nothing stored.
            let rolledBack = (40_000..<41_500).map(Self.item)
            _ = try? db.transaction {
                try BulkItem.insertAll(rolledBack)
                throw CancellationError()
            }
            #expect(try rolledBack.allSatisfy(\.isNewRecord) && BulkItem.count() == 5_000)
        }
    }

    @Test(arguments: TestEngine.all) func rowsOverTheParameterLimitOfOneStatement(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            // 120 columns: 546 rows per statement under PostgreSQL's 65,535 parameters.
            let columns = (0..<120).map { ColumnSchema(name: "c\($0)", type: $0 % 3 == 0 ? .text : .integer) }
            let model = DynamicModel(try TableSchema(name: "Wide", columns: columns))
            let records = try (0..<2_000).map { n in
                let record = model.makeRecord()
                for column in 0..<120 where (n + column) % 11 != 0 {
                    try record.set("c\(column)", column % 3 == 0 ? .text("r\(n)c\(column)") : .integer(Int64(n * 1_000 + column)))
                }
                return record
            }
            try model.insertAll(records)
            let ids = records.compactMap(\.id)
            #expect(ids.count == 2_000 && ids == ids.sorted() && Set(ids).count == 2_000)
            let stored = try DynamicQuery(model).order(by: "id").fetch()
            #expect(stored.count == 2_000)
            for (record, row) in zip(records, stored) {
                #expect(record.id == row.id)
                for column in [0, 1, 2, 59, 119] {
                    #expect(try record.value("c\(column)") == row.value("c\(column)"))
                }
            }
        }
    }

    @Test(arguments: TestEngine.all) func asyncInsertAllOfRecordsAndDictionaries(engine: TestEngine) async throws {
        let test = try engine.makeDatabase()
        defer { test.drop() }
        let items = (0..<3_000).map(Self.item)
        try await BulkItem.insertAll(items, on: test.database)
        let made = try await BulkItem.insertAll((0..<1_500).map { ["code": "dictionary \($0)", "count": Int64($0)] }, on: test.database)
        #expect(items.allSatisfy { !$0.isNewRecord } && made.map(\.count) == (0..<1_500).map(Int64.init))
        #expect(made.compactMap(\.id) == made.compactMap(\.id).sorted() && made[0].id! > items.last!.id!)
        let stored = try await BulkItem.query().order(by: "id").fetch(on: test.database)
        Self.expectStored(items, Array(stored.prefix(3_000)))
    }
}

/// The bulk insert behind a transaction pooler's rules (`transactionPooling: true`, straight to
/// the server here): no statement prepared by name, savepoints inside the transaction.
@Suite("insertAll in bulk with transaction pooling", .enabled(if: TestEngine.postgresConnection != nil))
struct BulkInsertPoolingTests {
    @Test func bulkInsertWithUnnamedStatements() throws {
        try withTransactionPoolingDatabase { database in
            let items = (0..<2_500).map(BulkInsertTests.item)
            try BulkItem.insertAll(items)
            BulkInsertTests.expectStored(items, try BulkItem.query().order(by: "id").fetch())
            let failing = (10_000..<12_500).map(BulkInsertTests.item)
            failing[2_222].code = "code 1"
            let error = expectError(.constraint) { try BulkItem.insertAll(failing) }
            #expect(error?.message.hasPrefix("record 2223 of 2500: ") == true, "\(error?.message ?? "")")
            // Under a statement timeout too (its setting goes before the first command).
            try database.withStatementTimeout(.seconds(30)) {
                failing[2_222].code = "code 12222"
                try BulkItem.insertAll(failing)
            }
            #expect(try BulkItem.count() == 5_000)
            let named = try database.rows("SELECT count(*) FROM pg_prepared_statements")
            #expect(named.first?.first == .integer(0))
        }
    }
}
