@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 35 (the write path): the first write to a column keeps that column's original aside,
/// alone; a save compares and writes only the columns written to, and drops their originals.
/// These check that dirty tracking, saves, rollbacks and reverts behave as when every
/// column's original was copied by the first write.
@Suite("Originals kept aside per column")
struct PerColumnOriginalsTests {
    final class ColumnSheet: Model {
        @Column var title: String = ""
        @Column var pages: Int = 0
        @Column var ratio: Double = 1
        @Column var note: String? = nil
        @Column var tags: [String] = []
        @Column var blob: Data = Data()
    }

    /// Not final: its properties' accesses are checked dynamically.
    class OpenSheet: Model {
        @Column var name: String = ""
        @Column var count: Int = 0
    }

    final class DerivedSheet: OpenSheet {
        @Column var extra: String = ""
    }

    /// More columns than one word of the bitmap holds.
    final class WideSheet: Model {
        @Column var c0: Int = 0
        @Column var c1: Int = 0
        @Column var c2: Int = 0
        @Column var c3: Int = 0
        @Column var c4: Int = 0
        @Column var c5: Int = 0
        @Column var c6: Int = 0
        @Column var c7: Int = 0
        @Column var c8: Int = 0
        @Column var c9: Int = 0
        @Column var c10: Int = 0
        @Column var c11: Int = 0
        @Column var c12: Int = 0
        @Column var c13: Int = 0
        @Column var c14: Int = 0
        @Column var c15: Int = 0
        @Column var c16: Int = 0
        @Column var c17: Int = 0
        @Column var c18: Int = 0
        @Column var c19: Int = 0
        @Column var c20: Int = 0
        @Column var c21: Int = 0
        @Column var c22: Int = 0
        @Column var c23: Int = 0
        @Column var c24: Int = 0
        @Column var c25: Int = 0
        @Column var c26: Int = 0
        @Column var c27: Int = 0
        @Column var c28: Int = 0
        @Column var c29: Int = 0
        @Column var c30: Int = 0
        @Column var c31: Int = 0
        @Column var c32: Int = 0
        @Column var c33: Int = 0
        @Column var c34: Int = 0
        @Column var c35: Int = 0
        @Column var c36: Int = 0
        @Column var c37: Int = 0
        @Column var c38: Int = 0
        @Column var c39: Int = 0
        @Column var c40: Int = 0
        @Column var c41: Int = 0
        @Column var c42: Int = 0
        @Column var c43: Int = 0
        @Column var c44: Int = 0
        @Column var c45: Int = 0
        @Column var c46: Int = 0
        @Column var c47: Int = 0
        @Column var c48: Int = 0
        @Column var c49: Int = 0
        @Column var c50: Int = 0
        @Column var c51: Int = 0
        @Column var c52: Int = 0
        @Column var c53: Int = 0
        @Column var c54: Int = 0
        @Column var c55: Int = 0
        @Column var c56: Int = 0
        @Column var c57: Int = 0
        @Column var c58: Int = 0
        @Column var c59: Int = 0
        @Column var c60: Int = 0
        @Column var c61: Int = 0
        @Column var c62: Int = 0
        @Column var c63: Int = 0
        @Column var c64: Int = 0
        @Column var c65: Int = 0
        @Column var c66: Int = 0
        @Column var c67: Int = 0
        @Column var c68: Int = 0
        @Column var c69: Int = 0
    }

    private static func sheet() throws -> ColumnSheet {
        let made = try ColumnSheet.create([
            "title": "t", "pages": 1, "ratio": 0.5, "note": "n", "tags": ["a"], "blob": Data([1, 2]),
        ])
        return try #require(try ColumnSheet.find(made.id!))
    }

    @Test(arguments: TestEngine.all) func aWriteKeepsOnlyItsColumnsOriginal(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let sheet = try Self.sheet()
            sheet.pages = 2
            #expect(sheet.capturedColumns == [1])
            sheet.pages = 3  // the original stays the loaded value
            sheet.tags.append("b")  // in place
            #expect(sheet.capturedColumns == [1, 4])
            #expect(sheet.changes == [
                ColumnChange(column: "pages", old: .integer(1), new: .integer(3)),
                ColumnChange(column: "tags", old: .text(#"["a"]"#), new: .text(#"["a","b"]"#)),
            ])
            let recorder = SQLRecorder(db)
            try sheet.save()
            #expect(recorder.all.filter { $0.hasPrefix("UPDATE") } == [
                #"UPDATE "ColumnSheet" SET "pages" = ?, "tags" = ?, "updatedAt" = ? WHERE "id" = ?"#,
            ])
            // Saved: the originals are the values again, none kept.
            #expect(!sheet.hasChanges && sheet.capturedColumns.isEmpty && !sheet.originalsCaptured)
            sheet.note = nil
            #expect(sheet.changes == [ColumnChange(column: "note", old: .text("n"), new: .null)])
            let stored = try #require(try ColumnSheet.find(sheet.id!))
            #expect(stored.pages == 3 && stored.tags == ["a", "b"] && stored.title == "t")
        }
    }

    @Test(arguments: TestEngine.all) func aColumnWrittenBackToItsOriginalIsNoChange(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let sheet = try Self.sheet()
            sheet.title = "other"
            sheet.title = "t"
            sheet.blob = Data([1, 2])  // equal bytes, another buffer
            #expect(sheet.capturedColumns == [0, 5] && !sheet.hasChanges)
            let recorder = SQLRecorder(db)
            try sheet.save()
            #expect(recorder.all.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func aRollbackBringsTheSavedColumnsChangeBack(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let sheet = try Self.sheet()
            let outcome = try db.transaction {
                sheet.ratio = 4
                sheet.title = "x"
                try sheet.save()
                #expect(!sheet.hasChanges && !sheet.originalsCaptured)
                sheet.title = "y"  // written again after the save, before the rollback
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            #expect(sheet.changes == [
                ColumnChange(column: "title", old: .text("t"), new: .text("y")),
                ColumnChange(column: "ratio", old: .real(0.5), new: .real(4)),
            ])
            sheet.revertChanges()
            #expect(sheet.title == "t" && sheet.ratio == 0.5 && !sheet.originalsCaptured)
            try sheet.save()
            #expect(try ColumnSheet.find(sheet.id!)?.title == "t")
        }
    }

    @Test(arguments: TestEngine.all) func settingByNameAndReloadingKeepTheRightOriginals(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let sheet = try Self.sheet()
            try sheet.set(["note": "m"])
            #expect(sheet.capturedColumns == [3])
            #expect(sheet.changes == [ColumnChange(column: "note", old: .text("n"), new: .text("m"))])
            sheet.pages = 9
            try sheet.reload()
            #expect(sheet.note == "n" && sheet.pages == 1 && !sheet.originalsCaptured && !sheet.hasChanges)
        }
    }

    @Test(arguments: TestEngine.all) func aNewRecordStillChangesAgainstItsDefaults(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let sheet = ColumnSheet()
            sheet.pages = 4
            #expect(sheet.originalsState == .defaults && sheet.extras == nil)
            #expect(sheet.changes == [ColumnChange(column: "pages", old: .integer(0), new: .integer(4))])
            try sheet.save()
            #expect(!sheet.originalsCaptured)
            sheet.pages = 5
            #expect(sheet.capturedColumns == [1])
        }
    }

    @Test(arguments: TestEngine.all) func subclassColumnsAndCheckedAccessesFindTheirColumn(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let made = DerivedSheet()
            made.name = "n"
            made.extra = "e"
            try made.save()
            let sheet = try #require(try DerivedSheet.find(made.id!))
            sheet.extra = "f"
            #expect(sheet.capturedColumns == [2])
            sheet.count += 1
            #expect(sheet.capturedColumns == [1, 2])
            let recorder = SQLRecorder(db)
            try sheet.save()
            #expect(recorder.all.filter { $0.hasPrefix("UPDATE") } == [
                #"UPDATE "DerivedSheet" SET "count" = ?, "extra" = ?, "updatedAt" = ? WHERE "id" = ?"#,
            ])
            let stored = try #require(try DerivedSheet.find(made.id!))
            #expect(stored.extra == "f" && stored.count == 1 && stored.name == "n")
        }
    }

    /// One column of plain bytes changed: its original is kept in the record, no extras.
    final class ColumnGauge: Model, Validating {
        @Column var level: Double = 0
        @Column var on: Bool = false
        @Column var at: Date = Date(timeIntervalSince1970: 0)
        @Column var label: String = "g"
        static let validations = Validations(for: ColumnGauge.self) { $0.presence(\.label) }
    }

    private static func gauge() throws -> ColumnGauge {
        let made = ColumnGauge()
        made.level = 1
        made.on = true
        try made.save()
        return try #require(try ColumnGauge.find(made.id!))
    }

    @Test(arguments: TestEngine.all) func aOneNumberChangeIsKeptInTheRecordAndRollsBack(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let gauge = try Self.gauge()
            gauge.level += 1
            #expect(gauge.originalsState == .inline && gauge.extras == nil && gauge.capturedColumns == [0])
            #expect(gauge.changes == [ColumnChange(column: "level", old: .real(1), new: .real(2))])
            let outcome = try db.transaction {
                try gauge.save()
                #expect(!gauge.hasChanges && gauge.originalsState == .none)
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            #expect(gauge.originalsState == .inline && gauge.extras == nil)
            #expect(gauge.changes == [ColumnChange(column: "level", old: .real(1), new: .real(2))])
            try gauge.save()
            #expect(try ColumnGauge.find(gauge.id!)?.level == 2)
            gauge.on = false
            gauge.revertChanges()
            #expect(gauge.on && !gauge.hasChanges && !gauge.originalsCaptured)
        }
    }

    @Test(arguments: TestEngine.all) func aSecondChangeOrValidationErrorsMoveTheOriginalToTheExtras(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let gauge = try Self.gauge()
            gauge.at = Date(timeIntervalSince1970: 5)
            #expect(gauge.originalsState == .inline)
            gauge.on = false
            #expect(gauge.originalsState == .aside && gauge.capturedColumns == [1, 2])
            #expect(gauge.changes.map(\.column) == ["on", "at"])
            let other = try Self.gauge()
            other.level = 7
            other.label = ""  // a string: kept in the extras, with the number moved there
            #expect(other.capturedColumns == [0, 3])
            let third = try Self.gauge()
            third.level = 8
            #expect(third.isValid && third.originalsState == .inline)  // no failures: nothing to keep
            third.label = ""
            #expect(throws: ActiveRecordError.self) { try third.save() }
            #expect(third.errors.map(\.property) == ["label"] && third.extras != nil)
            #expect(third.changes == [
                ColumnChange(column: "level", old: .real(1), new: .real(8)),
                ColumnChange(column: "label", old: .text("g"), new: .text("")),
            ])
            third.label = "h"
            try third.save()
            let stored = try #require(try ColumnGauge.find(third.id!))
            #expect(stored.level == 8 && stored.label == "h" && !third.hasChanges)
            stored.level = 3
            try stored.reload()
            #expect(stored.level == 8 && !stored.originalsCaptured)
        }
    }

    /// The column an original is kept in place for, beside the originals' state, takes no
    /// room: a record's bookkeeping is still four words before its first column (object
    /// header, row header with the state and the column in its padding, mapping, extras).
    @Test func theInlineOriginalTakesNoRoomInTheRecord() throws {
        #expect(try ColumnSheet.mapping().fields.map(\.valueOffset).min() == 64)
    }

    @Test(arguments: TestEngine.all) func aColumnBeyondTheFirstWordOfTheBitmap(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let made = WideSheet()
            made.c1 = 1
            made.c69 = 69
            try made.save()
            let wide = try #require(try WideSheet.find(made.id!))
            wide.c68 = 68
            wide.c2 = 2
            #expect(wide.capturedColumns == [2, 68])
            #expect(wide.changes.map(\.column) == ["c2", "c68"])
            let recorder = SQLRecorder(db)
            try wide.save()
            #expect(recorder.all.filter { $0.hasPrefix("UPDATE") } == [
                #"UPDATE "WideSheet" SET "c2" = ?, "c68" = ?, "updatedAt" = ? WHERE "id" = ?"#,
            ])
            #expect(!wide.originalsCaptured)
            let stored = try #require(try WideSheet.find(made.id!))
            #expect(stored.c1 == 1 && stored.c2 == 2 && stored.c68 == 68 && stored.c69 == 69)
        }
    }
}
