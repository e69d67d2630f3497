@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// An order and its lines: integer cents, a real weight, optional columns, and the order's
/// key read and filtered by key path.
final class PurchaseOrder: Model {
    @Column var customer: String = ""
    @HasMany var lines: Query<PurchaseLine>
}

final class PurchaseLine: Model, Validating {
    @Column var cents: Int = 0
    @Column var weight: Double = 0
    @Column var discount: Int? = nil
    @Column var small: Int8 = 0
    @Column var label: String = ""
    @BelongsTo var order: PurchaseOrder?
    static let validations = Validations(for: PurchaseLine.self) {
        $0.presence(\.$order.id, message: "needs an order")
    }
}

/// The key declared twice: by the relation and by hand.
final class TwiceKeyedLine: Model {
    @Column var purchaseOrderId: Int64? = nil
    @BelongsTo var order: PurchaseOrder?          // its key: purchaseOrderId
}

/// Issue 31, point 9: typed aggregates by key path, and a belongs-to's key by key path.
@Suite("Typed aggregates, and a belongs-to's key by key path")
struct TypedAggregateTests {
    private func seed() throws -> (PurchaseOrder, PurchaseOrder) {
        let first = try PurchaseOrder.create(["customer": "ann"])
        let second = try PurchaseOrder.create(["customer": "bob"])
        for (order, cents, weight, discount) in [(first, 1_000_000, 0.25, 5), (first, 104, 0.5, nil), (second, 7, 2.0, 1)] {
            let line = try PurchaseLine(["cents": cents, "weight": weight, "discount": discount, "label": "c\(cents)"])
            line.order = order
            try line.save()
        }
        return (first, second)
    }

    @Test(arguments: TestEngine.all) func sumOfAnIntColumnIsAnInt(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let (first, _) = try seed()
            let lines = PurchaseLine.query().where(\.$order.id == first.id)
            let cents: Int? = try lines.sum(\.cents)
            #expect(cents == 1_000_104)                                 // was 1000104.0, a Double
            #expect(try lines.sum(\.weight) == 0.75)                     // Double?
            #expect(try PurchaseLine.query().sum(\.discount) == 6)       // Int? of an optional column, NULLs left out
            #expect(try lines.average(\.cents) == 500_052)
            #expect(try lines.min(\.cents) == 104 && lines.max(\.cents) == 1_000_000)
            #expect(try PurchaseLine.query().min(\.label) == "c1000000")  // String? of a String column
            #expect(try PurchaseLine.query().max(\.discount) == 5)        // Int? of an Int? column
            // No record: nil, as min, max and average are (?? 0 for a total).
            let none = PurchaseLine.query().where(\.cents > 10_000_000)
            #expect(try none.sum(\.cents) == nil && none.sum(\.weight) == nil && none.average(\.weight) == nil)
            #expect(try none.min(\.cents) == nil && none.max(\.discount) == nil)
            #expect(try PurchaseLine.query().where(\.discount == nil).sum(\.discount) == nil)
            // The string forms stay.
            #expect(try lines.sum("cents") == 1_000_104.0)
            #expect(try lines.min("cents", as: Int.self) == 104)
        }
    }

    @Test(arguments: TestEngine.all) func aSumBeyondTheColumnsTypeIsAMismatch(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try seed()
            try PurchaseLine.query().updateAll(["small": 100])
            let error = expectError(.typeMismatch) { _ = try PurchaseLine.query().sum(\.small) }
            #expect(error?.message.contains("Int8") == true)
        }
    }

    @Test(arguments: TestEngine.all) func theForeignKeyIsReadAndFilteredByKeyPath(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let (first, second) = try seed()
            let line = try #require(try PurchaseLine.query().where(\.cents == 7).first())
            #expect(line.$order.id == second.id)                                        // read without loading
            #expect(try PurchaseLine.query().where(\.$order.id == first.id).count() == 2)
            #expect(try PurchaseLine.query().where(\.$order.id, .in([second.id!])).pluck(\.cents) == [7])
            #expect(try PurchaseLine.query().order(by: \.$order.id, ascending: false).pluck(\.$order.id)
                == [second.id, first.id, first.id])
            // Setting the key moves the line; the parent follows.
            #expect(line.order?.customer == "bob")
            line.$order.id = first.id
            #expect(line.order?.customer == "ann")
            try line.save()
            #expect(try PurchaseLine.query().where(\.$order.id == first.id).count() == 3)
            #expect(try first.lines.count() == 3)
            // Cleared: no parent, and the key path names a column validations check.
            line.$order.id = nil
            #expect(line.order == nil)
            let error = expectError(.validationFailed) { try line.save() }
            #expect(error?.validationFailures.map(\.description) == ["order needs an order"])
        }
    }

    @Test func aColumnBesideTheRelationIsTheKeyDeclaredTwice() throws {
        try withDatabase(.sqlite) { _ throws in
            let error = expectError(.invalidModel) { _ = try TwiceKeyedLine.count() }
            #expect(error?.message.contains("'purchaseOrderId' is declared twice") == true, "\(String(describing: error))")
        }
    }

    @Test(arguments: TestEngine.all) func settingTheKeyDropsAnUnsavedParent(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let (first, _) = try seed()
            let line = PurchaseLine()
            line.order = try PurchaseOrder(["customer": "new"])    // unsaved: saved with the line
            #expect(line.$order.id == nil)
            line.$order.id = first.id                               // the key wins
            try line.save()
            #expect(line.order?.id == first.id)
            #expect(try PurchaseOrder.count() == 2)                 // the unsaved order was not saved
        }
    }
}
