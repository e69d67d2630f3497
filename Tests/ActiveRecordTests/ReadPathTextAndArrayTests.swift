import ActiveRecord
import Foundation
import Testing

/// A model of one text column and its position, for the text a row is read into and the
/// arrays fetched records fill.
final class ReadPathText: Model {
    @Column var text: String = ""
    @Column var optionalText: String? = nil
    @Column var position: Int = 0
}

@Suite("Read path: text and the arrays of fetched records")
struct ReadPathTextAndArrayTests {
    /// Texts of every length from 0 to 40 bytes, ASCII and not (a multi-byte character first,
    /// in the middle, last): each length of a word read whole, in part, or overlapping.
    private static let texts: [String] = (0...40).flatMap { length -> [String] in
        let ascii = String((0..<length).map { Character(UnicodeScalar(UInt8(33 + $0 % 90))) })
        guard length >= 2 else { return [ascii] }
        let body = String(ascii.dropFirst(2))
        return [ascii, "é" + body, String(body.prefix(body.count / 2)) + "✓" + String(body.dropFirst(body.count / 2)), body + "😀"]
    }

    @Test(arguments: TestEngine.all) func textOfEveryLengthReadsBackAsWritten(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            for (position, text) in Self.texts.enumerated() {
                let record = ReadPathText()
                record.text = text
                record.optionalText = position % 3 == 0 ? nil : text + "?"
                record.position = position
                try record.save()
            }
            let fetched = try ReadPathText.query().order(by: "position").fetch()
            #expect(fetched.map(\.text) == Self.texts)
            #expect(fetched.map(\.optionalText) == Self.texts.indices.map { $0 % 3 == 0 ? nil : Self.texts[$0] + "?" })
            for record in fetched {
                let found = try #require(try ReadPathText.find(record.id!))
                #expect(found.text == record.text && found.text.utf8.count == Self.texts[record.position].utf8.count)
                #expect(!found.hasChanges)
            }
        }
    }

    /// Fetches of no row, one row and many fill their arrays in order, and a row that fails to
    /// read after others were read throws (the records read before it are released).
    @Test(arguments: TestEngine.all) func fetchedArraysHoldEveryRowInOrder(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            #expect(try ReadPathText.all().isEmpty)
            let one = ReadPathText()
            one.position = 0
            try one.save()
            #expect(try ReadPathText.all().map(\.position) == [0])
            try db.transaction {
                for position in 1..<300 {
                    let record = ReadPathText()
                    record.position = position
                    record.text = "row \(position)"
                    try record.save()
                }
            }
            let all = try ReadPathText.all()
            #expect(all.map(\.position) == Array(0..<300))
            #expect(all.dropFirst().allSatisfy { $0.text == "row \($0.position)" })
            let some = try ReadPathText.query().where("position", .greaterThanOrEqual(290)).order(by: "position").fetch()
            #expect(some.map(\.position) == Array(290..<300))
            // The same query again, its statement and its arrays made anew.
            let again = try ReadPathText.query().where("position", .greaterThanOrEqual(295)).order(by: "position").fetch()
            #expect(again.map(\.position) == Array(295..<300))

            if engine == .postgres {
                try db.execute(#"ALTER TABLE "ReadPathText" ALTER COLUMN "position" DROP NOT NULL"#)
            } else {
                // SQLite's NOT NULL cannot be dropped in place: a table without it under the same name.
                try db.execute(#"ALTER TABLE "ReadPathText" RENAME TO "ReadPathTextOld""#)
                try db.execute(#"CREATE TABLE "ReadPathText" AS SELECT * FROM "ReadPathTextOld""#)
            }
            try db.execute(#"UPDATE "ReadPathText" SET "position" = NULL WHERE "text" = 'row 150'"#)
            let failed = expectError(.typeMismatch) { _ = try ReadPathText.query().order(by: "id").fetch() }
            #expect(failed?.message.contains("ReadPathText.position") == true)
        }
    }

    /// A row's header read straight: timestamps `NULL` or not, the id, through a fetch and a
    /// find alike.
    @Test(arguments: TestEngine.all) func headerTimestampsNullOrNotReadBack(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let saved = ReadPathText()
            saved.text = "saved"
            try saved.save()
            try db.execute(#"INSERT INTO "ReadPathText" ("text", "position") VALUES ('bare', 1)"#)
            let records = try ReadPathText.query().order(by: "position").fetch()
            #expect(records.count == 2)
            #expect(records[0].id == saved.id && records[0].createdAt == saved.createdAt && records[0].updatedAt == saved.updatedAt)
            #expect(records[0].createdAt != nil && records[0].text == "saved")
            #expect(records[1].id != nil && records[1].id != saved.id && records[1].text == "bare")
            #expect(records[1].createdAt == nil && records[1].updatedAt == nil)
            let found = try #require(try ReadPathText.find(records[1].id!))
            #expect(found.createdAt == nil && found.updatedAt == nil && found.text == "bare" && !found.hasChanges)
        }
    }
}
