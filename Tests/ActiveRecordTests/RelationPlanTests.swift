import ActiveRecord
import Foundation
import Synchronization
import Testing

/// Issue 35, point 2: a `@HasMany` property's plan (its key column, the key's condition and the
/// field's offset in the owner) is found once per property on each thread, and the getter,
/// the answers from memory and eager loading use it instead of the property's key path. Two
/// relations to one child class, a subclass's owners, invalidation and several threads must
/// still each reach their own field and key.
@Suite("Relations: a has-many's plan per property")
struct RelationPlanTests {
    /// Two has-many relations to one child class: their fields have the same type, so the plan
    /// must tell them apart by the property, not by the type.
    class PlanAuthor: Model {
        @Column var name: String = ""
        @HasMany(key: "writerId") var written: Query<PlanPost>
        @HasMany(key: "editorId") var edited: Query<PlanPost>
        /// The written posts again, through a second property on the same key: a field of its
        /// own, loaded or not apart from `written`'s.
        @HasMany(key: "writerId") var byline: Query<PlanPost>
    }

    /// An author of a subclass: its relations are the superclass's, at the same offsets.
    final class PlanGuestAuthor: PlanAuthor {
        @Column var visit: Int = 0
    }

    final class PlanPost: Model {
        @Column var title: String = ""
        @BelongsTo(key: "writerId") var writer: PlanAuthor?
        @BelongsTo(key: "editorId") var editor: PlanAuthor?
    }

    /// An owner whose initializer reads its relation: reflection runs the initializer while
    /// the relation's plan is being made, and that read must not make the plan again.
    final class PlanCurious: Model {
        @Column var name: String = ""
        @HasMany var notes: Query<PlanNote>
        var notesAtInit = -1

        required init() {
            super.init()
            notesAtInit = (try? notes.count()) ?? -2
        }
    }

    final class PlanNote: Model {
        @Column var text: String = ""
        @BelongsTo var planCurious: PlanCurious?
    }

    /// Authors a0, a1 and posts p0…p5: p<n> written by a<n % 2> and edited by a<(n / 3) % 2>.
    private static func fill() throws {
        let authors = try (0..<2).map { try PlanAuthor.create(["name": "a\($0)"]) }
        for n in 0..<6 {
            try PlanPost.create(["title": "p\(n)", "writerId": authors[n % 2].id, "editorId": authors[(n / 3) % 2].id])
        }
    }

    private static let written = ["a0": ["p0", "p2", "p4"], "a1": ["p1", "p3", "p5"]]
    private static let edited = ["a0": ["p0", "p1", "p2"], "a1": ["p3", "p4", "p5"]]

    @Test(arguments: TestEngine.all) func twoRelationsToOneChildClassEachUseTheirOwnKey(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            var written: [String: [String]] = [:], edited: [String: [String]] = [:]
            for author in try PlanAuthor.query().fetch() {
                written[author.name] = try author.written.order(by: "id").fetch().map(\.title)
                edited[author.name] = try author.edited.order(by: "id").fetch().map(\.title)
            }
            #expect(written == Self.written)
            #expect(edited == Self.edited)
        }
    }

    @Test(arguments: TestEngine.all) func eagerLoadingTwoRelationsToOneChildClassFillsEachField(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            let authors = try PlanAuthor.query().includes(\.written).includes(\.edited).fetch()
            var written: [String: [String]] = [:], edited: [String: [String]] = [:], counts: [Int] = []
            let statements = try recorder.during {
                for author in authors {
                    written[author.name] = try author.written.fetch().map(\.title)
                    edited[author.name] = try author.edited.fetch().map(\.title)
                    counts.append(try author.written.count())
                }
            }
            #expect(statements.isEmpty, "answered from memory: \(statements)")
            #expect(counts == [3, 3])
            #expect(written == Self.written)
            #expect(edited == Self.edited)
        }
    }

    @Test(arguments: TestEngine.all) func twoRelationsOnOneKeyKeepTheirLoadedChildrenApart(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            let authors = try PlanAuthor.query().includes(\.written).order(by: "id").fetch()
            var written: [String] = [], byline: [String] = []
            let statements = try recorder.during {
                written = try authors[0].written.fetch().map(\.title)
                byline = try authors[0].byline.fetch().map(\.title)
            }
            #expect(written == ["p0", "p2", "p4"] && byline == written)
            // Only `written` was loaded: `byline` runs its query.
            #expect(statements.count == 1, "\(statements)")
            let reversed = try PlanAuthor.query().includes(\.byline).order(by: "id").fetch()
            let second = try recorder.during {
                byline = try reversed[1].byline.fetch().map(\.title)
                written = try reversed[1].written.fetch().map(\.title)
            }
            #expect(byline == ["p1", "p3", "p5"] && written == byline)
            #expect(second.count == 1, "\(second)")
        }
    }

    @Test(arguments: TestEngine.all) func aSubclassOwnerReachesItsSuperclassRelations(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            // The subclass has a table of its own: its ids start at 1 too, so the other author
            // is made second in its table, for the keys to tell the two apart.
            let guest = try PlanGuestAuthor.create(["name": "g", "visit": 2])
            _ = try PlanAuthor.create(["name": "filler"])
            let other = try PlanAuthor.create(["name": "o"])
            #expect(guest.id == 1 && other.id == 2)
            try PlanPost.create(["title": "w", "writerId": guest.id, "editorId": other.id])
            try PlanPost.create(["title": "e", "writerId": other.id, "editorId": guest.id])
            #expect(try guest.written.fetch().map(\.title) == ["w"])
            #expect(try guest.edited.fetch().map(\.title) == ["e"])
            let recorder = SQLRecorder(db)
            let loaded = try PlanGuestAuthor.query().includes(\.edited).fetch()
            #expect(loaded.count == 1)
            var edited: [String] = []
            let statements = try recorder.during { edited = try loaded[0].edited.fetch().map(\.title) }
            #expect(edited == ["e"])
            #expect(statements.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func loadedChildrenAreForgottenWhenTheRelationChanges(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            let authors = try PlanAuthor.query().includes(\.written).order(by: "id").fetch()
            let first = authors[0]
            // Adding through the relation saves the post and forgets the loaded children.
            let post = PlanPost()
            post.title = "p6"
            post.editorId = authors[1].id
            try first.written.add(post)
            var ordered: [String] = [], plain: [String] = []
            let afterAdd = try recorder.during {
                ordered = try first.written.order(by: "id").fetch().map(\.title)
                plain = try first.written.fetch().map(\.title)
            }
            #expect(ordered == ["p0", "p2", "p4", "p6"])
            #expect(plain == ["p0", "p2", "p4", "p6"])
            #expect(afterAdd.count == 2, "both run SQL once the loaded children are forgotten: \(afterAdd)")
            // The other owner's loaded children stay.
            var other: [String] = []
            let untouched = try recorder.during { other = try authors[1].written.fetch().map(\.title) }
            #expect(other == ["p1", "p3", "p5"])
            #expect(untouched.isEmpty)
            // An unsaved owner answers its queued children from memory; its save links them.
            let newcomer = PlanAuthor()
            newcomer.name = "n"
            let queued = PlanPost()
            queued.title = "q"
            try newcomer.written.add(queued)
            var queuedTitles: [String] = []
            let fromMemory = try recorder.during { queuedTitles = try newcomer.written.fetch().map(\.title) }
            #expect(queuedTitles == ["q"])
            #expect(fromMemory.isEmpty)
            try newcomer.save()
            #expect(queued.writerId == newcomer.id)
            var savedTitles: [String] = []
            let reloaded = try recorder.during { savedTitles = try newcomer.written.fetch().map(\.title) }
            #expect(savedTitles == ["q"])
            #expect(reloaded.count == 1)
        }
    }

    @Test(arguments: TestEngine.all) func anOwnerReadingItsRelationWhenMadeStillGetsItsChildren(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let curious = try PlanCurious.create(["name": "c"])
            #expect(curious.notesAtInit == 0)
            try PlanNote.create(["text": "n", "planCuriousId": curious.id])
            #expect(try curious.notes.fetch().map(\.text) == ["n"])
            let loaded = try PlanCurious.query().includes(\.notes).fetch()
            #expect(loaded.map(\.notesAtInit) == [0])
            let recorder = SQLRecorder(db)
            var texts: [String] = []
            let statements = try recorder.during { texts = try loaded[0].notes.fetch().map(\.text) }
            #expect(texts == ["n"] && statements.isEmpty)
        }
    }

    @Test(arguments: TestEngine.all) func threadsWalkingTheRelationsEachGetTheirOwnersChildren(engine: TestEngine) throws {
        try withDatabase(engine, file: true) { db throws in
            try Self.fill()
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { iteration in
                do {
                    try db.use {
                        for _ in 0..<5 {
                            let eager = iteration % 2 == 0
                            let query = eager ? PlanAuthor.query().includes(\.written).includes(\.edited) : PlanAuthor.query()
                            for author in try query.fetch() {
                                let written = try author.written.order(by: "id").fetch().map(\.title)
                                let edited = try author.edited.order(by: "id").fetch().map(\.title)
                                if written != Self.written[author.name] || edited != Self.edited[author.name] {
                                    failures.withLock { $0.append("\(iteration): \(author.name) \(written) \(edited)") }
                                }
                            }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(iteration): \(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
        }
    }
}

extension RelationPlanTests.PlanPost {
    /// The keys, as the columns hold them.
    var writerId: Int64? { $writer.id }
    var editorId: Int64? {
        get { $editor.id }
        set { $editor.id = newValue }
    }
}
