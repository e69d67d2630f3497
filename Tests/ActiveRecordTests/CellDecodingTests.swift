import ActiveRecord
import Foundation
import Testing

/// Every known column type (`KnownFieldType`), plain and optional: read straight from a row's
/// cells when the cell holds the type's own storage class, through `fromSQL` otherwise.
final class KnownTypes: Model {
    @Column var text: String = ""
    @Column var int: Int = 0
    @Column var int64: Int64 = 0
    @Column var double: Double = 0
    @Column var bool: Bool = false
    @Column var data: Data = Data()
    @Column var date: Date = Date(timeIntervalSince1970: 0)
    @Column var optionalText: String? = nil
    @Column var optionalInt: Int? = nil
    @Column var optionalInt64: Int64? = nil
    @Column var optionalDouble: Double? = nil
    @Column var optionalBool: Bool? = nil
    @Column var optionalData: Data? = nil
    @Column var optionalDate: Date? = nil
}

@Suite("Decoding the known column types from a row's cells")
struct CellDecodingTests {
    @Test(arguments: TestEngine.all) func everyKnownTypeReadsBackWithAndWithoutValues(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let full = KnownTypes()
            full.text = "Ünïcode ✓"
            full.int = -42
            full.int64 = .min
            full.double = 2.5
            full.bool = true
            full.data = Data([0, 1, 2, 255] + Array(repeating: 9, count: 20))
            full.date = Date(timeIntervalSince1970: 1_700_000_000.25)
            full.optionalText = ""
            full.optionalInt = 7
            full.optionalInt64 = .max
            full.optionalDouble = -0.5
            full.optionalBool = false
            full.optionalData = Data()
            full.optionalDate = Date(timeIntervalSince1970: -86_400)
            try full.save()
            try KnownTypes().save()

            let records = try KnownTypes.all().sorted { ($0.id ?? 0) < ($1.id ?? 0) }
            #expect(records.count == 2)
            let read = records[0]
            #expect(read.text == "Ünïcode ✓" && read.int == -42 && read.int64 == .min && read.double == 2.5)
            #expect(read.bool && read.data == full.data && read.date == full.date)
            #expect(read.optionalText == "" && read.optionalInt == 7 && read.optionalInt64 == .max)
            #expect(read.optionalDouble == -0.5 && read.optionalBool == false && read.optionalData == Data())
            #expect(read.optionalDate == full.optionalDate)
            #expect(!read.hasChanges)  // read as both the value and the original

            let empty = records[1]
            #expect(empty.text == "" && empty.int == 0 && empty.data == Data() && !empty.bool)
            #expect(empty.optionalText == nil && empty.optionalInt == nil && empty.optionalInt64 == nil)
            #expect(empty.optionalDouble == nil && empty.optionalBool == nil && empty.optionalData == nil)
            #expect(empty.optionalDate == nil && !empty.hasChanges)
        }
    }

    /// SQLite stores any storage class in any column: a cell of another class than the type's
    /// own takes the `fromSQL` path, which converts or refuses it as before.
    @Test func otherStorageClassesConvertOrFailAsFromSQLSays() throws {
        try withDatabase(.sqlite) { db throws in
            try KnownTypes().save()
            try db.execute(#"UPDATE "KnownTypes" SET "int" = CAST(3.0 AS REAL), "double" = 4, "date" = 10, "optionalInt" = CAST(5.0 AS REAL)"#)
            let read = try #require(try KnownTypes.all().first)
            #expect(read.int == 3 && read.double == 4 && read.date == Date(timeIntervalSince1970: 10) && read.optionalInt == 5)

            try db.execute(#"UPDATE "KnownTypes" SET "bool" = 2"#)
            let bool = expectError(.typeMismatch) { _ = try KnownTypes.all() }
            #expect(bool?.message.contains("KnownTypes.bool") == true)

            try db.execute(#"UPDATE "KnownTypes" SET "bool" = 1, "text" = X'4142'"#)  // a BLOB stays one in a TEXT column
            let text = expectError(.typeMismatch) { _ = try KnownTypes.all() }
            #expect(text?.message.contains("KnownTypes.text") == true)

            try db.execute(#"UPDATE "KnownTypes" SET "text" = CAST(X'FF' AS TEXT)"#)
            let invalid = expectError(.typeMismatch) { _ = try KnownTypes.all() }
            #expect(invalid?.message.contains("not valid UTF-8") == true)
        }
    }
}
