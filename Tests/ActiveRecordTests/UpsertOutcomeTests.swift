@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A product: its sku is the upsert's conflict column and has a uniqueness validation with
/// an index (the two go together); its barcode is unique too, validated, and never the
/// conflict column.
final class StockItem: Model, Validating {
    @Column var sku: String = ""
    @Column var barcode: String? = nil
    @Column var count: Int = 0
    static let validations = Validations(for: StockItem.self) {
        $0.uniqueness(\.sku, index: true)
        $0.uniqueness(\.barcode, index: true, message: "belongs to another item")
    }
}

/// A row per (shelf, slot), validated unique per shelf: an upsert on both columns.
final class ShelfSlot: Model, Validating {
    @Column var shelf: String = ""
    @Column var slot: Int = 0
    @Column var item: String = ""
    static let validations = Validations(for: ShelfSlot.self) {
        $0.uniqueness(\.slot, scope: ["shelf"])
    }
}

/// Issue 31, point 5: an upsert's uniqueness validation does not refuse the conflict the
/// upsert resolves, and the upsert says whether it inserted or updated.
@Suite("Upsert: uniqueness on the conflict column, and the outcome")
struct UpsertOutcomeTests {
    @Test(arguments: TestEngine.all) func aUniquenessValidationOnTheConflictColumnLetsTheUpsertUpdate(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let first = try StockItem(["sku": "A-1", "count": 1])
            #expect(try first.upsert(onConflict: ["sku"]) == .inserted)
            let again = try StockItem(["sku": "A-1", "count": 5])
            #expect(try again.upsert(onConflict: ["sku"]) == .updated)   // was .validationFailed: "sku already exists"
            #expect(again.id == first.id && again.errors.isEmpty)
            #expect(try StockItem.query().pluck(\.sku, \.count).map { "\($0.0) \($0.1)" } == ["A-1 5"])
            // A plain save of a new record with that sku is still refused by the validation.
            let duplicate = expectError(.validationFailed) { try StockItem(["sku": "A-1"]).save() }
            #expect(duplicate?.validationFailures.map(\.key) == ["already_exists"])
        }
    }

    @Test(arguments: TestEngine.all) func uniquenessOnAnotherColumnStillApplies(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try StockItem(["sku": "A-1", "barcode": "111"]).save()
            try StockItem(["sku": "B-2", "barcode": "222"]).save()
            // The barcode is the conflicting row's own: it passes, the row is updated.
            let same = try StockItem(["sku": "A-1", "barcode": "111", "count": 3])
            #expect(try same.upsert(onConflict: ["sku"]) == .updated)
            // Another row's barcode: refused with the validation's own message, nothing written.
            let stolen = try StockItem(["sku": "A-1", "barcode": "222", "count": 9])
            let error = expectError(.validationFailed) { try stolen.upsert(onConflict: ["sku"]) }
            #expect(error?.validationFailures.map(\.description) == ["barcode belongs to another item"])
            #expect(error?.validationFailures.map(\.key) == ["already_exists"])
            // A new sku with a taken barcode: refused too.
            _ = expectError(.validationFailed) { try StockItem(["sku": "C-3", "barcode": "111"]).upsert(onConflict: ["sku"]) }
            #expect(try StockItem.query().order(by: \.sku).pluck(\.sku, \.count).map { "\($0.0) \($0.1)" } == ["A-1 3", "B-2 0"])
        }
    }

    @Test(arguments: TestEngine.all) func aRowWithNullInTheConflictColumnIsNotTheTarget(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            // Upserting on barcode: a row without a barcode is never the conflicting row, so
            // a sku it holds counts against the upsert.
            try StockItem(["sku": "A-1"]).save()
            let error = expectError(.validationFailed) {
                try StockItem(["sku": "A-1", "barcode": "999"]).upsert(onConflict: ["barcode"])
            }
            #expect(error?.validationFailures.map(\.key) == ["already_exists"])
            #expect(try StockItem.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func aScopedUniquenessOnTheConflictColumnsLetsTheUpsertUpdate(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            #expect(try ShelfSlot.count() == 0)   // the table, made by automatic migration
            try db.execute(#"CREATE UNIQUE INDEX "ShelfSlot_shelf_slot" ON "ShelfSlot" ("shelf", "slot")"#)
            #expect(try ShelfSlot(["shelf": "a", "slot": 1, "item": "tea"]).upsert(onConflict: ["shelf", "slot"]) == .inserted)
            #expect(try ShelfSlot(["shelf": "b", "slot": 1, "item": "jam"]).upsert(onConflict: ["shelf", "slot"]) == .inserted)
            #expect(try ShelfSlot(["shelf": "a", "slot": 1, "item": "rice"]).upsert(onConflict: ["shelf", "slot"]) == .updated)
            #expect(try ShelfSlot.query().order(by: \.shelf).pluck(\.item) == ["rice", "jam"])
        }
    }

    @Test(arguments: TestEngine.all) func upsertAllReturnsEachRecordsOutcomeInOrder(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try StockItem(["sku": "A-1"]).save()
            var outcomes: [UpsertOutcome] = []
            try db.transaction {
                // In one transaction: a row inserted earlier in it, then updated, is .updated.
                try StockItem(["sku": "N-0"]).save()
                let batch = try ["B-2", "A-1", "B-2", "N-0"].map { try StockItem(["sku": $0]) }
                outcomes = try StockItem.upsertAll(batch, onConflict: ["sku"])
            }
            // The second B-2 finds the row the first inserted.
            #expect(outcomes == [.inserted, .updated, .updated, .updated])
            #expect(try StockItem.upsertAll([], onConflict: ["sku"]).isEmpty)
            // Nothing to update still finds the row.
            #expect(try StockItem(["sku": "A-1"]).upsert(onConflict: ["sku"], updating: []) == .updated)
            #expect(try StockItem(["sku": "Z-9"]).upsert(onConflict: ["sku"], updating: []) == .inserted)
            #expect(try StockItem.count() == 4)
        }
    }

    @Test(arguments: TestEngine.all) func theOutcomeIsRightAfterDeletesAndOnAnUpdatedRowAgain(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            // The same key, over and over: inserted, updated, updated; deleted, inserted again.
            let outcomes = try (1...3).map { try StockItem(["sku": "K", "count": $0]).upsert(onConflict: ["sku"]) }
            #expect(outcomes == [.inserted, .updated, .updated])
            #expect(try StockItem.query().deleteAll() == 1)
            #expect(try StockItem(["sku": "K"]).upsert(onConflict: ["sku"]) == .inserted)
            // A plain insert right before does not make an update look like an insert.
            try StockItem(["sku": "L"]).save()
            #expect(try StockItem(["sku": "K"]).upsert(onConflict: ["sku"]) == .updated)
        }
    }
}
