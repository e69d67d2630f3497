import ActiveRecord
import Foundation
import Testing

/// Every known column type, plain and optional, for the reads an engine makes straight into a
/// record (PostgreSQL: no cells between libpq and the record; SQLite: through its cells).
final class DirectReadTypes: Model {
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
    /// Declared last: read after any column the engine leaves to the cells.
    @Column var last: String = ""
}

@Suite("Reading rows straight into records")
struct DirectRowReadingTests {
    /// A record with a value in every column, and one with the defaults and every optional `nil`.
    private func saveTwo() throws -> (full: DirectReadTypes, empty: DirectReadTypes) {
        let full = DirectReadTypes()
        full.text = "Ünïcode ✓, long enough not to fit inline"
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
        full.last = "last"
        try full.save()
        let empty = DirectReadTypes()
        try empty.save()
        return (full, empty)
    }

    private func expectFull(_ read: DirectReadTypes, like full: DirectReadTypes, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(read.id == full.id && read.createdAt == full.createdAt && read.updatedAt == full.updatedAt, sourceLocation: sourceLocation)
        #expect(read.text == full.text && read.int == -42 && read.int64 == .min && read.double == 2.5, sourceLocation: sourceLocation)
        #expect(read.bool && read.data == full.data && read.date == full.date, sourceLocation: sourceLocation)
        #expect(read.optionalText == "" && read.optionalInt == 7 && read.optionalInt64 == .max, sourceLocation: sourceLocation)
        #expect(read.optionalDouble == -0.5 && read.optionalBool == false && read.optionalData == Data(), sourceLocation: sourceLocation)
        #expect(read.optionalDate == full.optionalDate && read.last == "last", sourceLocation: sourceLocation)
        #expect(!read.hasChanges, sourceLocation: sourceLocation)  // every value read is its original
    }

    private func expectEmpty(_ read: DirectReadTypes, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(read.text == "" && read.int == 0 && read.int64 == 0 && read.data == Data() && !read.bool, sourceLocation: sourceLocation)
        #expect(read.optionalText == nil && read.optionalInt == nil && read.optionalInt64 == nil, sourceLocation: sourceLocation)
        #expect(read.optionalDouble == nil && read.optionalBool == nil && read.optionalData == nil, sourceLocation: sourceLocation)
        #expect(read.optionalDate == nil && read.last == "" && !read.hasChanges, sourceLocation: sourceLocation)
    }

    @Test(arguments: TestEngine.all) func everyTypeAndNullReadsBackThroughFetchFindAndQuery(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let (full, empty) = try saveTwo()
            let all = try DirectReadTypes.all().sorted { ($0.id ?? 0) < ($1.id ?? 0) }
            #expect(all.count == 2)
            expectFull(all[0], like: full)
            expectEmpty(all[1])
            expectFull(try #require(try DirectReadTypes.find(full.id!)), like: full)
            expectEmpty(try #require(try DirectReadTypes.find(empty.id!)))
            #expect(try DirectReadTypes.find(-1) == nil)
            let queried = try DirectReadTypes.query().where("int", .equal(-42)).fetch()
            #expect(queried.count == 1)
            expectFull(try #require(queried.first), like: full)

            // A changed record read again keeps no original of its own: each value is read anew.
            let changed = try #require(try DirectReadTypes.find(full.id!))
            changed.text = "changed"
            changed.optionalInt = nil
            #expect(changed.hasChanges)
            try changed.reload()
            expectFull(changed, like: full)
        }
    }

    /// PostgreSQL: columns whose server types the engine does not read in place (`integer`,
    /// `real`, `numeric`, `varchar`) are read from the row's cells, and the columns after them
    /// straight again; the values are those of the model's types.
    @Test func serverTypesOtherThanTheModelsReadThroughTheCells() throws {
        guard TestEngine.all.contains(.postgres) else { return }
        try withDatabase(.postgres) { db throws in
            let (full, _) = try saveTwo()
            try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "int" TYPE integer"#)
            try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "double" TYPE real"#)
            try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "optionalInt" TYPE numeric"#)
            try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "text" TYPE varchar(100)"#)
            let all = try DirectReadTypes.all().sorted { ($0.id ?? 0) < ($1.id ?? 0) }
            #expect(all.count == 2)
            expectFull(all[0], like: full)
            expectEmpty(all[1])
            expectFull(try #require(try DirectReadTypes.find(full.id!)), like: full)
        }
    }

    /// A column holding what the model's type cannot take is the same error as through the
    /// cells, naming the table and column, on both engines.
    @Test(arguments: TestEngine.all) func aMistypedColumnIsATypeMismatchNamingIt(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let (full, _) = try saveTwo()
            if engine == .postgres {
                try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "bool" DROP DEFAULT"#)
                try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "bool" TYPE bigint USING 2"#)
            } else {
                try db.execute(#"UPDATE "DirectReadTypes" SET "bool" = 2"#)
            }
            let fetched = expectError(.typeMismatch) { _ = try DirectReadTypes.all() }
            #expect(fetched?.message.contains("DirectReadTypes.bool") == true)
            let found = expectError(.typeMismatch) { _ = try DirectReadTypes.find(full.id!) }
            #expect(found?.message.contains("DirectReadTypes.bool") == true)
        }
        // (A fresh database: PostgreSQL refuses a prepared statement whose result types changed.)
        try withDatabase(engine) { db throws in
            _ = try saveTwo()
            if engine == .postgres {
                try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "int" DROP DEFAULT"#)
                try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "int" TYPE text USING 'not a number'"#)
            } else {
                try db.execute(#"UPDATE "DirectReadTypes" SET "int" = 'not a number'"#)
            }
            let text = expectError(.typeMismatch) { _ = try DirectReadTypes.all() }
            #expect(text?.message.contains("DirectReadTypes.int") == true)
        }
    }

    /// `NULL` in a column whose type holds none: an error naming the column, through a fetch
    /// and a find alike.
    @Test(arguments: TestEngine.all) func aNullForANonOptionalTypeIsAnErrorNamingTheColumn(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let (full, _) = try saveTwo()
            if engine == .postgres {
                try db.execute(#"ALTER TABLE "DirectReadTypes" ALTER COLUMN "int64" DROP NOT NULL"#)
                try db.execute(#"UPDATE "DirectReadTypes" SET "int64" = NULL"#)
            } else {
                // SQLite's NOT NULL cannot be dropped in place: a table without it under the same name.
                try db.execute(#"ALTER TABLE "DirectReadTypes" RENAME TO "DirectReadTypesOld""#)
                try db.execute(#"CREATE TABLE "DirectReadTypes" AS SELECT * FROM "DirectReadTypesOld""#)
                try db.execute(#"UPDATE "DirectReadTypes" SET "int64" = NULL"#)
            }
            let fetched = expectError(.typeMismatch) { _ = try DirectReadTypes.all() }
            #expect(fetched?.message.contains("DirectReadTypes.int64") == true)
            let found = expectError(.typeMismatch) { _ = try DirectReadTypes.find(full.id!) }
            #expect(found?.message.contains("DirectReadTypes.int64") == true)
        }
    }
}
