@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 35, point 2 (the record write path): texts and bytes are bound straight from a
/// record's fields, an update of one column finds its cached statement by a number, and
/// `Database.current` is read from a per-thread mirror of `use { }` on a thread that runs no
/// task. These check that the values written, the statements chosen and the database found
/// stay what they were.
@Suite("Record write path")
struct RecordWritePathTests {
    final class WritePathRecord: Model {
        @Column var label: String = ""
        @Column var memo: String? = nil
        @Column var contents: Data = Data()
        @Column var extra: Data? = nil
        @Column var weight: Double = 0
        @Column var count: Int = 0
    }

    /// Texts small enough to sit inside the `String` (up to 15 bytes), larger ones, empty,
    /// non-ASCII; bytes empty, small and large; and `nil`s.
    private static let samples: [(String, String?, Data, Data?)] = [
        ("", nil, Data(), nil),
        ("short", "", Data([0]), Data()),
        ("exactly 15 byte", "é ü ✓", Data([1, 2, 3]), Data([0, 255])),
        (String(repeating: "long label ", count: 40), String(repeating: "ü", count: 300),
         Data((0..<4096).map { UInt8(truncatingIfNeeded: $0) }), Data(repeating: 7, count: 17)),
    ]

    @Test(arguments: TestEngine.all) func insertsAndUpdatesWriteTextsAndBytesAsTheFieldsHoldThem(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            var ids: [Int64] = []
            try db.transaction {
                for (label, memo, contents, extra) in Self.samples {
                    let parcel = WritePathRecord()
                    parcel.label = label
                    parcel.memo = memo
                    parcel.contents = contents
                    parcel.extra = extra
                    try parcel.save()
                    ids.append(try #require(parcel.id))
                }
            }
            for (id, sample) in zip(ids, Self.samples) {
                let stored = try #require(try WritePathRecord.find(id))
                #expect(stored.label == sample.0)
                #expect(stored.memo == sample.1)
                #expect(stored.contents == sample.2)
                #expect(stored.extra == sample.3)
            }
            // Each sample's values moved one record on: every kind written over every other.
            for (offset, id) in ids.enumerated() {
                let parcel = try #require(try WritePathRecord.find(id))
                let next = Self.samples[(offset + 1) % Self.samples.count]
                parcel.label = next.0
                parcel.memo = next.1
                parcel.contents = next.2
                parcel.extra = next.3
                try parcel.save()
                #expect(!parcel.hasChanges)
            }
            for (offset, id) in ids.enumerated() {
                let stored = try #require(try WritePathRecord.find(id))
                let next = Self.samples[(offset + 1) % Self.samples.count]
                #expect([stored.label, stored.memo ?? "nil"] == [next.0, next.1 ?? "nil"])
                #expect([stored.contents, stored.extra ?? Data("nil".utf8)] == [next.2, next.3 ?? Data("nil".utf8)])
            }
        }
    }

    @Test(arguments: TestEngine.all) func textWithANulIsStillRefusedOnPostgreSQLAndStoredOnSQLite(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let parcel = WritePathRecord()
            parcel.label = "a\u{0}b"
            if engine == .postgres {
                _ = expectError(.invalidValue) { try parcel.save() }
                #expect(parcel.id == nil)
            } else {
                try parcel.save()
                #expect(try WritePathRecord.find(parcel.id!)?.label == "a\u{0}b")
            }
        }
    }

    @Test(arguments: TestEngine.all) func alternatingOneColumnUpdatesEachUseTheirOwnStatement(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let parcel = try WritePathRecord.create(["label": "p", "weight": 1.0, "count": 1])
            let recorder = SQLRecorder(db)
            try db.transaction {
                for step in 1...6 {
                    switch step % 3 {
                    case 0: parcel.count = step
                    case 1: parcel.weight = Double(step) + 0.5
                    default: parcel.label = "p\(step)"
                    }
                    try parcel.save()
                }
            }
            #expect(recorder.all.filter { $0.hasPrefix("UPDATE") } == [
                #"UPDATE "WritePathRecord" SET "weight" = ?, "updatedAt" = ? WHERE "id" = ?"#,
                #"UPDATE "WritePathRecord" SET "label" = ?, "updatedAt" = ? WHERE "id" = ?"#,
                #"UPDATE "WritePathRecord" SET "count" = ?, "updatedAt" = ? WHERE "id" = ?"#,
                #"UPDATE "WritePathRecord" SET "weight" = ?, "updatedAt" = ? WHERE "id" = ?"#,
                #"UPDATE "WritePathRecord" SET "label" = ?, "updatedAt" = ? WHERE "id" = ?"#,
                #"UPDATE "WritePathRecord" SET "count" = ?, "updatedAt" = ? WHERE "id" = ?"#,
            ])
            let stored = try #require(try WritePathRecord.find(parcel.id!))
            #expect([stored.label, "\(stored.weight)", "\(stored.count)"] == ["p5", "4.5", "6"])
        }
    }

    @Test func aStatementKeyOfOneUpdatedColumnIsANumberOfItsOwn() {
        let keys: [StatementKey] = [
            StatementKey(table: 1, kind: .insert), StatementKey(table: 1, kind: .find),
            StatementKey(table: 1, kind: .delete), StatementKey(table: 1, kind: .all),
            StatementKey(table: 1, kind: .query(0)), StatementKey(table: 1, kind: .query(1)),
            StatementKey(table: 1, kind: .update([0])), StatementKey(table: 1, kind: .update([1])),
            StatementKey(table: 2, kind: .update([0])), StatementKey(table: 8, kind: .insert),
            StatementKey(table: 1, kind: .update([0, 1])),
        ]
        let codes = keys.map(\.code)
        #expect(codes.last == 0, "several columns: compared as keys")
        let numbered = codes.dropLast()
        #expect(!numbered.contains(0))
        #expect(Set(numbered).count == numbered.count, "\(codes)")
    }

    /// Runs `body` on a thread of its own, which runs no task, and waits for it.
    private static func onPlainThread(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.start()
        while !thread.isFinished { usleep(1_000) }
    }

    @Test func onAThreadWithoutATaskCurrentIsTheInnermostUse() throws {
        let outer = try Database(.inMemory)
        let inner = try Database(.inMemory)
        let found = Mutex<[String]>([])
        Self.onPlainThread {
            func note(_ place: String, _ expected: Database) {
                #expect(!Database.runsInTask())
                let same = (try? Database.current) === expected
                #expect(same, "\(place)")
                #expect(Database.scopedAddressFromRuntime() == Database.threadScopedAddress, "\(place)")
                found.withLock { $0.append(place) }
            }
            #expect(Database.threadScopedAddress == nil)
            outer.use {
                note("in use", outer)
                inner.use { note("in a nested use", inner) }
                note("after the nested use", outer)
                struct Failure: Error {}
                #expect(throws: Failure.self) { try inner.use { () throws in throw Failure() } }
                note("after a nested use that threw", outer)
                Self.onPlainThread { #expect(Database.threadScopedAddress == nil, "another thread") }
            }
            #expect(Database.threadScopedAddress == nil)
            #expect(Database.scopedAddressFromRuntime() == nil)
        }
        #expect(found.withLock { $0.count } == 4)
    }

    @Test(arguments: TestEngine.all) func writesOnAThreadWithoutATaskGoToTheDatabaseOfItsUse(engine: TestEngine) throws {
        let first = try engine.makeDatabase()
        let second = try engine.makeDatabase()
        defer {
            first.drop()
            second.drop()
        }
        let errors = Mutex<[String]>([])
        Self.onPlainThread {
            do {
                try first.database.use {
                    let parcel = WritePathRecord()
                    parcel.label = "first"
                    try parcel.save()
                    try second.database.use {
                        try WritePathRecord.create(["label": "second"])
                        #expect(try WritePathRecord.all().map(\.label) == ["second"], "the second database's only")
                    }
                    parcel.count = 3
                    try parcel.save()
                }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        #expect(errors.withLock { $0 } == [])
        let inFirst = try first.database.use { try WritePathRecord.all().map { "\($0.label) \($0.count)" } }
        let inSecond = try second.database.use { try WritePathRecord.all().map(\.label) }
        #expect(inFirst == ["first 3"])
        #expect(inSecond == ["second"])
    }
}
