@_spi(Engines) import ARCore
import ActiveRecord
import Testing

extension EngineConformance {
    /// Errors: constraint failures recognisable by kind, and a statement timeout.
    static let errorChecks: [Check] = [
        check("constraintErrors", "a failed constraint throws .constraint, recognisable by its kind (unique, not null, check, foreign key)") { c in
            try c.createTable("parents", [("name", .text, "")])
            try c.createTable("children", [
                ("code", .text, "UNIQUE"), ("label", .text, "NOT NULL"), ("size", .integer, "CHECK (\"size\" > 0)"),
                ("parentId", .integer, #"REFERENCES "parents"("id")"#),
            ])
            let parent = try c.insert(into: "parents", ["name": .text("p")])
            let good: [String: DatabaseValue] = ["code": .text("a"), "label": .text("l"), "size": .integer(1), "parentId": .integer(parent)]
            try c.insert(into: "children", good)
            func violation(_ what: String, _ kind: KeyPath<ActiveRecordError, Bool>, _ changes: [String: DatabaseValue]) {
                let error = c.expectError(what, matching: { $0.code == .constraint && $0[keyPath: kind] }) {
                    try c.insert(into: "children", good.merging(changes) { $1 })
                }
                guard let error else { return }
                let kinds = [error.isUniqueViolation, error.isNotNullViolation, error.isCheckViolation, error.isForeignKeyViolation]
                c.expect(kinds.filter { $0 }.count, 1, "\(what): exactly one kind recognised")
            }
            violation("a duplicate in a UNIQUE column", \.isUniqueViolation, [:])
            violation("NULL in a NOT NULL column", \.isNotNullViolation, ["code": .text("b"), "label": .null])
            violation("a value a CHECK refuses", \.isCheckViolation, ["code": .text("c"), "size": .integer(0)])
            violation("a reference to no row", \.isForeignKeyViolation, ["code": .text("d"), "parentId": .integer(99)])
            c.expect(try c.scalar(#"SELECT count(*) FROM "children""#), .integer(1), "no failed row was written")
        },
        check("deferredForeignKeyAtCommit", "a deferred foreign key (the library's belongs-to columns) fails the commit, recognisably, and nothing is committed") { c in
            try c.createTable("parents", [("name", .text, "")])
            try c.createTable("children", [("parentId", .integer, #"REFERENCES "parents"("id") DEFERRABLE INITIALLY DEFERRED"#)])
            c.expectError("the commit of a dangling reference", matching: \.isForeignKeyViolation) {
                try c.database.transaction {
                    try c.insert(into: "children", ["parentId": .integer(7)])
                    // Deferred: the row is accepted until the commit, and may be fixed meanwhile.
                    try c.insert(into: "children", ["parentId": .integer(8)])
                }
            }
            c.expect(try c.scalar(#"SELECT count(*) FROM "children""#), .integer(0), "nothing committed")
            try c.database.transaction {
                try c.insert(into: "children", ["parentId": .integer(1)])
                try c.insert(into: "parents", ["name": .text("made after its child")])
            }
            c.expect(try c.scalar(#"SELECT count(*) FROM "children""#), .integer(1), "a reference fixed before the commit")
        },
        check("statementTimeout", "a statement over its timeout fails with .timeout, soon, and the connection goes on") { c in
            let start = ContinuousClock.now
            c.expectError("an endless query under a 100 ms limit", matching: { $0.code == .timeout }) {
                try c.database.withStatementTimeout(.milliseconds(100)) { _ = try c.rows(endlessQuery) }
            }
            let took = start.duration(to: .now)
            c.expect(took < .seconds(3), "the timeout took \(took)")
            c.expect(try c.scalar("SELECT 1"), .integer(1), "a statement after the timeout")
            // In a transaction: the engine says whether the transaction survived, and the library
            // ends it either way.
            try c.createTable("ledger", [("n", .integer, "")])
            _ = try? c.database.transaction {
                try c.insert(into: "ledger", ["n": .integer(1)])
                try c.database.withStatementTimeout(.milliseconds(100)) { _ = try c.rows(endlessQuery) }
            }
            c.expect(try c.withConnection { $0.hasOpenTransaction }, false, "no transaction left open after the timeout")
            c.expect(try c.scalar(#"SELECT count(*) FROM "ledger""#), .integer(0), "the transaction that timed out is rolled back")
        },
    ]

    /// A query that runs for minutes on any engine with recursive common table expressions.
    static let endlessQuery = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c"
}
