@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Synchronization
import Testing

@testable import ActiveRecordPostgreSQL

/// A record of every kind of column an insert binds, with a flag between two texts (padding
/// in the object) and bytes long enough not to be stored inline by `Data`.
final class InsertPathRecord: Model {
    @Column var name: String = ""
    @Column var flag: Bool = false
    @Column var note: String? = nil
    @Column var count: Int = 0
    @Column var ratio: Double = 0
    @Column var bytes: Data = Data()
}

/// The same columns, one of whose defaults is made anew for each record.
final class InsertPathTokened: Model {
    @Column var token: String = UUID().uuidString
    @Column var flag: Bool = false
    @Column var title: String = ""
}

/// A record whose initialiser sets its flag through the column's storage (no setter), to each
/// record the other value than the one before: one record in two differs from the instance
/// reflection made by that one byte (beside padding) alone.
final class InsertPathFlagged: Model {
    static let made = Atomic<Int>(0)
    @Column var flag: Bool = false
    @Column var title: String = ""

    required init() {
        super.init()
        _flag = Column(wrappedValue: Self.made.add(1, ordering: .relaxed).newValue % 2 == 0)
    }
}

/// Observed by the observation test (a table of its own).
final class InsertPathEvent: Model {
    @Column var label: String = ""
}

/// What an observation delivered, for a test to wait on.
private final class EventDeliveries: Sendable {
    private let values = Mutex<[[String]]>([])

    func record(_ result: Result<[InsertPathEvent], any Error>) {
        if case .success(let events) = result { values.withLock { $0.append(events.map(\.label)) } }
    }

    var all: [[String]] { values.withLock { $0 } }

    /// Waits (up to 10 s) until `condition` holds.
    func wait(_ condition: ([[String]]) -> Bool) -> Bool {
        for _ in 0..<1_000 {
            if condition(all) { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition(all)
    }

    /// Lets an observation that should not deliver have the time to do it wrongly.
    func settle() { Thread.sleep(forTimeInterval: 0.3) }
}

/// The insert path of issue 35, point 2 (fourth session): a prepared form's parameters laid
/// out in a loop of their own with an inline NUL check, a new record's defaults checked in one
/// pass over its words, the prepared form run without a retain, and the changes of writes
/// outside a transaction dropped without emptying a set per write when nobody observes.
@Suite struct InsertPathTests {
    /// The NUL check of a text parameter, against a byte-by-byte look, for every length up to
    /// 40 and every position of a NUL (the word and half-word reads and their overlapping last
    /// read), at an odd address too.
    @Test func theNULCheckFindsEveryNULAndNoOther() {
        let storage = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { storage.deallocate() }
        for shift in 0..<2 {
            let base = storage + shift
            for count in 0...40 {
                base.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "a"), count: count)
                #expect(!ParameterLayout.containsNUL(base, count: count), "no NUL in \(count) bytes")
                // A NUL just past the text is not in it.
                base.storeBytes(of: 0, toByteOffset: count, as: UInt8.self)
                #expect(!ParameterLayout.containsNUL(base, count: count), "a NUL after \(count) bytes")
                for position in 0..<count {
                    base.storeBytes(of: 0, toByteOffset: position, as: UInt8.self)
                    #expect(ParameterLayout.containsNUL(base, count: count), "a NUL at \(position) of \(count) bytes")
                    base.storeBytes(of: 0x80, toByteOffset: position, as: UInt8.self)
                    #expect(!ParameterLayout.containsNUL(base, count: count), "0x80 at \(position) of \(count) bytes")
                    base.storeBytes(of: UInt8(ascii: "a"), toByteOffset: position, as: UInt8.self)
                }
            }
        }
    }

    /// A text holding a NUL at any place of any short length is refused with the error naming
    /// the parameter, in a transaction and outside one, nothing saved; the transaction goes
    /// on (nothing was sent), and the same statement then saves valid texts.
    @Test func aNULInTextOfAnyLengthIsRefusedBeforeAnythingIsSent() throws {
        guard TestEngine.postgresConnection != nil else { return }
        try withDatabase(.postgres) { db throws in
            var kept = 0
            for count in [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24] {
                for position in Set([0, count / 2, count - 1]) {
                    var bytes = [UInt8](repeating: UInt8(ascii: "n"), count: count)
                    bytes[position] = 0
                    let text = String(decoding: bytes, as: UTF8.self)
                    // Outside a transaction: the name (parameter 3).
                    let alone = InsertPathRecord()
                    alone.name = text
                    let error = expectError(.invalidValue) { try alone.save() }
                    #expect(error?.message.contains("cannot hold a NUL character (parameter 3)") == true)
                    #expect(alone.isNewRecord)
                    // In a transaction: the note (parameter 5); the transaction commits its other insert.
                    try db.transaction {
                        let refused = InsertPathRecord()
                        refused.name = "refused"
                        refused.note = text
                        let inside = expectError(.invalidValue) { try refused.save() }
                        #expect(inside?.message.contains("cannot hold a NUL character (parameter 5)") == true)
                        #expect(refused.isNewRecord)
                        let record = InsertPathRecord()
                        record.name = String(repeating: "k", count: count)
                        try record.save()
                    }
                    kept += 1
                }
            }
            #expect(try InsertPathRecord.count() == kept)
            #expect(try InsertPathRecord.query().where("name = %@", "refused").count() == 0)
        }
    }

    /// Texts of every short length and bytes of several lengths (empty, inline in `Data`, on
    /// the heap) read back as saved, in a transaction and outside one, with a `NULL` note in
    /// between (another form of the statement).
    @Test(arguments: TestEngine.all) func textsAndBytesRoundTrip(_ engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            var saved: [(Int64, String, String?, Data)] = []
            func insert(_ index: Int) throws {
                let record = InsertPathRecord()
                record.name = String(repeating: "é", count: index % 11) + String(index)
                record.note = index % 3 == 0 ? nil : String(repeating: "n", count: index)
                record.bytes = Data((0..<[0, 1, 14, 15, 16, 100][index % 6]).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) })
                record.flag = index % 2 == 1
                record.count = index
                record.ratio = Double(index) / 8
                try record.save()
                saved.append((record.id!, record.name, record.note, record.bytes))
            }
            for index in 0..<12 { try insert(index) }
            try db.transaction { for index in 12..<24 { try insert(index) } }
            for (offset, (id, name, note, bytes)) in saved.enumerated() {
                let copy = try #require(try InsertPathRecord.find(id))
                #expect(copy.name == name && copy.note == note && copy.bytes == bytes)
                #expect(copy.flag == (offset % 2 == 1) && copy.count == offset && copy.ratio == Double(offset) / 8)
            }
        }
    }

    /// A new record filled in compares with its class's defaults, a flag (next to padding)
    /// included, until it is inserted; after the insert it holds no change, and a change is
    /// against the values inserted.
    @Test(arguments: TestEngine.all) func aNewRecordsChangesAreAgainstItsDefaultsThenItsRow(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let record = InsertPathRecord()
            #expect(!record.hasChanges)
            record.flag = true
            #expect(record.originalsState == .defaults && record.extras == nil)
            #expect(record.changes == [ColumnChange(column: "flag", old: .integer(0), new: .integer(1))])
            record.flag = false
            #expect(!record.hasChanges)
            record.name = "n"
            record.bytes = Data([1, 2, 3])
            #expect(record.changes.map(\.column) == ["name", "bytes"])
            try record.save()
            #expect(!record.hasChanges && !record.originalsCaptured)
            record.count = 5
            #expect(record.changes == [ColumnChange(column: "count", old: .integer(0), new: .integer(5))])
            try record.save()
            #expect(try InsertPathRecord.find(record.id!)?.count == 5)
        }
    }

    /// A record whose defaults differ from its class's (one made anew for each record), or that
    /// was changed before its first write through a setter, compares with its own values as
    /// they were at that first write: the one-pass check of the defaults sees every word.
    @Test(arguments: TestEngine.all) func aNewRecordNotHoldingTheDefaultsComparesWithItsOwnValues(_ engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let tokened = InsertPathTokened()
            tokened.title = "t"
            #expect(tokened.originalsState == .aside)
            #expect(tokened.changes == [ColumnChange(column: "title", old: .text(""), new: .text("t"))])
            try tokened.save()
            #expect(!tokened.hasChanges)
            #expect(try InsertPathTokened.find(tokened.id!)?.token == tokened.token)
            // Two records in a row: one holds the defaults, the other differs by its flag's
            // byte alone; each compares with its own values (the flag unchanged).
            let records = [InsertPathFlagged(), InsertPathFlagged()]
            #expect(records[0].flag != records[1].flag)
            for record in records {
                record.title = "x"
                #expect(record.changes == [ColumnChange(column: "title", old: .text(""), new: .text("x"))])
            }
            #expect(Set(records.map(\.originalsState)) == [.defaults, .aside])
            for record in records { try record.save() }
            #expect(try InsertPathFlagged.query().order(by: "id").fetch().map(\.flag) == records.map(\.flag))
        }
    }

    /// Inserts outside a transaction are visible at once to another connection, and after an
    /// error (a NUL, a duplicate id) the next insert on the same statement works.
    @Test(arguments: TestEngine.all) func autocommitInsertsAreVisibleAndRecoverFromErrors(_ engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let first = InsertPathRecord()
            first.name = "first"
            try first.save()
            #expect(try db.read { try InsertPathRecord.count() } == 1)
            if engine == .postgres {
                let refused = InsertPathRecord()
                refused.name = "a\0"
                _ = expectError(.invalidValue) { try refused.save() }
            }
            // A duplicate key: the engine's error, the record still new.
            try db.execute(#"CREATE UNIQUE INDEX "InsertPathRecord_name_unique" ON "InsertPathRecord" ("name")"#)
            let duplicate = InsertPathRecord()
            duplicate.name = "first"
            #expect(throws: (any Error).self) { try duplicate.save() }
            #expect(duplicate.isNewRecord)
            for index in 0..<3 {
                let next = InsertPathRecord()
                next.name = "next \(index)"
                try next.save()
                #expect(next.id != nil)
            }
            #expect(try InsertPathRecord.query().order(by: "id").fetch().map(\.name) == ["first", "next 0", "next 1", "next 2"])
        }
    }

    /// Inserts outside a transaction while nobody observes, then an observer: the inserts
    /// after it are delivered (their changes no longer dropped), those of a transaction only
    /// once it commits, and a rolled-back one not at all.
    @Test(arguments: TestEngine.all) func insertsAfterUnobservedOnesAreDelivered(_ engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            for index in 0..<3 { try InsertPathEvent.create(["label": "quiet \(index)"]) }
            let deliveries = EventDeliveries()
            let observation = db.observe(InsertPathEvent.query().order(by: "id")) { deliveries.record($0) }
            defer { observation.cancel() }
            #expect(deliveries.wait { $0.last?.count == 3 })
            try InsertPathEvent.create(["label": "heard"])
            #expect(deliveries.wait { $0.last?.last == "heard" })
            let before = deliveries.all.count
            try db.transaction {
                try InsertPathEvent.create(["label": "in transaction"])
                try InsertPathEvent.create(["label": "in transaction too"])
                deliveries.settle()
                #expect(deliveries.all.count == before)
            }
            #expect(deliveries.wait { $0.last?.last == "in transaction too" })
            let settled = deliveries.all.count
            try db.transaction {
                try InsertPathEvent.create(["label": "rolled back"])
                throw Rollback()
            }
            deliveries.settle()
            #expect(deliveries.all.count == settled)
            try InsertPathEvent.create(["label": "heard again"])
            #expect(deliveries.wait { $0.last?.last == "heard again" })
        }
    }

    /// An insert outside a transaction while nobody observes, then a transaction during which
    /// an observer comes: the transaction's writes (to the same table, the changes dropped
    /// before it still noted) are delivered once it commits, not before. PostgreSQL only: there
    /// the observer's first fetch runs on another connection during the transaction (on
    /// SQLite it waits for the transaction's end).
    @Test func anObserverAddedDuringATransactionHearsOnlyItsCommit() throws {
        guard TestEngine.postgresConnection != nil else { return }
        try withDatabase(.postgres) { db throws in
            try InsertPathEvent.create(["label": "before"])
            try InsertPathEvent.create(["label": "before too"])
            let deliveries = EventDeliveries()
            var observation: DatabaseObservation?
            try db.transaction {
                observation = db.observe(InsertPathEvent.query().order(by: "id")) { deliveries.record($0) }
                #expect(deliveries.wait { $0 == [["before", "before too"]] })
                for index in 0..<3 { try InsertPathEvent.create(["label": "inside \(index)"]) }
                deliveries.settle()
                #expect(deliveries.all == [["before", "before too"]])
            }
            defer { observation?.cancel() }
            #expect(deliveries.wait { $0.last == ["before", "before too", "inside 0", "inside 1", "inside 2"] })
        }
    }

    /// Unobserved inserts outside a transaction, then a transaction that inserts while still
    /// unobserved, and an observer added after it commits: nothing delivered but its first
    /// result and what comes after (no change dropped earlier comes back).
    @Test(arguments: TestEngine.all) func changesDroppedUnobservedDoNotComeBack(_ engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try InsertPathEvent.create(["label": "a"])
            try InsertPathEvent.create(["label": "b"])
            try db.transaction { try InsertPathEvent.create(["label": "c"]) }
            try InsertPathEvent.create(["label": "d"])
            let deliveries = EventDeliveries()
            let observation = db.observe(InsertPathEvent.query().order(by: "id")) { deliveries.record($0) }
            defer { observation.cancel() }
            #expect(deliveries.wait { $0 == [["a", "b", "c", "d"]] })
            deliveries.settle()
            #expect(deliveries.all == [["a", "b", "c", "d"]])
        }
    }
}
