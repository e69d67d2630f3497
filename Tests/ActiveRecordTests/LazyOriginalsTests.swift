@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 35, point 7: a record keeps its columns' original values only once it changes (the
/// first write copies them aside), and no per-column declaration tag. These check what that
/// could break: dirty tracking from the first write on, writing a value back, rollbacks,
/// reloads, relations' keys, validations' errors, and names read by reflection.
@Suite("Originals kept aside on the first change")
struct LazyOriginalsTests {
    final class LazySheet: Model, Validating {
        @Column var title: String = ""
        @Column var pages: Int = 0
        @Column var ratio: Double = 1
        @Column var note: String? = nil
        @Column var tags: [String] = []
        @Column var blob: Data = Data()
        static let validations = Validations(for: LazySheet.self) { $0.presence(\.title) }
    }

    /// Two columns of one type, only the second named, both written by the initializer:
    /// reflection still names the right one.
    final class LazyShelf: Model {
        @Column var left: String = ""
        @Column("right_side", index: .index) var right: String = ""
        @Column var count: Int = 0
        var scratch = LazySheet()

        required init() {
            super.init()
            right = "r"
            left = "l"
        }
    }

    /// A subclass's named column beside its superclass's.
    class LazyBase: Model {
        @Column("base_name") var name: String = ""
    }

    final class LazyDerived: LazyBase {
        @Column("derived_name", index: .unique) var other: String = ""
    }

    private static func sheets(_ count: Int) throws -> [LazySheet] {
        try (0..<count).map { index in
            try LazySheet.create(["title": "s\(index)", "pages": index, "ratio": 0.5, "note": nil, "tags": ["a"], "blob": Data([1, 2])])
        }
    }

    @Test(arguments: TestEngine.all) func aFetchedRecordHasNoChangesAndKeepsNoOriginals(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.sheets(3)
            for sheet in try LazySheet.all() {
                #expect(!sheet.hasChanges && sheet.changes.isEmpty && sheet.recordState == .persisted)
                #expect(!sheet.originalsCaptured && sheet.extras == nil)
                // Reading every column changes nothing.
                _ = (sheet.title, sheet.pages, sheet.ratio, sheet.note, sheet.tags, sheet.blob)
                #expect(!sheet.originalsCaptured && !sheet.hasChanges)
            }
        }
    }

    @Test(arguments: TestEngine.all) func theFirstWriteCapturesTheOriginalsAndLaterWritesKeepThem(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let id = try Self.sheets(1)[0].id!
            let sheet = try #require(try LazySheet.find(id))
            sheet.pages = 7
            #expect(sheet.originalsCaptured)
            sheet.pages = 8
            sheet.tags.append("b")  // in place
            sheet.note = "n"
            #expect(sheet.changes == [
                ColumnChange(column: "pages", old: .integer(0), new: .integer(8)),
                ColumnChange(column: "note", old: .null, new: .text("n")),
                ColumnChange(column: "tags", old: .text(#"["a"]"#), new: .text(#"["a","b"]"#)),
            ])
            #expect(sheet.recordState == .changed)
            let recorder = SQLRecorder(db)
            try sheet.save()
            #expect(recorder.all.filter { $0.hasPrefix("UPDATE") } == [
                #"UPDATE "LazySheet" SET "pages" = ?, "note" = ?, "tags" = ?, "updatedAt" = ? WHERE "id" = ?"#,
            ])
            #expect(!sheet.hasChanges)
            // Changed again after the save: against the values saved.
            sheet.note = nil
            #expect(sheet.changes == [ColumnChange(column: "note", old: .text("n"), new: .null)])
            let stored = try #require(try LazySheet.find(id))
            #expect(stored.pages == 8 && stored.note == "n" && stored.tags == ["a", "b"])
        }
    }

    @Test(arguments: TestEngine.all) func writingAValueBackLeavesNoChange(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let sheet = try #require(try LazySheet.find(try Self.sheets(1)[0].id!))
            sheet.title = sheet.title
            #expect(!sheet.hasChanges)
            sheet.ratio = 2
            sheet.blob = Data([9])
            sheet.ratio = 0.5
            sheet.blob = Data([1, 2])  // equal bytes, another buffer
            #expect(!sheet.hasChanges && sheet.changes.isEmpty)
            let recorder = SQLRecorder(db)
            try sheet.save()
            #expect(recorder.all.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func aRollbackRestoresTheOriginalAndRevertingClearsTheCapture(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let sheet = try #require(try LazySheet.find(try Self.sheets(1)[0].id!))
            let outcome = try db.transaction {
                sheet.title = "changed"
                sheet.pages = 3
                try sheet.save()
                #expect(!sheet.hasChanges)
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            #expect(sheet.changes == [
                ColumnChange(column: "title", old: .text("s0"), new: .text("changed")),
                ColumnChange(column: "pages", old: .integer(0), new: .integer(3)),
            ])
            sheet.revertChanges()
            #expect(sheet.title == "s0" && sheet.pages == 0)
            #expect(!sheet.hasChanges && !sheet.originalsCaptured)
            // Captured again by the next write, against the values restored.
            sheet.pages = 1
            #expect(sheet.changes == [ColumnChange(column: "pages", old: .integer(0), new: .integer(1))])
        }
    }

    @Test(arguments: TestEngine.all) func aRecordRolledBackThenSavedAgainWritesItsChange(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let id = try Self.sheets(1)[0].id!
            let sheet = try #require(try LazySheet.find(id))
            _ = try db.transaction {
                sheet.ratio = 4
                try sheet.save()
                throw Rollback()
            }
            #expect(try LazySheet.find(id)?.ratio == 0.5)
            #expect(sheet.changes == [ColumnChange(column: "ratio", old: .real(0.5), new: .real(4))])
            let recorder = SQLRecorder(db)
            try sheet.save()
            #expect(recorder.all.filter { $0.hasPrefix("UPDATE") } == [
                #"UPDATE "LazySheet" SET "ratio" = ?, "updatedAt" = ? WHERE "id" = ?"#,
            ])
            #expect(!sheet.hasChanges)
            #expect(try LazySheet.find(id)?.ratio == 4)
        }
    }

    @Test(arguments: TestEngine.all) func ofManyFetchedRecordsOnlyTheOneChangedKeepsOriginals(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            _ = try Self.sheets(50)
            let sheets = try LazySheet.all()
            sheets[17].title = "seventeen"
            #expect(sheets.indices.filter { sheets[$0].originalsCaptured } == [17])
            #expect(sheets.indices.filter { sheets[$0].hasChanges } == [17])
            let recorder = SQLRecorder(db)
            for sheet in sheets { try sheet.save() }
            #expect(recorder.all.filter { $0.hasPrefix("UPDATE") }.count == 1)
            #expect(try LazySheet.find(sheets[17].id!)?.title == "seventeen")
        }
    }

    @Test(arguments: TestEngine.all) func aReloadDropsTheCapturedOriginals(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let sheet = try #require(try LazySheet.find(try Self.sheets(1)[0].id!))
            sheet.title = "unsaved"
            sheet.tags = []
            try sheet.reload()
            #expect(sheet.title == "s0" && sheet.tags == ["a"])
            #expect(!sheet.hasChanges && !sheet.originalsCaptured)
        }
    }

    @Test(arguments: TestEngine.all) func aNewRecordChangesAgainstItsDefaultsUntilInserted(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let sheet = LazySheet()
            #expect(!sheet.hasChanges)
            sheet.title = "new"
            // Filled in from its class's defaults: their copy is shared, none is made.
            #expect(sheet.originalsState == .defaults && sheet.extras == nil)
            sheet.note = "n"
            #expect(sheet.changes == [
                ColumnChange(column: "title", old: .text(""), new: .text("new")),
                ColumnChange(column: "note", old: .null, new: .text("n")),
            ])
            try sheet.save()
            #expect(!sheet.hasChanges && !sheet.originalsCaptured)
            let made = try LazySheet(["title": "x", "pages": 2])
            #expect(made.changes.map(\.column) == ["title", "pages"])
        }
    }

    /// A default made anew for each record (another token each time, or a string held on
    /// the heap): a new record's originals are its own values, as made.
    final class LazyTokened: Model {
        @Column var token: String = UUID().uuidString
        @Column var long: String = String(repeating: "x", count: 40)
        @Column var title: String = ""
    }

    @Test func aNewRecordWhoseDefaultsDifferComparesWithItsOwnValues() throws {
        try withMemoryDatabase { _ throws in
            let first = LazyTokened(), second = LazyTokened()
            #expect(first.token != second.token)
            second.title = "t"
            #expect(second.changes == [ColumnChange(column: "title", old: .text(""), new: .text("t"))])
            #expect(second.originalsState == .aside)
            first.long = String(repeating: "x", count: 40)
            #expect(!first.hasChanges)
            first.token = "mine"
            #expect(first.changes.map(\.column) == ["token"])
            first.revertChanges()
            #expect(first.token != "mine" && first.token.count == 36)
        }
    }

    @Test(arguments: TestEngine.all) func validationErrorsLiveBesideTheOriginals(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let sheet = LazySheet()
            #expect(!sheet.isValid && sheet.errors.map(\.property) == ["title"])
            sheet.title = "t"
            try sheet.save()
            #expect(sheet.errors.isEmpty && !sheet.originalsCaptured)
            // A valid record that never failed keeps nothing aside.
            let fetched = try #require(try LazySheet.find(sheet.id!))
            #expect(fetched.isValid && fetched.extras == nil)
        }
    }

    @Test func reflectionNamesTheColumnsADeclarationInitialises() throws {
        #expect(try LazyShelf.schema().columns.map { "\($0.name) \($0.index.map(String.init(describing:)) ?? "-")" }
            == ["left -", "right_side index", "count -"])
        #expect(try LazyShelf.schema().columns.map(\.defaultValue) == [.text("l"), .text("r"), .integer(0)])
        // The initializer's writes count as changes, against the properties' initial values.
        #expect(LazyShelf().changes.map(\.column) == ["left", "right_side"])
        #expect(try LazyDerived.schema().columns.map { "\($0.name) \($0.index.map(String.init(describing:)) ?? "-")" }
            == ["base_name -", "derived_name unique"])
    }

    @Test(arguments: TestEngine.all) func aBelongsToKeySetThroughItsProjectionIsAChange(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let owner = LazyOwner()
            owner.name = "o"
            try owner.save()
            let pet = LazyPet()
            pet.name = "p"
            try pet.save()
            let fetched = try #require(try LazyPet.find(pet.id!))
            fetched.$owner.id = owner.id
            #expect(fetched.changes == [ColumnChange(column: "lazyOwnerId", old: .null, new: .integer(owner.id!))])
            try fetched.save()
            #expect(try LazyPet.find(pet.id!)?.$owner.id == owner.id)
        }
    }

    final class LazyOwner: Model {
        @Column var name: String = ""
    }

    final class LazyPet: Model {
        @Column var name: String = ""
        @BelongsTo var owner: LazyOwner?
    }
}

#if os(Linux)
/// glibc's size of a heap block (malloc.h, which the Glibc module leaves out).
@_silgen_name("malloc_usable_size")
private func malloc_usable_size(_ pointer: UnsafeMutableRawPointer?) -> Int

/// The benchmark's 8-column model, measured as the heap holds it.
final class LazyMeasuredUser: Model {
    @Column var name: String = ""
    @Column var email: String = ""
    @Column var age: Int = 0
    @Column var score: Double = 0
    @Column var active: Bool = false
    @Column var note: String? = nil
    @Column var groupId: Int64 = 0
    @Column var payload: Data = Data()
}

@Suite("A record's size")
struct RecordSizeTests {
    /// A record is its columns' values and four words of bookkeeping (object header, row
    /// header, mapping, extras): 160 bytes for the 8 columns here (312 when each column
    /// also held its original and a tag), and no more once it was fetched.
    @Test func aFetchedRecordHoldsItsValuesAndNoOriginals() throws {
        try withMemoryDatabase { _ throws in
            _ = try LazyMeasuredUser.create(["name": "n", "email": "e", "payload": Data([1])])
            let record = try #require(try LazyMeasuredUser.find(1))
            let bytes = malloc_usable_size(Unmanaged.passUnretained(record).toOpaque())
            #expect(bytes >= 160 && bytes <= 168, "malloc_usable_size \(bytes)")
            #expect(record.extras == nil)
        }
    }
}
#endif
