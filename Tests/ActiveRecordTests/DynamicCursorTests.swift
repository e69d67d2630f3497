@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// `DynamicQuery.rowCursor()`, what the C API's ar_query_next steps: a `RowCursor` on a
/// leased reader connection, or on the writer when no reader can serve.
@Suite struct DynamicCursorTests {
    private static func numbers(_ database: Database, count: Int) throws -> DynamicModel {
        let model = DynamicModel(try TableSchema(name: "Number", columns: [ColumnSchema(name: "n", type: .integer)]))
        try database.use {
            try database.transaction {
                for n in 0..<count {
                    let record = model.makeRecord()
                    try record.set("n", .integer(Int64(n)))
                    try record.save()
                }
            }
        }
        return model
    }

    /// Runs `body` with a new database of `engine` (a file for SQLite) holding `count` numbers, current.
    private static func withNumbers(
        _ count: Int, _ engine: TestEngine = .sqlite, _ body: (Database, DynamicModel) throws -> Void
    ) throws {
        let test = try engine.makeDatabase(file: true)
        defer { test.drop() }
        let model = try numbers(test.database, count: count)
        try test.database.use { try body(test.database, model) }
    }

    private static func values(_ cursor: RowCursor) throws -> [Int64] {
        var values: [Int64] = []
        while let value = try cursor.next({ $0.int64(3) }) { values.append(value) }
        return values
    }

    @Test(arguments: TestEngine.all) func aCursorStepsTheRowsOfItsSnapshotAndGivesItsReaderBack(engine: TestEngine) throws {
        try Self.withNumbers(5, engine) { _, model in
            let query = DynamicQuery(model, where: "n >= ?", arguments: [.value(.integer(1))]).order(by: "n", ascending: false)
            let cursor = try query.rowCursor()
            #expect(try cursor.next { _ in } != nil)
            #expect(cursor.isOnReader)
            #expect(cursor.currentRow?.int64(3) == 4)
            // A write committed while the cursor is open: the cursor does not see it.
            let late = model.makeRecord()
            try late.set("n", .integer(99))
            try late.save()
            #expect(try model.count() == 6)
            #expect(try Self.values(cursor) == [3, 2, 1])
            #expect(cursor.currentRow == nil)
            #expect(try cursor.next { _ in } == nil)
        }
    }

    @Test func withoutAReaderACursorStepsOnTheWriter() throws {
        try Self.withNumbers(3) { database, model in
            let query = DynamicQuery(model)
            // Each open cursor holds a reader: the pool has four.
            var open = try (0..<4).map { _ in try query.rowCursor() }
            for cursor in open { #expect(try cursor.next { _ in } != nil && cursor.isOnReader) }
            let fifth = try query.rowCursor()
            #expect(!fifth.isOnReader && fifth.currentRow == nil)
            #expect(try Self.values(fifth) == [0, 1, 2])
            // A cursor that ran out, or was closed, gave its reader back; so does a released one.
            #expect(try Self.values(open[0]) == [1, 2])
            open[1].close()
            var more = try (0..<2).map { _ in try query.rowCursor() }
            #expect(more.allSatisfy { $0.isOnReader })
            #expect(try !query.rowCursor().isOnReader)
            #expect(try Self.values(more[0]) == [0, 1, 2])
            open.removeAll()
            more.removeAll()
            let again = try (0..<4).map { _ in try query.rowCursor() }
            #expect(again.allSatisfy { $0.isOnReader })
            #expect(try again.map { try Self.values($0).count } == [3, 3, 3, 3])
            // In a transaction the cursor must read the transaction's writes: the writer.
            try database.transaction {
                let late = model.makeRecord()
                try late.set("n", .integer(7))
                try late.save()
                let inside = try query.rowCursor()
                #expect(!inside.isOnReader)
                #expect(try Self.values(inside) == [0, 1, 2, 7])
                throw Rollback()
            }
            // In memory there are no readers.
            try withDatabase(.sqlite) { _ throws in #expect(try !DynamicQuery(DynamicModel(model.schema)).rowCursor().isOnReader) }
        }
    }
}
