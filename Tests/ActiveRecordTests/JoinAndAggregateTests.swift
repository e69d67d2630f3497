@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

final class Team: Model {
    override class var tableName: String { "teams" }  // overridden table name, as in the seeds' test
    @Column var title: String = ""
}

final class Badge: Model {
    @Column var label: String = ""
    @Column var personId: Int64 = 0
}

/// Teams "red" (1) and "blue" (2); Alex and John in red, Maria in blue, the rest in none.
func seedTeams() throws {
    try seedPeople()
    try Team.create(["title": "red"])
    try Team.create(["title": "blue"])
    try Team.create(["title": "empty"])
    for (id, team) in [(1, 1), (3, 1), (4, 2)] as [(Int64, Int64)] {
        let person = try #require(try Person.find(id))
        person.teamId = team
        try person.save()
    }
}

@Suite("Joins and aggregates")
struct JoinAndAggregateTests {
    @Test(arguments: TestEngine.all) func innerJoinWithAnOverriddenTableName(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedTeams()
            let recorder = SQLRecorder(db)
            let rows = try Person.query().join(Team.self, .inner, on: "teamId", "id").fetchJoined()
            #expect(recorder.all.last?.contains(#"FROM "Person" JOIN "teams" ON "Person"."teamId" = "teams"."id""#) == true)
            #expect(rows.count == 3)
            let pairs = rows.map { (($0["Person"] as? Person)?.name, ($0["Team"] as? Team)?.title) }
            #expect(pairs.map(\.0) == ["Alex", "John", "Maria"])
            #expect(pairs.map(\.1) == ["red", "red", "blue"])
            // Columns of both tables land in their own records, ids included.
            let first = try #require(rows.first?["Team"] as? Team)
            #expect(first.id == 1 && first.createdAt != nil)
        }
    }

    @Test(arguments: TestEngine.all) func conditionsAndOrderOnTheJoinedTable(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedTeams()
            let reds = try Person.query().join(Team.self).where("teams.title = %@", "red").order(by: "name", ascending: false).fetch()
            #expect(reds.map(\.name) == ["John", "Alex"])
            let byTeam = try Person.query().join(Team.self).where("'Team'.'title' != ?", "red").fetch()
            #expect(byTeam.map(\.name) == ["Maria"])
            #expect(try Person.query().join(Team.self).order(by: "teams.title").fetch().map(\.name).first == "Maria")
            #expect(try Person.query().join(Team.self).where("title = 'blue'").count() == 1)  // unqualified: found in the joined table
        }
    }

    @Test(arguments: TestEngine.all) func outerJoinsKeepRowsWithoutAMatch(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedTeams()
            let left = try Person.query().join(Team.self, .left).fetchJoined(Team.self)
            #expect(left.count == 6)
            #expect(left.filter { $0.1 == nil }.compactMap { $0.0?.name } == ["Алексей", "Zoe", "alex"])
            let right = try Person.query().join(Team.self, .right).fetchJoined(Team.self)
            #expect(right.count == 4)
            #expect(right.filter { $0.0 == nil }.compactMap { $0.1?.title } == ["empty"])
            let full = try Person.query().join(Team.self, .fullOuter).fetchJoined()
            #expect(full.count == 7)
            #expect(full.filter { $0["Person"] == nil }.count == 1 && full.filter { $0["Team"] == nil }.count == 3)
        }
    }

    @Test(arguments: TestEngine.all) func conventionJoinsBothWays(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedTeams()
            try Badge.create(["label": "gold", "personId": 3])
            try Badge.create(["label": "silver", "personId": 3])
            // Person has teamId → "Person"."teamId" = "teams"."id".
            #expect(try Person.query().join(Team.self).count() == 3)
            // Badge has personId → "Person"."id" = "Badge"."personId".
            let withBadges = try Person.query().join(Badge.self).distinct().fetch()
            #expect(withBadges.map(\.name) == ["John"])
            #expect(try Person.query().join(Badge.self).count() == 2)
            #expect(try Person.query().join(Badge.self).distinct().count() == 1)
            let error = expectError(.unknownColumn) { _ = try Team.query().join(Badge.self).fetch() }
            #expect(error?.message.contains("neither Team.badgeId nor Badge.teamId exists") == true)
        }
    }

    @Test(arguments: TestEngine.all) func aggregates(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedTeams()
            #expect(try Person.query().sum("age") == 192)
            #expect(try Person.query().where("age < 0").sum("age") == 0)
            #expect(try Person.query().average("age") == 32)
            #expect(try Person.query().where("age < 0").average("age") == nil)
            #expect(try Person.query().min("age") == .integer(19))
            #expect(try Person.query().max("name", as: String.self) == "Алексей")
            #expect(try Person.query().where("age > 100").max("age", as: Int.self) == nil)
            #expect(try Person.query().order(by: "age").limit(2).sum("age") == 44)  // respects limit
            #expect(try Person.query().join(Team.self).where("teams.title = 'red'").sum("age") == 71)
            #expect(try Person.query().join(Team.self).average("teams.id") == 4.0 / 3.0)
        }
    }

    @Test(arguments: TestEngine.all) func groupByAndHaving(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedTeams()
            let rows = try Person.query().group(by: "age").having("count(*) > %@", 1).values("age, count(*)")
            #expect(rows == [[.integer(25), .integer(2)]])
            let perTeam = try Person.query().join(Team.self).group(by: "teams.title").order(by: "teams.title")
                .values("teams.title, count(*), sum(age)")
            #expect(perTeam == [[.text("blue"), .integer(1), .integer(25)], [.text("red"), .integer(2), .integer(71)]])
            #expect(try Person.query().group(by: "age").count() == 5)
            #expect(try Person.query().group(by: "age").having("max(name) LIKE 'A%'").order(by: "age").values("age")
                == [[.integer(31)], [.integer(52)]])  // LIKE ignores ASCII case
        }
    }

    @Test(arguments: TestEngine.all) func joiningTheSameTableTwiceIsRefused(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedTeams()
            expectError(.invalidPredicate) { _ = try Person.query().join(Team.self).join(Team.self).fetch() }
            expectError(.misuse) { _ = try Person.query().fetchJoined(Team.self) }
        }
    }
}
