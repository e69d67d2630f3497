@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// Issue 35: what making a record costs (each fetched row makes one). The relations' and
/// named columns' initializers are inlined into a model's; these check what that must keep:
/// the names and indexes reflection reads from them, and a fetched record still made by the
/// class's own `init()` (a custom one included), as before.
@Suite("Making records")
struct RecordCreationTests {
    final class CreationOwner: Model {
        @Column var title: String = ""
        @HasMany(key: "holderRef") var items: Query<CreationItem>
    }

    final class CreationItem: Model {
        @Column("item_label", index: .unique) var label: String = ""
        @BelongsTo(key: "holderRef", dependency: .none) var holder: CreationOwner?
    }

    /// A model whose initializer the user wrote: it runs for every record made, fetched
    /// ones included (before the row's values are read into it).
    final class CreationCounted: Model {
        static let made = Atomic<Int>(0)
        @Column var name: String = ""
        var scratch: [Int]

        required init() {
            scratch = [1]
            super.init()
            Self.made.add(1, ordering: .relaxed)
            name = "made"
        }
    }

    @Test func namedRelationKeysAndColumnsAreReflectedWithTheirIndexes() throws {
        let schema = try CreationItem.schema()
        let label = try #require(schema.columns.first { $0.name == "item_label" })
        #expect(label.index == .unique)
        let key = try #require(schema.columns.first { $0.name == "holderRef" })
        #expect(key.index == .index && key.isNullable)
        #expect(!schema.columns.contains { $0.name == "label" || $0.name == "creationOwnerId" })
    }

    @Test(arguments: TestEngine.all) func fetchedRecordsHaveTheirRowsAndRelations(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let owner = try CreationOwner.create(["title": "o"])
            for index in 0..<3 {
                let item = CreationItem()
                item.label = "l\(index)"
                item.holder = owner
                try item.save()
            }
            let items = try CreationItem.all().sorted { $0.label < $1.label }
            #expect(items.map(\.label) == ["l0", "l1", "l2"])
            for item in items {
                #expect(item.$holder.id == owner.id && item.holder?.title == "o")
                #expect(!item.hasChanges && item.extras == nil)
            }
            let fetched = try #require(try CreationOwner.find(owner.id!))
            #expect(try fetched.items.count() == 3)
            items[0].label = "changed"
            #expect(items[0].changes.map(\.column) == ["item_label"])
        }
    }

    @Test(arguments: TestEngine.all) func aFetchedRecordIsMadeByItsClassInitializer(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let saved = CreationCounted()
            saved.name = "stored"
            try saved.save()
            let before = CreationCounted.made.load(ordering: .relaxed)
            let found = try #require(try CreationCounted.find(saved.id!))
            let all = try CreationCounted.all()
            #expect(CreationCounted.made.load(ordering: .relaxed) - before == 2)
            // The row's values, read after the initializer ran; nothing changed since.
            #expect(found.name == "stored" && all.map(\.name) == ["stored"])
            #expect(found.scratch == [1] && !found.hasChanges)
        }
    }
}
