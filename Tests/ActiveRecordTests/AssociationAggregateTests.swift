import ActiveRecord
import Foundation
import Testing

/// Issue 36, point 2: values of each owner's children (count, sum, min, max, average), owners
/// filtered by their children (`whereExists`, `whereNotExists`, `havingCount`) and ordered by
/// them (`order(byCount:)`), each in the owners' one statement, with every value bound.
@Suite("Relations: the owners' queries about their children")
struct AssociationAggregateTests {
    final class AggTeam: Model {
        @Column var title: String = ""
        @HasMany(dependency: .nullify) var members: Query<AggMember>
        @HasManyThrough(AggTeamTag.self) var tags: Query<AggTag>
    }

    final class AggMember: Model {
        @Column var name: String = ""
        @Column var age: Int = 0
        @Column var score: Double = 0
        @Column var nickname: String?
        @BelongsTo var aggTeam: AggTeam?
    }

    final class AggTag: Model {
        @Column var label: String = ""
    }

    final class AggTeamTag: Model {
        @BelongsTo var aggTeam: AggTeam?
        @BelongsTo var aggTag: AggTag?
    }

    /// A self-referencing relation: an employee's reports are employees.
    final class AggEmployee: Model {
        @Column var name: String = ""
        @BelongsTo(key: "managerId") var manager: AggEmployee?
        @HasMany(key: "managerId") var reports: Query<AggEmployee>
    }

    /// A relation whose key the children lack.
    final class AggBroken: Model {
        @Column var title: String = ""
        @HasMany(key: "nowhere") var members: Query<AggMember>
    }

    /// Teams a (members 30, 40), b (none), c (20, 25, 60), d (50).
    private static func fill() throws {
        let teams = try ["a", "b", "c", "d"].map { try AggTeam.create(["title": $0]) }
        let members: [(String, Int, Double, Int)] = [
            ("ann", 30, 1.5, 0), ("al", 40, 2.5, 0), ("cy", 20, 1, 2), ("cat", 25, 2, 2), ("cod", 60, 3.25, 2), ("dee", 50, 4, 3),
        ]
        for (name, age, score, team) in members {
            try AggMember.create(["name": name, "age": age, "score": score, "aggTeamId": teams[team].id])
        }
        try AggMember.create(["name": "loner", "age": 99])  // in no team
    }

    private func selects(_ statements: [String]) -> [String] { statements.filter { $0.hasPrefix("SELECT") } }

    @Test(arguments: TestEngine.all) func withCountReadsEveryOwnersCountInOneStatement(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            var rows: [Annotated<AggTeam>] = []
            let statements = try recorder.during { rows = try AggTeam.query().withCount(\.members).fetch() }
            #expect(statements.count == 1)
            #expect(rows.map(\.title) == ["a", "b", "c", "d"])
            #expect(rows.map { $0.count(of: \.members) } == [2, 0, 3, 1])
            // The owner itself is an ordinary record: its relation queries as usual.
            #expect(try rows[2].record.members.count() == 3)
            // With eager loading: one more statement, then the members in memory.
            let loading = try recorder.during { rows = try AggTeam.query().includes(\.members).withCount(\.members).fetch() }
            #expect(loading.count == 2)
            let walking = try recorder.during { () throws in
                #expect(try rows.map { try $0.record.members.fetch().count } == rows.map { $0.count(of: \.members) })
            }
            #expect(walking.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func sumMinMaxAndAverageAreTypedAndEmptyForNoChildren(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            var rows: [Annotated<AggTeam>] = []
            let statements = try recorder.during {
                rows = try AggTeam.query()
                    .withSum(\.members, \.age).withSum(\.members, \.score)
                    .withMin(\.members, \.age).withMax(\.members, \.name).withAverage(\.members, \.age)
                    .withMax(\.members, \.nickname)
                    .fetch()
            }
            #expect(statements.count == 1)
            let ages: [Int] = rows.map { $0.sum(of: \.members, \.age) }
            #expect(ages == [70, 0, 105, 50])
            let scores: [Double] = rows.map { $0.sum(of: \.members, \.score) }
            #expect(scores == [4, 0, 6.25, 4])
            #expect(rows.map { $0.min(of: \.members, \.age) } == [30, nil, 20, 50])
            #expect(rows.map { $0.max(of: \.members, \.name) } == ["ann", nil, "cy", "dee"])
            #expect(rows.map { $0.average(of: \.members, \.age) } == [35, nil, 35, 50])
            #expect(rows.map { $0.max(of: \.members, \.nickname) } == [nil, nil, nil, nil])
        }
    }

    @Test(arguments: TestEngine.all) func theOwnersQueryFiltersOrdersAndLimits(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            var rows: [Annotated<AggTeam>] = []
            let statements = try recorder.during {
                rows = try AggTeam.query()
                    .where(\.title != "c")
                    .order(byCount: \.members, ascending: false)
                    .limit(2)
                    .withCount(\.members)
                    .fetch()
            }
            #expect(statements.count == 1)
            #expect(rows.map { "\($0.title):\($0.count(of: \.members))" } == ["a:2", "d:1"])
            // Ordering by the count on a plain fetch, ties broken by the next key.
            let ordered = try AggTeam.query().order(byCount: \.members).order(by: "title", ascending: false).fetch()
            #expect(ordered.map(\.title) == ["b", "d", "a", "c"])
            // last() reverses it.
            #expect(try AggTeam.query().order(byCount: \.members).order(by: "title", ascending: false).last()?.title == "c")
            // By the sum of a column.
            #expect(try AggTeam.query().order(bySum: \.members, \.age, ascending: false).fetch().map(\.title) == ["c", "a", "d", "b"])
            // first() of an annotated query.
            let top = try #require(try AggTeam.query().order(byCount: \.members, ascending: false).withCount(\.members).first())
            #expect(top.title == "c" && top.count(of: \.members) == 3)
        }
    }

    @Test(arguments: TestEngine.all) func ownersByTheirChildrenInOneStatementWithValuesBound(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            var titles: [String] = []
            let statements = try recorder.during {
                titles = try AggTeam.query().whereExists(\.members, \.age > 45).fetch().map(\.title)
            }
            #expect(titles == ["c", "d"])
            #expect(statements.count == 1)
            #expect(statements[0].contains("EXISTS"))
            #expect(!statements[0].contains("45"))  // bound, not spliced
            #expect(try AggTeam.query().whereExists(\.members).fetch().map(\.title) == ["a", "c", "d"])
            #expect(try AggTeam.query().whereNotExists(\.members).fetch().map(\.title) == ["b"])
            #expect(try AggTeam.query().whereNotExists(\.members, \.age > 45).fetch().map(\.title) == ["a", "b"])
            // A child query in any form.
            #expect(try AggTeam.query().whereExists(\.members) { $0.where("name LIKE %@", "c%") }.fetch().map(\.title) == ["c"])
            #expect(try AggTeam.query().whereNotExists(\.members) { $0.where("name LIKE %@", "c%") }.count() == 3)
            // With the owners' own conditions, and the other terminal calls.
            #expect(try AggTeam.query().where(\.title != "a").whereExists(\.members).order(by: "title", ascending: false).fetch().map(\.title) == ["d", "c"])
            #expect(try AggTeam.query().whereExists(\.members).count() == 3)
            #expect(try AggTeam.query().whereExists(\.members, \.age > 55).exists())
            #expect(try !AggTeam.query().whereExists(\.members, \.age > 100).exists())
        }
    }

    @Test(arguments: TestEngine.all) func havingCountComparesTheNumberOfChildren(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            var titles: [String] = []
            let statements = try recorder.during {
                titles = try AggTeam.query().havingCount(\.members, .greaterThan(1)).fetch().map(\.title)
            }
            #expect(titles == ["a", "c"])
            #expect(statements.count == 1)
            #expect(try AggTeam.query().havingCount(\.members, .equal(0)).fetch().map(\.title) == ["b"])
            #expect(try AggTeam.query().havingCount(\.members, .lessThan(2)).fetch().map(\.title) == ["b", "d"])
            #expect(try AggTeam.query().havingCount(\.members, .between(1, 2)).fetch().map(\.title) == ["a", "d"])
            #expect(try AggTeam.query().havingCount(\.members, .in([0, 3])).fetch().map(\.title) == ["b", "c"])
            // Combined: teams with exactly one member, or none, that have no member over 45.
            #expect(try AggTeam.query().havingCount(\.members, .lessThanOrEqual(1)).whereNotExists(\.members, \.age > 45)
                .fetch().map(\.title) == ["b"])
            // A query repeated with another value compiles again (its shape is not cached): each answer its own.
            for (least, expected) in [(0, 4), (1, 3), (2, 2), (3, 1), (4, 0)] {
                #expect(try AggTeam.query().havingCount(\.members, .greaterThanOrEqual(least)).count() == expected)
            }
        }
    }

    @Test(arguments: TestEngine.all) func hasManyThroughAndSelfReferencingRelations(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let teams = try ["a", "b"].map { try AggTeam.create(["title": $0]) }
            let tags = try ["red", "blue", "green"].map { try AggTag.create(["label": $0]) }
            try teams[0].tags.add(tags[0])
            try teams[0].tags.add(tags[1])
            let rows = try AggTeam.query().withCount(\.tags).withMax(\.tags, \.label).fetch()
            #expect(rows.map { $0.count(of: \.tags) } == [2, 0])
            #expect(rows.map { $0.max(of: \.tags, \.label) } == ["red", nil])
            #expect(try AggTeam.query().whereExists(\.tags, \.label == "blue").fetch().map(\.title) == ["a"])
            #expect(try AggTeam.query().whereNotExists(\.tags).fetch().map(\.title) == ["b"])

            // Employees: the boss has two reports, one of whom has one.
            let boss = try AggEmployee.create(["name": "boss"])
            let mid = try AggEmployee.create(["name": "mid", "managerId": boss.id])
            try AggEmployee.create(["name": "dev", "managerId": boss.id])
            try AggEmployee.create(["name": "intern", "managerId": mid.id])
            let counts = try AggEmployee.query().withCount(\.reports).fetch()
            #expect(counts.map { "\($0.name):\($0.count(of: \.reports))" } == ["boss:2", "mid:1", "dev:0", "intern:0"])
            #expect(try AggEmployee.query().whereExists(\.reports).fetch().map(\.name) == ["boss", "mid"])
            #expect(try AggEmployee.query().havingCount(\.reports, .equal(1)).fetch().map(\.name) == ["mid"])
        }
    }

    @Test(arguments: TestEngine.all) func hostileValuesAndBrokenRelationsFailCleanly(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try Self.fill()
            // An injection attempt is a value like any other: it matches no name, and the tables stay.
            let hostile = "x' OR 1=1; DROP TABLE \"AggMember\"; --"
            #expect(try AggTeam.query().whereExists(\.members, \.name == hostile).fetch().isEmpty)
            #expect(try AggTeam.query().whereExists(\.members) { $0.where("name = %@", hostile) }.count() == 0)
            #expect(try AggMember.count() == 7)
            // A relation whose key column the children lack: a specific error naming it, at the terminal call.
            try AggBroken.create(["title": "x"])
            let missing = expectError(.unknownColumn) { _ = try AggBroken.query().withCount(\.members).fetch() }
            #expect(missing?.message.contains("nowhere") == true)
            expectError(.unknownColumn) { _ = try AggBroken.query().whereExists(\.members).fetch() }
            // An unknown column in a child query: the children's columns named.
            let unknown = expectError(.unknownColumn) { _ = try AggTeam.query().whereExists(\.members) { $0.where("nope = 1") }.fetch() }
            #expect(unknown?.message.contains("nope") == true)
            // A child query that limits or groups is refused: it would not be each owner's.
            let limited = expectError(.misuse) { _ = try AggTeam.query().whereExists(\.members) { $0.limit(1) }.fetch() }
            #expect(limited?.message.contains("limit") == true)
            expectError(.misuse) { _ = try AggTeam.query().whereExists(\.members) { $0.group(by: "age") }.count() }
            #expect(try AggTeam.count() == 4)
        }
    }

    @Test(arguments: TestEngine.all) func deleteAllAndUpdateAllKeepToTheOwnersTheFilterChooses(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try Self.fill()
            #expect(try AggTeam.query().whereNotExists(\.members).deleteAll() == 1)
            #expect(try AggTeam.query().order(by: "title").pluck(\.title) == ["a", "c", "d"])
            #expect(try AggTeam.query().havingCount(\.members, .greaterThan(1)).updateAll(["title": "big"]) == 2)
            #expect(try AggTeam.query().order(by: "id").pluck(\.title) == ["big", "big", "d"])
        }
    }

    /// The SQL, as the engine gets it: a correlated subquery on the children's key column
    /// (which SQLite searches by the key's index per owner), every value a parameter.
    @Test func theSQLIsACorrelatedSubqueryOnTheKeyColumn() throws {
        try withDatabase(.sqlite) { db throws in
            try Self.fill()
            let statements = try SQLRecorder(db).during {
                _ = try AggTeam.query().whereExists(\.members, \.age > 45).withCount(\.members).fetch()
            }
            let children = #"FROM (SELECT "AggMember"."aggTeamId" AS "key" FROM "AggMember"%@) AS "activerecord_children" "#
                + #"WHERE "activerecord_children"."key" = "AggTeam"."id""#
            let count = "(SELECT count(*) " + children.replacingOccurrences(of: "%@", with: "") + ")"
            let exists = "EXISTS (SELECT 1 " + children.replacingOccurrences(of: "%@", with: #" WHERE ("AggMember"."age" > ?)"#) + ")"
            #expect(statements == [
                #"SELECT "AggTeam"."id", "AggTeam"."createdAt", "AggTeam"."updatedAt", "AggTeam"."title", "#
                    + #"\#(count) AS "activerecord_value_0" FROM "AggTeam" WHERE \#(exists) ORDER BY "AggTeam"."id" ASC"#,
            ])
            let plan = try db.rows("EXPLAIN QUERY PLAN " + statements[0], [.integer(45)]).map { $0[3] }
            #expect(plan.contains(.text("SEARCH AggMember USING INDEX AggMember_aggTeamId_index (aggTeamId=?)")))
        }
    }
}
