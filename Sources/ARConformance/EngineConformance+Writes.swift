@_spi(Engines) import ARCore
import ActiveRecord
import Testing

extension EngineConformance {
    /// Inserts, upserts and the count of changed rows.
    static let writeChecks: [Check] = [
        check("insertReturnsIds", "insert() runs the dialect's INSERT and returns the new row's id, 1 then 2 in a new table") { c in
            try c.createTable("notes", [("title", .text, "")])
            let first = try c.insert(into: "notes", ["title": .text("a")])
            let second = try c.insert(into: "notes", ["title": .text("b")])
            c.expect([first, second], [1, 2], "the ids")
            c.expect(try c.rows(#"SELECT "id", "title" FROM "notes" ORDER BY "id""#),
                     [[.integer(1), .text("a")], [.integer(2), .text("b")]], "the rows")
        },
        check("insertIgnoringConflicts", "insertIgnoringConflictsSQL inserts a new row and skips one whose unique key exists, changing no row") { c in
            try c.createTable("tags", [("name", .text, "UNIQUE")])
            try c.withConnection { connection in
                let sql = c.dialect.insertIgnoringConflictsSQL(into: "tags", columns: ["name"])
                try connection.execute(sql, [.text("swift")])
                c.expect(connection.changedRowCount, 1, "changedRowCount after a new row")
                try connection.execute(sql, [.text("swift")])
                c.expect(connection.changedRowCount, 0, "changedRowCount after a conflicting row")
            }
            c.expect(try c.scalar(#"SELECT count(*) FROM "tags""#), .integer(1), "rows")
        },
        check("upsertTellsInsertFromUpdate", "upsert() says true for an inserted row, false for an updated one, and leaves the returned columns readable") { c in
            try c.createTable("stock", [("sku", .text, "UNIQUE"), ("count", .integer, "")])
            func upsert(_ sku: String, _ count: Int64, updating: [String] = ["count"]) throws -> (Bool, [DatabaseValue]) {
                let sql = c.dialect.upsertSQL(
                    into: "stock", columns: ["sku", "count"], conflictColumns: ["sku"], updateColumns: updating, returning: ["id", "count"])
                return try c.withConnection { connection in
                    try connection.withStatement(sql, [.text(sku), .integer(count)]) { statement in
                        let inserted = try statement.upsert()
                        return (inserted, [try statement.value(0), try statement.value(1)])
                    }
                }
            }
            let (inserted, row) = try upsert("A-1", 1)
            c.expect(inserted, true, "the first upsert inserts")
            c.expect(row, [.integer(1), .integer(1)], "the inserted row's returned columns")
            let (insertedAgain, updated) = try upsert("A-1", 5)
            c.expect(insertedAgain, false, "the second upsert of the same key updates")
            c.expect(updated, [.integer(1), .integer(5)], "the updated row's returned columns")
            let (_, other) = try upsert("B-2", 2)
            c.expect(other[0] != .integer(1), true, "another key is a new row")
            // Nothing to update: the row is returned as it is, still as an update.
            let (insertedNothing, kept) = try upsert("A-1", 9, updating: [])
            c.expect(insertedNothing, false, "an upsert that updates no column still finds the row")
            c.expect(kept, [.integer(1), .integer(5)], "the row left as it was")
        },
        check("changedRowCount", "changedRowCount is the number of rows the last INSERT, UPDATE or DELETE changed") { c in
            try c.createTable("counted", [("n", .integer, "")])
            for n in 1...5 { try c.insert(into: "counted", ["n": .integer(Int64(n))]) }
            try c.withConnection { connection in
                try connection.execute(#"UPDATE "counted" SET "n" = "n" + 10 WHERE "n" <= ?"#, [.integer(3)])
                c.expect(connection.changedRowCount, 3, "after an UPDATE of 3 rows")
                try connection.execute(#"DELETE FROM "counted" WHERE "n" > ?"#, [.integer(100)])
                c.expect(connection.changedRowCount, 0, "after a DELETE of no row")
                try connection.execute(#"DELETE FROM "counted""#)
                c.expect(connection.changedRowCount, 5, "after a DELETE of every row")
            }
        },
        check("unlimitedLimit", "the dialect's unlimited value bound to LIMIT ? means no limit, with an offset") { c in
            try c.createTable("limited", [("n", .integer, "")])
            for n in 1...5 { try c.insert(into: "limited", ["n": .integer(Int64(n))]) }
            let rows = try c.rows(#"SELECT "n" FROM "limited" ORDER BY "n" LIMIT ? OFFSET ?"#, [c.dialect.unlimited, .integer(2)])
            c.expect(rows.map { $0[0] }, [.integer(3), .integer(4), .integer(5)], "the rows after the first two")
        },
    ]
}
