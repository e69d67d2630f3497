import Foundation
import Testing

@testable import ActiveRecord

/// A model whose columns take every kind of parameter, some optional, so that one cached
/// statement runs with changing parameter types (a `REAL` or a blob in one run, `NULL` in
/// the next).
final class PathRecord: Model {
    @Column var label: String = ""
    @Column var note: String? = nil
    @Column var ratio: Double? = nil
    @Column var blob: Data? = nil
    @Column var count: Int = 0
}

/// The per-statement write path (issue 35, point 2): parameters laid out in one pass for the
/// prepared form a statement ran with last (again for another form when the parameter types
/// changed), the NUL check inside that pass, the changed-row count read where the form's last
/// command tag put it, and a `DELETE` by id run and cleared in one call.
@Suite struct StatementPathTests {
    /// One cached `INSERT` run with parameter types that change from one save to the next (a
    /// `REAL` or `NULL`, a blob or `NULL`, text or `NULL`): each record reads back exactly as
    /// saved, whichever form of the statement ran before it.
    @Test(arguments: TestEngine.all) func alternatingParameterTypesKeepEveryValue(_ engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            var saved: [(Int64, String, String?, Double?, Data?, Int)] = []
            try db.transaction {
                for index in 0..<12 {
                    let record = PathRecord()
                    record.label = "label \(index)"
                    record.note = index % 2 == 0 ? nil : "note \(index)"
                    record.ratio = index % 3 == 0 ? nil : Double(index) / 4
                    record.blob = index % 4 == 1 ? nil : Data([UInt8(index), 0, 255])
                    record.count = index * 1_000_003
                    try record.save()
                    saved.append((record.id!, record.label, record.note, record.ratio, record.blob, record.count))
                }
            }
            for (id, label, note, ratio, blob, count) in saved {
                let copy = try #require(try PathRecord.find(id))
                #expect(copy.label == label && copy.note == note && copy.ratio == ratio && copy.blob == blob)
                #expect(copy.count == count)
            }
            // Updates of one column alternate between a value and NULL on one statement too.
            for (offset, (id, _, _, _, _, _)) in saved.enumerated() {
                let record = try #require(try PathRecord.find(id))
                record.ratio = offset % 2 == 0 ? 1.5 : nil
                try record.save()
                #expect(try PathRecord.find(id)?.ratio == (offset % 2 == 0 ? 1.5 : nil))
            }
        }
    }

    /// A text holding a NUL is refused before anything is sent, with the error naming the
    /// parameter, on the first run of a statement and on a later one (the form run last known);
    /// the statement then runs again with valid text.
    @Test func aNulInTextIsRefusedOnAnyRunOfAStatement() throws {
        guard TestEngine.postgresConnection != nil else { return }
        try withDatabase(.postgres) { db throws in
            let first = PathRecord()
            first.label = "a\0b"
            let refused = expectError(.invalidValue) { try first.save() }
            // Parameters: createdAt, updatedAt, then label (3).
            #expect(refused?.message.contains("cannot hold a NUL character (parameter 3)") == true)
            #expect(first.isNewRecord)
            try db.transaction {
                for index in 0..<3 {
                    let record = PathRecord()
                    record.label = "fine \(index)"
                    try record.save()
                }
            }
            let later = PathRecord()
            later.label = "ok"
            later.note = "x\0"
            let error = expectError(.invalidValue) { try later.save() }
            #expect(error?.message.contains("cannot hold a NUL character (parameter 4)") == true)
            #expect(later.isNewRecord)
            later.note = "x"
            try later.save()
            #expect(try PathRecord.count() == 4)
            #expect(try PathRecord.find(later.id!)?.note == "x")
        }
    }

    /// `delete(id:)` says whether a row went, each time, from one cached statement: a row there,
    /// one already gone, one there again (the count read from where the last tag put it, and
    /// found again when a tag differs).
    @Test(arguments: TestEngine.all) func deleteByIDSaysWhetherEachRowWent(_ engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            var ids: [Int64] = []
            for index in 0..<4 {
                let record = PathRecord()
                record.label = "\(index)"
                try record.save()
                ids.append(record.id!)
            }
            #expect(try PathRecord.delete(id: ids[0]) == true)
            #expect(try PathRecord.delete(id: ids[0]) == false)
            #expect(try PathRecord.delete(id: 999_999) == false)
            #expect(try PathRecord.delete(id: ids[1]) == true)
            try db.transaction { () throws in
                #expect(try PathRecord.delete(id: ids[2]) == true)
                #expect(try PathRecord.delete(id: ids[2]) == false)
            }
            #expect(try PathRecord.count() == 1)
        }
    }

    /// The rows an `UPDATE` changed, one digit or several, from one statement run again: each
    /// count is its own run's (a count read from the previous tag's offset would be cut short
    /// or run on).
    @Test(arguments: TestEngine.all) func changedRowCountsOfEveryWidth(_ engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.transaction {
                for index in 0..<125 {
                    let record = PathRecord()
                    record.label = "row"
                    record.count = index
                    try record.save()
                }
            }
            for (limit, expected) in [(3, 3), (125, 125), (12, 12), (0, 0), (7, 7), (100, 100)] {
                let changed = try PathRecord.query().where("count", .lessThan(limit)).updateAll(["note": "n\(limit)"])
                #expect(changed == expected, "UPDATE of rows with count < \(limit)")
            }
            for (limit, expected) in [(100, 100), (5, 0), (101, 1), (125, 24)] {
                #expect(try PathRecord.query().where("count", .lessThan(limit)).deleteAll() == expected)
            }
        }
    }
}
