@_spi(Engines) import ARCore
import ActiveRecord
import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension EngineConformance {
    /// Binding and reading values: every ``DatabaseValue`` kind goes in and comes out as it was.
    static let valueChecks: [Check] = [
        check("valuesRoundTrip", "every DatabaseValue kind binds and reads back unchanged, through value(_:) and the typed getters") { c in
            try c.createTable("values", [("i", .integer, ""), ("r", .real, ""), ("t", .text, ""), ("b", .blob, "")])
            for (column, values) in sampleValues {
                for value in values {
                    let id = try c.insert(into: "values", [column: value])
                    try c.withConnection { connection in
                        try connection.withStatement("SELECT \(column.quotedIdentifier) FROM \"values\" WHERE \"id\" = ?", [.integer(id)]) { row in
                            guard try row.step() else { return c.fail("\(column) \(value.shortDescription): the row is not there") }
                            c.expect(try row.value(0), value, "\(column) \(value.shortDescription) through value(_:)")
                            c.expect(row.isNull(0), value == .null, "\(column) \(value.shortDescription): isNull")
                            switch value {
                            case .null: break
                            case .integer(let integer): c.expect(row.int64(0), integer, "int64(_:)")
                            case .real(let real): c.expect(row.double(0), real, "double(_:)")
                            case .text(let text): c.expect(row.string(0), text, "string(_:) of \(value.shortDescription)")
                            case .blob(let bytes): c.expect(row.data(0), bytes, "data(_:) of \(value.shortDescription)")
                            }
                        }
                    }
                }
            }
        },
        check("valuesCompareWhenBound", "a bound value matches the stored one in a WHERE clause, at the extremes too") { c in
            try c.createTable("values", [("i", .integer, ""), ("r", .real, ""), ("t", .text, ""), ("b", .blob, "")])
            for (column, values) in sampleValues {
                for value in values where value != .null {
                    let id = try c.insert(into: "values", [column: value])
                    let found = try c.rows("SELECT \"id\" FROM \"values\" WHERE \(column.quotedIdentifier) = ?", [value])
                    c.expect(found.map { $0[0] }, [.integer(id)], "\(column) = \(value.shortDescription)")
                    try c.execute("DELETE FROM \"values\"")
                }
            }
            // NULL is nothing's equal, bound or not.
            try c.insert(into: "values", ["i": .null])
            c.expect(try c.rows("SELECT \"id\" FROM \"values\" WHERE \"i\" = ?", [.null]).count, 0, "i = NULL")
            c.expect(try c.rows("SELECT \"id\" FROM \"values\" WHERE \"i\" IS NULL").count, 1, "i IS NULL")
        },
        check("resultColumns", "after a step, columnCount and columnName(_:) describe the result") { c in
            try c.createTable("columns", [("first", .integer, ""), ("Second Name", .text, "")])
            try c.insert(into: "columns", ["first": .integer(1), "Second Name": .text("x")])
            try c.withConnection { connection in
                try connection.withStatement(#"SELECT "id", "first", "Second Name" AS "Alias é" FROM "columns""#) { row in
                    c.expect(try row.step(), true, "a row")
                    c.expect(row.columnCount, 3, "columnCount")
                    c.expect((0..<row.columnCount).map { row.columnName($0) }, ["id", "first", "Alias é"], "columnName(_:)")
                    c.expect(try row.step(), false, "one row only")
                }
            }
        },
        check("statementReuse", "a statement reset and bound again runs again with the new values") { c in
            try c.createTable("reuse", [("n", .integer, "")])
            try c.withConnection { connection in
                let statement = try connection.prepare(c.dialect.insertSQL(into: "reuse", columns: ["n"]))
                var ids: [Int64] = []
                for n in 1...3 {
                    try statement.bind(.integer(Int64(n * 10)), at: 1)
                    ids.append(try statement.insert())
                    statement.reset()
                }
                c.expect(ids, [1, 2, 3], "the ids of three inserts through one statement")
            }
            c.expect(try c.rows(#"SELECT "n" FROM "reuse" ORDER BY "id""#).map { $0[0] }, [.integer(10), .integer(20), .integer(30)], "the rows")
        },
    ]

    /// Values of each storage class, their extremes and awkward cases first, by column.
    static let sampleValues: [(String, [DatabaseValue])] = [
        ("i", [.integer(0), .integer(1), .integer(-1), .integer(.min), .integer(.max), .integer(Int64(Int32.max) + 1), .null]),
        ("r", [.real(0), .real(1.5), .real(-2.25), .real(.greatestFiniteMagnitude), .real(-.greatestFiniteMagnitude),
               .real(.leastNormalMagnitude), .real(1.0 / 3), .real(12_345_678_901.25), .null]),
        ("t", [.text(""), .text("plain"), .text("héllo — ✓ 🎉 日本語 ﬁ"), .text("quotes ' \" \\ % _ ? $1 :name"),
               .text("line\nbreak\ttab\r"), .text(String(repeating: "long é ", count: 3_000)), .null]),
        ("b", [.blob(Data()), .blob(Data([0])), .blob(Data(0...255)), .blob(Data(repeating: 0xA5, count: 70_000)), .null]),
    ]
}

extension DatabaseValue {
    /// The value for a message: long text and bytes shortened.
    var shortDescription: String {
        switch self {
        case .text(let text) where text.count > 40: "text of \(text.count) characters"
        case .blob(let bytes): "blob of \(bytes.count) bytes"
        default: description
        }
    }
}
