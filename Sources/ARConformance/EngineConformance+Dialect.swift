@_spi(Engines) import ARCore
import ActiveRecord
import Testing

extension EngineConformance {
    /// What the dialect's SQL means when the engine runs it: the same on every engine.
    static let dialectChecks: [Check] = [
        check("likeMeaning", "like() has one meaning on every engine: % and _, ASCII letters without case, other letters with case, no escape unless given, any value as text") { c in
            try c.createTable("words", [("w", .text, ""), ("n", .integer, "")])
            let words = ["Apple", "apple pie", "APPLE", "Épée", "épée", "100%", "10x", #"a\b"#, "axb"]
            for word in words { try c.insert(into: "words", ["w": .text(word)]) }
            try c.insert(into: "words", ["n": .integer(123)])
            func matches(_ pattern: String, escape: String? = nil, negated: Bool = false, column: String = "w") throws -> [String] {
                let condition = c.dialect.like(column.quotedIdentifier, "?", escape: escape, negated: negated)
                return try c.rows(#"SELECT "w", "n" FROM "words" WHERE "# + condition + #" ORDER BY "id""#, [.text(pattern)]).map {
                    $0[0].textValue ?? $0[1].description
                }
            }
            c.expect(try matches("apple%"), ["Apple", "apple pie", "APPLE"], "ASCII letters without case")
            c.expect(try matches("épée"), ["épée"], "other letters with case")
            c.expect(try matches("ÉPÉE"), [], "other letters with case, upper")
            c.expect(try matches("10_"), ["10x"], "_ is one character")
            c.expect(try matches(#"100!%"#, escape: "'!'"), ["100%"], "an escaped % is itself")
            c.expect(try matches(#"a\b"#), [#"a\b"#], "a backslash is no escape when none is given")
            c.expect(try matches("%e%", negated: true), ["100%", "10x", #"a\b"#, "axb"], "NOT LIKE (NULL matches neither)")
            c.expect(try matches("12%", column: "n"), ["123"], "an integer compared as text")
        },
        check("equalsIgnoringASCIICase", "equalsIgnoringASCIICase() matches ASCII letters without case and other letters with case") { c in
            try c.createTable("words", [("w", .text, "")])
            for word in ["Apple", "APPLE", "apple pie", "Épée", "épée"] { try c.insert(into: "words", ["w": .text(word)]) }
            func matches(_ value: String) throws -> [DatabaseValue] {
                try c.rows(#"SELECT "w" FROM "words" WHERE "# + c.dialect.equalsIgnoringASCIICase(#""w""#) + #" ORDER BY "id""#,
                           [.text(value)]).map { $0[0] }
            }
            c.expect(try matches("aPPle"), [.text("Apple"), .text("APPLE")], "ASCII")
            c.expect(try matches("épée"), [.text("épée")], "other letters")
            c.expect(try matches("ÉPÉE"), [], "other letters, upper")
        },
        check("orderTermNulls", "orderTerm() puts NULLs first when ascending, last when descending") { c in
            try c.createTable("ranked", [("n", .integer, ""), ("t", .text, "")])
            for n in [2, nil, 1] as [Int64?] {
                try c.insert(into: "ranked", ["n": n.map { .integer($0) } ?? .null, "t": n.map { .text("\($0)") } ?? .null])
            }
            for column in ["n", "t"] {
                let ascending = try c.rows(#"SELECT "n" FROM "ranked" ORDER BY "# + c.dialect.orderTerm(column.quotedIdentifier, ascending: true))
                c.expect(ascending.map { $0[0] }, [.null, .integer(1), .integer(2)], "ascending by \(column)")
                let descending = try c.rows(#"SELECT "n" FROM "ranked" ORDER BY "# + c.dialect.orderTerm(column.quotedIdentifier, ascending: false))
                c.expect(descending.map { $0[0] }, [.integer(2), .integer(1), .null], "descending by \(column)")
            }
        },
        check("aggregateMeanings", "aggregate(): count, min, max as they are; sum an integer for integers; avg and total doubles; total 0 for no rows") { c in
            try c.createTable("amounts", [("i", .integer, ""), ("r", .real, ""), ("t", .text, "")])
            func aggregate(_ function: String, _ column: String, where condition: String = "1 = 1") throws -> DatabaseValue {
                let expression = column == "*" ? "*" : column.quotedIdentifier
                return try c.scalar(#"SELECT "# + c.dialect.aggregate(function, expression) + #" FROM "amounts" WHERE "# + condition)
            }
            for (function, column) in [("count", "*"), ("sum", "i"), ("avg", "i"), ("total", "i"), ("min", "i"), ("max", "r")] {
                let expected: DatabaseValue = switch function {
                case "count": .integer(0)
                case "total": .real(0)
                default: .null
                }
                c.expect(try aggregate(function, column), expected, "\(function)(\(column)) of no rows")
            }
            try c.insert(into: "amounts", ["i": .integer(1), "r": .real(1.5), "t": .text("b")])
            try c.insert(into: "amounts", ["i": .integer(2), "r": .real(2.5), "t": .text("a")])
            try c.insert(into: "amounts", ["i": .null, "r": .null])
            c.expect(try aggregate("count", "*"), .integer(3), "count(*)")
            c.expect(try aggregate("count", "i"), .integer(2), "count(i), NULLs left out")
            c.expect(try aggregate("sum", "i"), .integer(3), "sum of integers")
            c.expect(try aggregate("sum", "r"), .real(4), "sum of reals")
            c.expect(try aggregate("avg", "i"), .real(1.5), "avg of integers")
            c.expect(try aggregate("avg", "r"), .real(2), "avg of reals")
            c.expect(try aggregate("total", "i"), .real(3), "total of integers")
            c.expect(try aggregate("total", "i", where: #""i" IS NULL"#), .real(0), "total of NULLs")
            c.expect(try aggregate("sum", "i", where: #""i" IS NULL"#), .null, "sum of NULLs")
            c.expect(try aggregate("min", "i"), .integer(1), "min of integers")
            c.expect(try aggregate("max", "r"), .real(2.5), "max of reals")
            c.expect(try aggregate("min", "t"), .text("a"), "min of texts")
        },
        check("sameName", "sameName() says whether the engine takes two spellings of a quoted name for one table or column") { c in
            try c.createTable("CaseTable", [("Title", .text, "")])
            try c.createTable("Étude", [("n", .integer, "")])
            for (table, other) in [("CaseTable", "casetable"), ("CaseTable", "CASETABLE"), ("Étude", "étude")] {
                let found = (try? c.rows("SELECT count(*) FROM \(other.quotedIdentifier)")) != nil
                c.expect(c.dialect.sameName(table, other), found, "sameName(\(table), \(other)) against the engine finding the table")
            }
            let found = (try? c.rows(#"SELECT "title" FROM "CaseTable""#)) != nil
            c.expect(c.dialect.sameName("Title", "title"), found, "sameName(Title, title) against the engine finding the column")
            c.expect(c.dialect.sameName("CaseTable", "CaseTable"), true, "a name is its own")
        },
    ]
}
