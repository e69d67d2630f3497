import ActiveRecord
import Foundation
import Testing

/// Issue 35, point 2: a relation's default foreign key (`<lowerCamel(Owner)>Id`) is made once
/// per owner class on each thread and the one used last is kept, and eager loading takes its
/// owners without a dynamic cast per owner. Walking the relations of two owner classes in turn,
/// lazily and eagerly, must still name each class's own key and give each owner its own children.
@Suite("Relations: default keys kept per owner class")
struct RelationKeyCacheTests {
    final class KeyCacheShelf: Model {
        @Column var label: String = ""
        @HasMany var items: Query<KeyCacheItem>
    }

    final class KeyCacheBin: Model {
        @Column var label: String = ""
        @HasMany var items: Query<KeyCacheItem>
    }

    /// Belongs to a shelf and to a bin: two keys, `keyCacheShelfId` and `keyCacheBinId`.
    final class KeyCacheItem: Model {
        @Column var name: String = ""
        @BelongsTo var shelf: KeyCacheShelf?
        @BelongsTo var bin: KeyCacheBin?
    }

    /// Shelves s0, s1 and bins b0, b1; item i<n> on shelf n % 2 and in bin (n / 2) % 2.
    private static func fill() throws {
        let shelves = try (0..<2).map { try KeyCacheShelf.create(["label": "s\($0)"]) }
        let bins = try (0..<2).map { try KeyCacheBin.create(["label": "b\($0)"]) }
        for n in 0..<8 {
            try KeyCacheItem.create(["name": "i\(n)", "keyCacheShelfId": shelves[n % 2].id, "keyCacheBinId": bins[(n / 2) % 2].id])
        }
    }

    private static let expectedByShelf = ["s0": ["i0", "i2", "i4", "i6"], "s1": ["i1", "i3", "i5", "i7"]]
    private static let expectedByBin = ["b0": ["i0", "i1", "i4", "i5"], "b1": ["i2", "i3", "i6", "i7"]]

    @Test(arguments: TestEngine.all) func lazyWalksOfTwoOwnerClassesInTurnUseEachKey(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Self.fill()
            let recorder = SQLRecorder(db)
            var byShelf: [String: [String]] = [:], byBin: [String: [String]] = [:]
            let shelves = try KeyCacheShelf.query().fetch(), bins = try KeyCacheBin.query().fetch()
            let statements = try recorder.during {
                // Alternating owner classes: the key asked for last changes at every step.
                for (shelf, bin) in zip(shelves, bins) {
                    byShelf[shelf.label] = try shelf.items.order(by: "id").fetch().map(\.name)
                    byBin[bin.label] = try bin.items.order(by: "id").fetch().map(\.name)
                }
            }
            #expect(byShelf == Self.expectedByShelf)
            #expect(byBin == Self.expectedByBin)
            #expect(statements.count == 4)
            // The condition (after WHERE; the select list names both keys) names the owner's key.
            let conditions = statements.map { $0.components(separatedBy: "WHERE").last ?? "" }
            #expect(conditions.filter { $0.contains("keyCacheShelfId") && !$0.contains("keyCacheBinId") }.count == 2)
            #expect(conditions.filter { $0.contains("keyCacheBinId") && !$0.contains("keyCacheShelfId") }.count == 2)
        }
    }

    @Test(arguments: TestEngine.all) func eagerLoadsOfTwoOwnerClassesGiveEachOwnerItsChildren(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try Self.fill()
            for _ in 0..<2 {
                var byShelf: [String: [String]] = [:], byBin: [String: [String]] = [:]
                for shelf in try KeyCacheShelf.query().includes(\.items).fetch() {
                    byShelf[shelf.label] = try shelf.items.fetch().map(\.name)
                }
                for bin in try KeyCacheBin.query().includes(\.items).fetch() {
                    byBin[bin.label] = try bin.items.fetch().map(\.name)
                }
                #expect(byShelf == Self.expectedByShelf)
                #expect(byBin == Self.expectedByBin)
            }
            // An owner without children gets an empty list, not another owner's.
            let empty = try KeyCacheShelf.create(["label": "empty"])
            let loaded = try KeyCacheShelf.query().where("id", .equal(empty.id)).includes(\.items).fetch()
            #expect(loaded.count == 1)
            #expect(try loaded[0].items.fetch().isEmpty)
        }
    }
}
