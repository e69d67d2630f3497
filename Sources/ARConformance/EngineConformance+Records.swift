@_spi(Engines) import ARCore
import ActiveRecord
import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A record of every kind of column, for the record-level round trips.
final class ConformanceItem: Model {
    @Column var name: String = ""
    @Column var count: Int = 0
    @Column var price: Double = 0
    @Column var bytes: Data = Data()
    @Column var isActive: Bool = false
    @Column var madeAt: Date = Date(timeIntervalSince1970: 0)
    @Column var weight: Decimal = 0
    @Column var key: UUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Column var note: String? = nil
    @Column(index: .unique) var sku: String?
}

extension EngineConformance {
    /// Cursors, which step at their caller's pace.
    static let readChecks: [Check] = [
        check("cursor", "a cursor steps through every row in order, and in a transaction sees the transaction's writes") { c in
            try c.createTable("numbers", [("n", .integer, "")])
            try c.database.transaction { for n in 1...300 { try c.insert(into: "numbers", ["n": .integer(Int64(n))]) } }
            func readAll() throws -> [Int64] {
                let cursor = try c.database.openCursor(#"SELECT "n" FROM "numbers" WHERE "n" > ? ORDER BY "n""#, [.integer(0)], tables: [])
                defer { cursor.close() }
                var numbers: [Int64] = []
                while let n = try cursor.next({ $0.int64(0) }) { numbers.append(n) }
                return numbers
            }
            c.expect(try readAll(), Array(1...300), "the rows outside a transaction")
            try c.database.transaction {
                try c.insert(into: "numbers", ["n": .integer(301)])
                c.expect(try readAll().count, 301, "the rows in a transaction that added one")
                throw Rollback()
            }
            c.expect(try readAll().count, 300, "the rows after the rollback")
        },
    ]

    /// Records: what users do, through the whole library.
    static let recordChecks: [Check] = [
        check("recordRoundTrip", "a record of every column kind saves, finds, updates and destroys with its values unchanged") { c in
            let item = ConformanceItem()
            item.name = "Crème brûlée ✓"
            item.count = Int.min
            item.price = 12.75
            item.bytes = Data([0, 1, 2, 255])
            item.isActive = true
            item.madeAt = Date(timeIntervalSince1970: 1_700_000_000.5)
            item.weight = Decimal(string: "12345678901234567.891")!
            item.key = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
            item.note = ""
            try item.save()
            c.expect(item.id, 1, "the id of the first record")
            let found = try #require(try ConformanceItem.find(1))
            c.expect(found.name, item.name, "name")
            c.expect(found.count, Int.min, "count")
            c.expect(found.price, 12.75, "price")
            c.expect(found.bytes, item.bytes, "bytes")
            c.expect(found.isActive, true, "isActive")
            c.expect(found.madeAt, item.madeAt, "madeAt")
            c.expect(found.weight, item.weight, "weight")
            c.expect(found.key, item.key, "key")
            c.expect(found.note, "", "note: empty, not NULL")
            found.count = Int.max
            found.note = nil
            try found.save()
            let again = try #require(try ConformanceItem.find(1))
            c.expect(again.count, Int.max, "count after an update")
            c.expect(again.note, nil, "note after an update to nil")
            try again.destroy()
            c.expect(try ConformanceItem.find(1) == nil, true, "destroyed")
        },
        check("recordQueries", "queries over records filter, order, count, aggregate and pluck alike on every engine") { c in
            for (index, name) in ["delta", "Alpha", "charlie", "bravo", nil].enumerated() {
                try ConformanceItem.create(["name": name ?? "", "count": index * 10, "price": Double(index) + 0.5, "note": name])
            }
            let query = ConformanceItem.query()
            c.expect(try query.where("name LIKE %@", "a%").order(by: "name").pluck("name", as: String.self), ["Alpha"], "LIKE, ASCII case")
            c.expect(try query.order(by: "note").pluck("note", as: String?.self), [nil, "Alpha", "bravo", "charlie", "delta"],
                     "ordered by note, NULL first")
            c.expect(try query.order(by: "note", ascending: false).limit(2).offset(1).pluck("note", as: String?.self),
                     ["charlie", "bravo"], "descending with limit and offset")
            c.expect(try query.where("count >= %@ AND note != %@", 10, "bravo").count(), 2, "a compound condition")
            c.expect(try query.where("note IN %@", ["Alpha", "delta", "zulu"]).count(), 2, "IN a list")
            c.expect(try query.where("note", .isNull).count(), 1, "IS NULL")
            c.expect(try query.sum("count"), 100, "sum")
            c.expect(try query.sum(\.count), 100, "sum by key path, an integer")
            c.expect(try query.average(\.price), 2.5, "average")
            c.expect(try query.min(\.note), "Alpha", "min, NULLs left out")
            c.expect(try query.where("count > %@", 1_000).sum("count"), 0, "the total of no rows")
            c.expect(try query.group(by: "isActive").values("isActive, count(*)"), [[.integer(0), .integer(5)]], "grouped")
            c.expect(try query.distinct().only("isActive").fetch().count, 5, "distinct records")
            c.expect(try query.where("count < %@", 20).updateAll(["isActive": true]), 2, "updateAll")
            c.expect(try query.where("isActive = %@", true).deleteAll(), 2, "deleteAll")
            c.expect(try ConformanceItem.count(), 3, "the records left")
        },
        check("recordUpsertAndUniqueness", "a record's upsert says inserted or updated; a duplicate unique value is a unique violation") { c in
            let first = try ConformanceItem(["sku": "A-1", "count": 1])
            c.expect(try first.upsert(onConflict: ["sku"]), .inserted, "the first upsert")
            let second = try ConformanceItem(["sku": "A-1", "count": 5])
            c.expect(try second.upsert(onConflict: ["sku"]), .updated, "the second upsert")
            c.expect(second.id, first.id, "the updated record's id")
            c.expect(try ConformanceItem.query().pluck("count", as: Int.self), [5], "the counts")
            c.expectError("a duplicate sku", matching: \.isUniqueViolation) { try ConformanceItem.create(["sku": "A-1"]) }
            try c.database.transaction {
                _ = try ConformanceItem.create(["sku": "B-2"])
                c.expectError("a duplicate sku in a savepoint", matching: \.isUniqueViolation) {
                    try c.database.transaction { _ = try ConformanceItem.create(["sku": "B-2"]) }
                }
            }
            c.expect(try ConformanceItem.count(), 2, "the records")
        },
    ]
}
