import ActiveRecord
import Foundation
import Testing

/// Issue 36, point 2: scoped relations, a relation with a fixed condition and order
/// (`@HasMany(scope:)`, `@HasOne(scope:)`), kept by lazy reading, eager loading, the
/// dependency and the owners' queries about their children.
@Suite("Relations: scoped relations")
struct ScopedRelationTests {
    final class ScopeGroup: Model {
        @Column var title: String = ""
        // Declared first: destroying a group destroys its adults before the other users' keys are cleared.
        @HasMany(dependency: .destroy, scope: { $0.where(\.age >= 18).order(by: \.name) }) var adults: Query<ScopeUser>
        @HasMany(dependency: .nullify) var users: Query<ScopeUser>
    }

    final class ScopeUser: Model {
        @Column var name: String = ""
        @Column var age: Int = 0
        @BelongsTo var scopeGroup: ScopeGroup?
    }

    final class ScopeAuthor: Model {
        @Column var name: String = ""
        @HasMany var posts: Query<ScopePost>
        @HasOne(scope: { $0.where(\.published == true).order(by: \.rank, ascending: false) }) var best: ScopePost?
    }

    final class ScopePost: Model {
        @Column var title: String = ""
        @Column var rank: Int = 0
        @Column var published: Bool = true
        @BelongsTo var scopeAuthor: ScopeAuthor?
    }

    /// A scope that does more than filter and order.
    final class ScopeBroken: Model {
        @Column var title: String = ""
        @HasMany(key: "scopeGroupId", scope: { $0.limit(1) }) var first: Query<ScopeUser>
    }

    /// Groups g1 (zoe 30, amy 12, bob 45), g2 (tim 9), g3 (none).
    private static func fill() throws -> [ScopeGroup] {
        let groups = try ["g1", "g2", "g3"].map { try ScopeGroup.create(["title": $0]) }
        for (name, age, group) in [("zoe", 30, 0), ("amy", 12, 0), ("bob", 45, 0), ("tim", 9, 1)] {
            try ScopeUser.create(["name": name, "age": age, "scopeGroupId": groups[group].id])
        }
        return groups
    }

    private func selects(_ statements: [String]) -> [String] { statements.filter { $0.hasPrefix("SELECT") } }

    @Test(arguments: TestEngine.all) func readingKeepsToTheScopeAndItsOrder(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let groups = try Self.fill()
            let statements = try SQLRecorder(db).during { () throws in
                #expect(try groups[0].adults.fetch().map(\.name) == ["bob", "zoe"])
            }
            #expect(statements.count == 1 && !statements[0].contains("18"))  // the scope's value is bound
            #expect(try groups[0].adults.count() == 2)
            #expect(try groups[0].adults.where(\.age < 40).fetch().map(\.name) == ["zoe"])
            #expect(try groups[0].users.order(by: "id").fetch().map(\.name) == ["zoe", "amy", "bob"])
            #expect(try groups[1].adults.fetch().isEmpty)
            // Adding through a scoped relation links the child (the scope is not checked: amy-like children stay out of it).
            let kid = try ScopeUser.create(["name": "kid", "age": 5])
            try groups[2].adults.add(kid)
            #expect(try groups[2].users.fetch().map(\.name) == ["kid"])
            #expect(try groups[2].adults.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func eagerLoadingKeepsToTheScopeInOneQuery(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            _ = try Self.fill()
            let recorder = SQLRecorder(db)
            var groups: [ScopeGroup] = []
            let loading = try recorder.during {
                groups = try ScopeGroup.query().includes(\.adults).includes(\.users).fetch()
            }
            #expect(selects(loading).count == 3)
            let walking = try recorder.during { () throws in
                #expect(try groups.map { try $0.adults.fetch().map(\.name) } == [["bob", "zoe"], [], []])
                #expect(try groups.map { try $0.users.count() } == [3, 1, 0])
            }
            #expect(walking.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func theOwnersQueriesKeepToTheScope(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            _ = try Self.fill()
            let recorder = SQLRecorder(db)
            var rows: [Annotated<ScopeGroup>] = []
            let statements = try recorder.during {
                rows = try ScopeGroup.query().withCount(\.adults).withCount(\.users).withMin(\.adults, \.age).fetch()
            }
            #expect(statements.count == 1)
            #expect(rows.map { $0.count(of: \.adults) } == [2, 0, 0])
            #expect(rows.map { $0.count(of: \.users) } == [3, 1, 0])
            #expect(rows.map { $0.min(of: \.adults, \.age) } == [30, nil, nil])
            #expect(try ScopeGroup.query().whereExists(\.adults).fetch().map(\.title) == ["g1"])
            #expect(try ScopeGroup.query().whereExists(\.users).whereNotExists(\.adults).fetch().map(\.title) == ["g2"])
            #expect(try ScopeGroup.query().whereExists(\.adults, \.name == "amy").count() == 0)  // amy is out of the scope
            #expect(try ScopeGroup.query().havingCount(\.adults, .equal(0)).fetch().map(\.title) == ["g2", "g3"])
            #expect(try ScopeGroup.query().order(byCount: \.users, ascending: false).order(byCount: \.adults).fetch().map(\.title)
                == ["g1", "g2", "g3"])
        }
    }

    @Test(arguments: TestEngine.all) func theDependencyKeepsToTheScope(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let groups = try Self.fill()
            try groups[0].destroy()
            // The adults went with the group; amy, a minor, stays with her key cleared.
            #expect(try ScopeUser.query().order(by: "name").pluck(\.name) == ["amy", "tim"])
            #expect(try storedValue(db, #"SELECT "scopeGroupId" FROM "ScopeUser" WHERE "name" = 'amy'"#) == .null)
        }
    }

    @Test(arguments: TestEngine.all) func aScopedHasOneIsTheFirstChildInTheScope(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let ann = try ScopeAuthor.create(["name": "ann"])
            let bo = try ScopeAuthor.create(["name": "bo"])
            try ScopePost.create(["title": "draft", "rank": 9, "published": false, "scopeAuthorId": ann.id])
            try ScopePost.create(["title": "good", "rank": 5, "scopeAuthorId": ann.id])
            try ScopePost.create(["title": "ok", "rank": 3, "scopeAuthorId": ann.id])
            try ScopePost.create(["title": "only draft", "rank": 1, "published": false, "scopeAuthorId": bo.id])
            #expect(try ScopeAuthor.find(ann.id!)?.best?.title == "good")
            #expect(try ScopeAuthor.find(bo.id!)?.best == nil)
            let recorder = SQLRecorder(db)
            var authors: [ScopeAuthor] = []
            let loading = try recorder.during { authors = try ScopeAuthor.query().includes(\.best).fetch() }
            #expect(selects(loading).count == 2)
            let walking = recorder.during { #expect(authors.map { $0.best?.title } == ["good", nil]) }
            #expect(walking.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func aScopeThatLimitsIsRefused(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = try Self.fill()
            let broken = try ScopeBroken.create(["title": "x"])
            let error = expectError(.misuse) { _ = try broken.first.fetch() }
            #expect(error?.message.contains("limit(_:)") == true)
            expectError(.misuse) { _ = try ScopeBroken.query().includes(\.first).fetch() }
            expectError(.misuse) { _ = try ScopeBroken.query().withCount(\.first).fetch() }
            #expect(try ScopeUser.count() == 4)
        }
    }
}
