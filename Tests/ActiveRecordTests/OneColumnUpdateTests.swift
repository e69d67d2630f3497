@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 35, point 5: an update of one column keeps what it needs to undo inline (no arrays
/// made per update and freed at the commit), and finds its changed column without making an
/// array. These check that it still writes only the changed columns, and that a rollback still
/// puts the record back as it was, whether one column or several changed.
@Suite("Updates: the changed columns, and their undo")
struct OneColumnUpdateTests {
    final class Gauge: Model {
        @Column var name: String = ""
        @Column var score: Double = 0
        @Column var count: Int = 0
        @Column var note: String? = nil
    }

    private static func updates(_ recorder: SQLRecorder) -> [String] {
        recorder.all.filter { $0.hasPrefix("UPDATE") }
    }

    @Test(arguments: TestEngine.all) func anUpdateWritesOnlyTheChangedColumnsAndUpdatedAt(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let gauge = try Gauge.create(["name": "g", "score": 1.5, "count": 1])
            let recorder = SQLRecorder(db)
            gauge.score = 2.5
            try gauge.save()
            gauge.count = 2
            gauge.note = "n"
            try gauge.save()
            try gauge.save()  // nothing changed: no SQL
            gauge.name = "h"
            try gauge.save()
            #expect(Self.updates(recorder) == [
                #"UPDATE "Gauge" SET "score" = ?, "updatedAt" = ? WHERE "id" = ?"#,
                #"UPDATE "Gauge" SET "count" = ?, "note" = ?, "updatedAt" = ? WHERE "id" = ?"#,
                #"UPDATE "Gauge" SET "name" = ?, "updatedAt" = ? WHERE "id" = ?"#,
            ])
            #expect(!gauge.hasChanges)
            let stored = try #require(try Gauge.find(gauge.id!))
            #expect([stored.name, "\(stored.score)", "\(stored.count)", stored.note ?? "nil"] == ["h", "2.5", "2", "n"])
        }
    }

    @Test(arguments: TestEngine.all) func aRolledBackOneColumnUpdateIsUnsavedAgain(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let gauge = try Gauge.create(["name": "g", "score": 1.5])
            let savedAt = gauge.updatedAt
            let outcome = try db.transaction {
                gauge.score = 9
                try gauge.save()
                #expect(!gauge.hasChanges)
                throw Rollback()
            }
            #expect(outcome == .rolledBack)
            // The record holds its new value, unsaved again, against the original it had.
            #expect(gauge.score == 9)
            #expect(gauge.changes == [ColumnChange(column: "score", old: .real(1.5), new: .real(9))])
            #expect(gauge.updatedAt == savedAt)
            #expect(try Gauge.find(gauge.id!)?.score == 1.5)
            try gauge.save()
            #expect(try Gauge.find(gauge.id!)?.score == 9)
        }
    }

    @Test(arguments: TestEngine.all) func aSavepointUndoesItsOwnUpdatesOnly(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let gauge = try Gauge.create(["name": "g", "score": 1, "count": 1])
            try db.transaction {
                gauge.score = 2
                try gauge.save()  // kept: the outer level commits
                try db.transaction {
                    gauge.score = 3
                    try gauge.save()  // one column, undone
                    gauge.count = 5
                    gauge.name = "x"
                    try gauge.save()  // two columns, undone
                    throw Rollback()
                }
                #expect(Set(gauge.changes.map(\.column)) == ["score", "count", "name"])
                #expect(gauge.changes.first { $0.column == "score" }?.old == .real(2))
                #expect(gauge.changes.first { $0.column == "count" }?.old == .integer(1))
            }
            let stored = try #require(try Gauge.find(gauge.id!))
            #expect([stored.score, Double(stored.count)] == [2, 1])
            #expect(stored.name == "g")
        }
    }
}
