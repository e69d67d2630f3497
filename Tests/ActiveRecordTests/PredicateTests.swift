@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

@Suite("The predicate language")
struct PredicateTests {
    @Test("grammar", arguments: TestEngine.all, [
        ("name = %@", ["John"], [3]),
        ("name == ?", ["John"], [3]),
        ("\"name\" != %@", ["John"], [1, 2, 4, 5, 6]),
        ("name <> %@ AND age < %@", ["John", 30], [2, 4, 5]),
        ("age <= 25 and age >= 20", [], [2, 4]),
        ("person.age > 40 OR Person.age < 20", [], [5, 6]),
        ("'Person'.'age' BETWEEN 20 AND 31", [], [1, 2, 4]),
        ("age NOT BETWEEN ? AND ?", [20, 31], [3, 5, 6]),
        ("name LIKE 'a%'", [], [1, 6]),
        ("name NOT LIKE %@", ["%o%"], [1, 2, 4, 6]),
        ("id IN (1, 3, %@)", [5], [1, 3, 5]),
        ("id NOT IN %@", [[1, 2, 3]], [4, 5, 6]),
        ("note IS NULL", [], [2, 4, 6]),
        ("note is not null", [], [1, 3, 5]),
        ("NOT (age > 30)", [], [2, 4, 5]),
        ("not age > 30 and not name = 'Zoe'", [], [2, 4]),
        ("(age = 25 OR age = 19) AND (name LIKE 'm%' OR name = 'Zoe')", [], [4, 5]),
        ("note = %@", [String?.none], [2, 4, 6]),
        ("note != ?", [String?.none], [1, 3, 5]),
        ("age > -1 AND age < 1e3 AND age > .5", [], [1, 2, 3, 4, 5, 6]),
        ("createdAt IS NOT NULL AND updatedAt > 0 AND id >= 6", [], [6]),
    ] as [(String, [(any ColumnValue & Sendable)?], [Int64])])
    func grammar(_ engine: TestEngine, _ example: (String, [(any ColumnValue & Sendable)?], [Int64])) throws {
        let (format, arguments, ids) = example
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let query = Person.query().where(format, arguments: try arguments.map { value in
                if let list = value as? [Int] { return .list(list.map { .integer(Int64($0)) }) }
                return .value(try value?.toSQL() ?? .null)
            })
            #expect(try query.fetch().compactMap(\.id) == ids, "\(format)")
            // The variadic form agrees.
            let variadic = arguments.count == 1 ? Person.query().where(format, arguments[0]) : arguments.count == 2
                ? Person.query().where(format, arguments[0], arguments[1]) : Person.query().where(format)
            #expect(try variadic.fetch().compactMap(\.id) == ids, "\(format)")
        }
    }

    @Test("errors point at the position", arguments: TestEngine.all, [
        ("nmae = %@", ["x"], "unknownColumn", "unknown column 'nmae' at position 1 in \"nmae = %@\"; Person's columns are: id, createdAt, updatedAt, name, age, born, note, teamId"),
        ("name = %@ and groop.id = 1", ["x"], "unknownTable", "unknown table 'groop' at position 15 in \"name = %@ and groop.id = *\"; the query has: Person"),
        ("name = %@ AND age = %@", ["x"], "invalidPredicate", "\"name = %@ AND age = %@\" has 2 placeholders but 1 argument was given"),
        ("name = %@", ["x", 2], "invalidPredicate", "\"name = %@\" has 1 placeholder but 2 arguments were given"),
        ("(name = %@", ["x"], "invalidPredicate", "unbalanced parentheses: the '(' here is never closed at position 1 in \"(name = %@\""),
        ("name = %@)", ["x"], "invalidPredicate", "unbalanced parentheses: this ')' has no matching '(' at position 10 in \"name = %@)\""),
        ("name = 'John", [], "invalidPredicate", "unterminated quote ('): no closing ' for the one at position 8 in \"name = '****\""),
        ("\"name = 1", [], "invalidPredicate", "unterminated double quote (\"): no closing \" for the one at position 1 in \"\"name = *\""),
        ("name = %d", [], "invalidPredicate", "'%' must be followed by '@' (the placeholder is %@) at position 8 in \"name = %d\""),
        ("name", [], "invalidPredicate", "expected a comparison (=, !=, <, <=, >, >=, LIKE, IN, BETWEEN, IS NULL), found the end at position 5 in \"name\""),
        ("name = ; DROP TABLE Person", [], "invalidPredicate", "unexpected character ';' at position 8 in \"name = ; DROP TABLE Person\""),
        ("age > 1 -- comment", [], "invalidPredicate", "expected AND, OR or the end, found '-' at position 9 in \"age > * -- comment\""),
        ("age > 1 /* x */", [], "invalidPredicate", "unexpected character '/' at position 9 in \"age > * /* x */\""),
        ("", [], "invalidPredicate", "the predicate is empty at position 1 in \"\""),
        ("id IN %@", [5], "invalidPredicate", "IN %@ needs an array or a set for placeholder 1, but a single value was given at position 7 in \"id IN %@\""),
        ("id = %@", [[1, 2]], "invalidPredicate", "an array or set was given for placeholder 1, which is not after IN; write 'column IN %@' to match any of its elements at position 6 in \"id = %@\""),
        ("age = %@", [UInt64.max], "invalidValue", "argument 1 in \"age = %@\": a UInt64 value above Int64.max (9223372036854775807) cannot be stored: the largest integer is 64-bit signed"),
        ("age = 99999999999999999999999999999999999999e999999", [], "invalidPredicate", "a number literal is out of range at position 7 in \"age = *********************************************\""),
        ("name = %@ AND sum(age) > 1 AND count(name) = 1 AND max(*) = 1", ["x"], "invalidPredicate", "only count takes '*' at position 56 in \"name = %@ AND sum(age) > * AND count(name) = * AND max(*) = *\""),
    ] as [(String, [(any ColumnValue & Sendable)?], String, String)])
    func errors(_ engine: TestEngine, _ example: (String, [(any ColumnValue & Sendable)?], String, String)) throws {
        let (format, arguments, code, message) = example
        try withDatabase(engine) { _ throws in
            try seedPeople()
            var query = Person.query()
            switch arguments.count {
            case 0: query = query.where(format)
            case 1: query = query.where(format, arguments[0])
            default: query = query.where(format, arguments[0], arguments[1])
            }
            let error = expectError(ActiveRecordError.Code(rawValue: code)) { _ = try query.fetch() }
            #expect(error?.message == message)
            #expect(try Person.count() == 6)
        }
    }

    @Test(arguments: TestEngine.all) func deepNestingIsAnErrorNotACrash(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let deep = String(repeating: "(", count: 100_000) + "age = 1" + String(repeating: ")", count: 100_000)
            let error = expectError(.invalidPredicate) { _ = try Person.query().where(deep).fetch() }
            #expect(error?.message.hasPrefix("nesting too deep: more than 100 levels of parentheses or NOT at position 101") == true)
            let nots = String(repeating: "NOT ", count: 100_000) + "age = 1"
            expectError(.invalidPredicate) { _ = try Person.query().where(nots).fetch() }
            // Just under the limit works.
            let fine = String(repeating: "(", count: 99) + "age = 19" + String(repeating: ")", count: 99)
            #expect(try Person.query().where(fine).fetch().map(\.name) == ["Zoe"])
            // A long flat chain is not nesting, and stays within SQLite's expression depth.
            let chain = (1...20_000).map { "age = \($0)" }.joined(separator: " OR ")
            #expect(try Person.query().where(chain).count() == 6)
        }
    }

    /// Hostile values are bound, so they match literally and run nothing.
    @Test("injection attempts in values", arguments: TestEngine.all, [
        "'; DROP TABLE Person; --",
        "x\" OR 1=1 --",
        "' OR '1'='1",
        "/* comment */ name",
        "%@ %@ ? ?",
        "Robert'); DELETE FROM Person WHERE ('1'='1",
        "nul\0byte",
        "\\'; SELECT * FROM sqlite_master; --",
        String(repeating: "x'; DROP TABLE Person; --", count: 40_000),  // ~1 MB
    ])
    func injectionInValues(_ engine: TestEngine, _ hostile: String) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            if engine == .postgres, hostile.utf8.contains(0) {
                expectError(.invalidValue) { try Person.create(["name": hostile, "age": 77]) }  // text cannot hold NUL
                #expect(try Person.count() == 6)
                return
            }
            try Person.create(["name": hostile, "age": 77])
            #expect(try Person.query().where("name = %@", hostile).fetch().map(\.age) == [77])
            #expect(try Person.query().where("name", .equal(hostile)).count() == 1)
            #expect(try Person.query().where("name IN %@ OR name = ?", [hostile], "Zoe").count() == 2)
            if hostile.utf8.count < 50_000 {  // SQLite refuses longer LIKE patterns, with an error
                #expect(try Person.query().where("name LIKE ?", hostile).count() == 1)
            }
            #expect(try Person.count() == 7)
            #expect(try db.tableNames() == ["Person"])
        }
    }

    /// Hostile format strings either parse into a parameterised SELECT or fail; the table stays intact.
    @Test("injection attempts in the format", arguments: TestEngine.all, [
        "name = 'x'; DROP TABLE Person",
        "name = 'x' -- ",
        "name = 'x' /* */",
        "1 = 1; DELETE FROM Person",
        "name = 'a' UNION SELECT sql FROM sqlite_master",
        "name = (SELECT name FROM sqlite_master)",
        "\"name\" = 'x\"; DROP TABLE Person; --'",
        "'Person'.'name'; DROP TABLE Person; --'.'x' = 1",
        "name = char(65)",
        "name = 'it''s'",
        "id = 1\0 OR 1 = 1",
        "\"na\"\"me\" = 1",
    ])
    func injectionInFormat(_ engine: TestEngine, _ format: String) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let recorder = SQLRecorder(db)
            do {
                let found = try Person.query().where(format).fetch()
                #expect(found.count <= 1)
            } catch let error as ActiveRecordError {
                #expect([.invalidPredicate, .unknownColumn, .unknownTable].contains(error.code), "\(error)")
            }
            for sql in recorder.all {
                #expect(sql.hasPrefix("SELECT "), "\(sql)")
                #expect(!sql.contains(";") && !sql.contains("--") && !sql.contains("/*"), "\(sql)")
            }
            #expect(try Person.count() == 6)
            #expect(try db.tableNames() == ["Person"])
        }
    }

    @Test(arguments: TestEngine.all) func parsingIsCachedAcrossQueries(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            for age in [19, 25, 31] {
                #expect(try Person.query().where("age = %@ AND name != %@", age, "nobody").count() >= 1)
            }
        }
    }
}
