import ActiveRecord
import Foundation
import Testing

/// Issue 35, point 4: on PostgreSQL, `insertAll` of 200 rows or more into a table that allows it
/// goes by a binary `COPY`, with ids taken from the table's sequence first; a table with a
/// trigger, or fewer rows, keep `INSERT … VALUES`; a row the server refuses is named.
@Suite("insertAll by binary COPY on PostgreSQL", .enabled(if: TestEngine.postgresConnection != nil))
struct BulkCopyTests {
    @Test func manyRowsGoByCopyWithIdsFromTheSequence() throws {
        try withDatabase(.postgres) { db throws in
            let first = try BulkItem.create(["code": "first"])
            let items = (0..<250).map(BulkInsertTests.item)
            let recorder = SQLRecorder(db)
            try BulkItem.insertAll(items)
            let statements = recorder.all
            #expect(statements.filter { $0.hasPrefix("COPY \"BulkItem\"") }.count == 1, "\(statements)")
            #expect(statements.contains { $0.hasPrefix("SELECT nextval(") })
            #expect(!statements.contains { $0.hasPrefix("INSERT") }, "\(statements)")
            let ids = items.compactMap(\.id)
            #expect(ids.count == 250 && ids == ids.sorted() && Set(ids).count == 250 && ids[0] > first.id!)
            BulkInsertTests.expectStored(items, try BulkItem.query().where("code <> %@", "first").order(by: "id").fetch())
            // The sequence went past the ids COPY used: the next insert gets a new one.
            let after = try BulkItem.create(["code": "after"])
            #expect(after.id! > ids.last!)
            // Fewer rows go by one INSERT.
            recorder.reset()
            let few = (1_000..<1_150).map(BulkInsertTests.item)
            try BulkItem.insertAll(few)
            #expect(recorder.all.filter { $0.hasPrefix("INSERT") }.count == 1 && !recorder.all.contains { $0.hasPrefix("COPY") })
            db.trace(nil)
            #expect(try BulkItem.count() == 402)
        }
    }

    @Test func aTableWithATriggerKeepsInsert() throws {
        try withDatabase(.postgres) { db throws in
            _ = try BulkItem.count()
            try db.execute("""
                CREATE FUNCTION bulk_item_upper() RETURNS trigger LANGUAGE plpgsql AS \
                $$ BEGIN NEW."note" := upper(NEW."note"); RETURN NEW; END $$
                """)
            try db.execute(#"CREATE TRIGGER bulk_item_upper BEFORE INSERT ON "BulkItem" FOR EACH ROW EXECUTE FUNCTION bulk_item_upper()"#)
            let items = (0..<300).map { n in
                let item = BulkInsertTests.item(n)
                item.note = "note \(n)"
                return item
            }
            let statements = try SQLRecorder(db).during { try BulkItem.insertAll(items) }
            db.trace(nil)
            #expect(!statements.contains { $0.hasPrefix("COPY") } && statements.contains { $0.hasPrefix("INSERT") }, "\(statements)")
            let stored = try BulkItem.query().order(by: "id").fetch()
            #expect(stored.map(\.id) == items.map(\.id))
            #expect(stored.map(\.note) == items.map { $0.note?.uppercased() })
        }
    }

    @Test func aRowTheServerRefusesIsNamedAndNothingIsInserted() throws {
        try withDatabase(.postgres) { db throws in
            _ = try BulkItem.create(["code": "kept"])
            let items = (0..<2_500).map(BulkInsertTests.item)
            items[2_321].code = items[10].code
            let error = expectError(.constraint) { try BulkItem.insertAll(items) }
            #expect(error?.message.hasPrefix("record 2322 of 2500: ") == true, "\(error?.message ?? "")")
            #expect(error?.constraint == .unique)
            #expect(items.allSatisfy { $0.isNewRecord })
            #expect(try BulkItem.count() == 1)
            // The connection goes on: the same rows, fixed, go in.
            items[2_321].code = "fixed"
            try BulkItem.insertAll(items)
            #expect(try BulkItem.count() == 2_501)
            BulkInsertTests.expectStored(items, try BulkItem.query().where("code <> %@", "kept").order(by: "id").fetch())
        }
    }
}
