@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

@Suite("Schema as a run-time value")
struct SchemaTests {
    func noteSchema() throws -> TableSchema {
        try TableSchema(name: "Note", columns: [
            ColumnSchema(name: "title", type: .text, index: .index),
            ColumnSchema(name: "stars", type: .integer, isNullable: true),
            ColumnSchema(name: "weight", type: .real, defaultValue: .real(1.5)),
            ColumnSchema(name: "body", type: .blob, isNullable: true),
        ])
    }

    @Test(arguments: TestEngine.all) func aRecordIsSavedAndFetchedThroughASchemaBuiltByHand(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let notes = DynamicModel(try noteSchema())
            let note = notes.makeRecord()
            #expect(try note.value("weight") == .real(1.5))
            try note.set("title", .text("Buy milk"))
            try note.set("stars", .integer(5))
            try note.set("weight", .integer(2))  // an integer is accepted for REAL
            try note.save()
            #expect(note.id == 1 && note.createdAt != nil)
            let fetched = try #require(try notes.find(1))
            #expect(try fetched.value("title") == .text("Buy milk"))
            #expect(try fetched.value("stars") == .integer(5))
            #expect(try fetched.value("weight") == .real(2))
            #expect(try fetched.value("body") == .null)
            let recorder = SQLRecorder(db)
            try fetched.set("stars", .null)
            let sql = try recorder.during { try fetched.save() }
            #expect(sql == [#"UPDATE "Note" SET "stars" = ?, "updatedAt" = ? WHERE "id" = ?"#])
            #expect(try recorder.during { try fetched.save() } == [])
            #expect(try notes.all(where: "stars", equals: .null).count == 1)
            #expect(try notes.count() == 1)
            try fetched.destroy()
            #expect(try notes.count() == 0)
            switch engine {
            case .sqlite:
                let ddl = try storedValue(db, "SELECT sql FROM sqlite_master WHERE name = 'Note'")
                #expect(ddl == .text(#"CREATE TABLE "Note" ("id" INTEGER PRIMARY KEY, "createdAt" REAL, "updatedAt" REAL, "title" TEXT NOT NULL DEFAULT '', "stars" INTEGER, "weight" REAL NOT NULL DEFAULT 1.5, "body" BLOB)"#))
            case .postgres:
                let columns = try db.withSchema { connection, dialect in try dialect.columns(of: "Note", connection) }
                #expect(columns.map { "\($0.name) \($0.type)\($0.isNullable ? "" : " NOT NULL")\($0.defaultSQL.map { " DEFAULT " + $0 } ?? "")" } == [
                    "id bigint NOT NULL", "createdAt double precision", "updatedAt double precision",
                    "title text NOT NULL DEFAULT ''::text", "stars bigint", "weight double precision NOT NULL DEFAULT 1.5", "body bytea",
                ])
            }
        }
    }

    @Test(arguments: TestEngine.all) func aHandBuiltSchemaAndASwiftClassShareOneTable(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let items = DynamicModel(try TableSchema(name: "Item", columns: [ColumnSchema(name: "title", type: .text)]))
            let record = items.makeRecord()
            try record.set("title", .text("from the schema"))
            try record.save()
            #expect(try Item.find(record.id!)?.title == "from the schema")
            try Item.create(["title": "from Swift"])
            #expect(try items.all().map { try $0.value("title") } == [.text("from the schema"), .text("from Swift")])
        }
    }

    @Test(arguments: TestEngine.all) func wrongValuesForADynamicRecordAreClearErrors(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let note = DynamicModel(try noteSchema()).makeRecord()
            let mismatch = expectError(.typeMismatch) { try note.set("stars", .text("five")) }
            #expect(mismatch?.message == "Note.stars holds INTEGER; a TEXT value cannot be stored in it")
            expectError(.typeMismatch) { try note.set("title", .null) }
            expectError(.unknownColumn) { try note.set("nope", .integer(1)) }
            expectError(.invalidValue) { try note.set("weight", .real(.nan)) }
            #expect(try note.value("title") == .text(""))
        }
    }

    @Test("invalid schemas are refused", arguments: [
        ("", ["a"]), ("T", ["id"]), ("T", ["createdAt"]), ("T", ["a", "A"]), ("T", [""]),
    ])
    func invalidSchemas(_ table: String, _ names: [String]) {
        expectError(.invalidModel) {
            _ = try TableSchema(name: table, columns: names.map { ColumnSchema(name: $0, type: .text) })
        }
    }

    @Test(arguments: TestEngine.all) func hostileNamesAreQuotedNotSpliced(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let name = #"we"ird; DROP TABLE x; --"#
            let model = DynamicModel(try TableSchema(name: name, columns: [ColumnSchema(name: #"co"l"#, type: .text)]))
            let record = model.makeRecord()
            try record.set(#"co"l"#, .text("v"))
            try record.save()
            #expect(try model.all().count == 1)
            #expect(try db.tableNames() == [name])
        }
    }
}

/// Found by the predicate fuzzer: a quote followed by a combining mark is one
/// Swift `Character`, and quoting must still double it.
@Suite("Quoting")
struct QuotingTests {
    @Test("quotes with combining marks", arguments: TestEngine.all, ["a\"\u{65B}b", "x'\u{301}y", "\"\u{301}", "'\u{65B}"])
    func quotesFollowedByCombiningMarks(_ engine: TestEngine, _ name: String) throws {
        try withDatabase(engine) { db throws in
            let model = DynamicModel(try TableSchema(name: name, columns: [
                ColumnSchema(name: name, type: .text, defaultValue: .text(name)),
            ]))
            let record = model.makeRecord()
            try record.save()
            #expect(try model.find(record.id!)?.value(name) == .text(name))
            #expect(try db.tableNames() == [name])
        }
    }
}
