@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

/// A tag: a unique name, for upserts.
final class Label: Model, Validating, Callbacks {
    @Column(index: .unique) var name: String = ""
    @Column var uses: Int = 0
    @Column var color: String? = nil
    static let validations = Validations(for: Label.self) { $0.presence(\.name) }
    /// Set by the save callback, which a batch write never runs (not a column).
    var sawSave = false
    func beforeSave() throws { sawSave = true }
}

@Suite("Batch writes: deleteAll, updateAll, insertAll, upsert (SQL only)")
struct BatchWriteTests {
    @Test(arguments: TestEngine.all) func deleteAllAndUpdateAllReturnTheRowsTheyChanged(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let loaded = try Person.query().order(by: "id").fetch()
            #expect(try Person.query().where("age", .lessThan(26)).updateAll(["note": "young", "teamId": Int64(7)]) == 3)
            #expect(try Person.query().where("note = %@", "young").order(by: "id").pluck(\.name) == ["Алексей", "Maria", "Zoe"])
            #expect(try Person.query().where("teamId = 7").count() == 3)
            // updatedAt moves, createdAt stays; records in memory keep their values until reloaded.
            let maria = try #require(try Person.find(4))
            #expect(maria.updatedAt! >= maria.createdAt! && loaded[3].note == nil)
            try loaded[3].reload()
            #expect(loaded[3].note == "young")
            // Order and limit apply; joins too (the subquery picks the ids).
            #expect(try Person.query().order(by: "age", ascending: false).limit(2).updateAll(["note": "eldest"]) == 2)
            #expect(try Person.query().where("note = %@", "eldest").order(by: "id").pluck(\.name) == ["John", "alex"])
            #expect(try Person.query().where("age > %@", 100).updateAll(["note": "none"]) == 0)
            #expect(try Person.query().where("name", .hasPrefix("a")).deleteAll() == 2)  // Alex, alex
            #expect(try Person.query().order(by: "id").pluck(\.name) == ["Алексей", "John", "Maria", "Zoe"])
            #expect(try Person.query().deleteAll() == 4)
            #expect(try Person.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func batchWritesRefuseWhatTheyCannotDo(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            try seedPeople()
            let unknown = expectError(.unknownColumn) { _ = try Person.query().updateAll(["nmae": "x"]) }
            #expect(unknown?.message.contains("name, age, born, note, teamId") == true)
            _ = expectError(.typeMismatch) { _ = try Person.query().updateAll(["age": "old"]) }
            _ = expectError(.typeMismatch) { _ = try Person.query().updateAll(["name": nil]) }
            _ = expectError(.misuse) { _ = try Person.query().updateAll(["id": 9]) }
            _ = expectError(.misuse) { _ = try Person.query().updateAll([:]) }
            _ = expectError(.misuse) { _ = try Person.query().group(by: "age").deleteAll() }
            // A hostile value is bound, never SQL.
            #expect(try Person.query().where("id = 1").updateAll(["name": "x'); DROP TABLE \"Person\"; --"]) == 1)
            #expect(try Person.count() == 6)
            #expect(try Person.find(1)?.name == "x'); DROP TABLE \"Person\"; --")
        }
    }

    @Test(arguments: TestEngine.all) func insertAllInsertsInOneTransactionAndValidatesFirst(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let labels = (1...50).map { n in
                let label = Label()
                label.name = "label \(n)"
                label.uses = n
                return label
            }
            let statements = Mutex<[String]>([])
            db.trace { sql in if sql.hasPrefix("INSERT") { statements.withLock { $0.append(sql) } } }
            try Label.insertAll(labels)
            db.trace(nil)
            #expect(labels.map(\.id) == (1...50).map { Int64($0) })
            #expect(labels.allSatisfy { !$0.isNewRecord && $0.createdAt != nil && $0.createdAt == labels[0].createdAt })
            #expect(statements.withLock { Set($0).count } == 1)      // one statement, prepared once, run 50 times
            #expect(labels.allSatisfy { !$0.sawSave })  // SQL only: no callbacks
            #expect(try Label.query().order(by: "id").pluck(\.uses) == Array(1...50))
            // Dictionaries make records.
            let more = try Label.insertAll([["name": "red", "color": "#f00"], ["name": "plain"]])
            #expect(more.map(\.id) == [51, 52] && more[1].color == nil)
            // An invalid record: nothing is inserted, its errors are set, its position named.
            let bad = [Label(), Label()]
            bad[0].name = "fine"
            let invalid = expectError(.validationFailed) { try Label.insertAll(bad) }
            #expect(invalid?.message.hasPrefix("record 2 of 2: Label is invalid") == true)
            #expect(bad[1].errors.map(\.key) == ["cant_be_blank"] && bad.allSatisfy(\.isNewRecord))
            // A unique violation rolls the whole batch back, and the records are new again.
            let clash = [["name": "blue"], ["name": "red"]].map { try! Label($0) }
            let constraint = expectError(.constraint) { try Label.insertAll(clash) }
            #expect(constraint?.isUniqueViolation == true)
            #expect(clash.allSatisfy { $0.isNewRecord && $0.id == nil })
            #expect(try Label.count() == 52)
            _ = expectError(.misuse) { try Label.insertAll([labels[0]]) }
            try Label.insertAll([Label]())
        }
    }

    @Test(arguments: TestEngine.all) func upsertInsertsOrUpdatesAndReturnsTheRow(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let swift = try Label.create(["name": "swift", "uses": 1, "color": "orange"])
            #expect(swift.sawSave)   // save() runs the callbacks (the batch writes above must not)
            let again = Label()
            again.name = "swift"
            again.uses = 5
            try again.upsert(onConflict: ["name"])
            #expect(again.id == swift.id && !again.isNewRecord)
            #expect(again.color == nil && again.createdAt == swift.createdAt)   // every column but the conflict one was updated
            #expect(try Label.find(swift.id!)?.uses == 5)
            // Only the named columns: the others read back as the row holds them.
            let partial = try Label(["name": "swift", "uses": 9, "color": "teal"])
            try partial.upsert(onConflict: ["name"], updating: ["uses"])
            #expect(partial.id == swift.id && partial.uses == 9 && partial.color == nil)
            // Nothing to update: the existing row, unchanged, becomes the record.
            let untouched = try Label(["name": "swift", "uses": 100])
            try untouched.upsert(onConflict: ["name"], updating: [])
            #expect(untouched.id == swift.id && untouched.uses == 9)
            // A new name is an insert.
            let sqlite = try Label(["name": "sqlite", "uses": 2])
            try sqlite.upsert(onConflict: ["name"])
            #expect(sqlite.id != swift.id && sqlite.id != nil)
            // Many at once: ids of existing rows, new ones for the rest.
            let batch = try [["name": "sqlite", "uses": 20], ["name": "postgres", "uses": 30]].map { try Label($0) }
            try Label.upsertAll(batch, onConflict: ["name"])
            #expect(batch[0].id == sqlite.id && batch[1].id != nil)
            #expect(try Label.query().order(by: "name").pluck(\.name, \.uses).map { "\($0.0) \($0.1)" } == ["postgres 30", "sqlite 20", "swift 9"])
            // A conflict target without a unique index is refused with the fix.
            let noIndex = expectError(.misuse) { try Label(["name": "x"]).upsert(onConflict: ["uses"]) }
            #expect(noIndex?.message.contains("declare @Column(index: .unique)") == true)
            _ = expectError(.unknownColumn) { try Label(["name": "x"]).upsert(onConflict: ["nmae"]) }
            _ = expectError(.validationFailed) { try Label().upsert(onConflict: ["name"]) }
            #expect(try Label.count() == 3)
        }
    }

    @Test(arguments: TestEngine.all) func aRolledBackUpsertLeavesTheRecordAsItWas(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let label = try Label(["name": "go", "uses": 1])
            try db.transaction {
                try label.upsert(onConflict: ["name"])
                #expect(label.id != nil)
                throw Rollback()
            }
            #expect(label.isNewRecord && label.id == nil)
            #expect(try Label.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func deleteByIdDeletesOneRowWithoutLoadingIt(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try seedPeople()
            let john = try #require(try Person.find(3))
            let recorder = SQLRecorder(db)
            #expect(try Person.delete(id: 3))
            #expect(recorder.all.count == 1)
            #expect(recorder.all.first?.hasPrefix("DELETE FROM \"Person\"") == true)  // no SELECT first
            #expect(try !Person.delete(id: 3))  // already gone
            #expect(try !Person.delete(id: 99))
            #expect(try Person.query().order(by: "id").fetch().compactMap(\.id) == [1, 2, 4, 5, 6])
            #expect(!john.isDestroyed)  // SQL only: the record in memory is not told
            // Inside a transaction that rolls back, the row comes back.
            try db.transaction {
                #expect(try Person.delete(id: 4))
                throw Rollback()
            }
            #expect(try Person.find(4)?.name == "Maria")
        }
    }
}
