@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Logging
import Synchronization
import Testing

/// A table another program made: no timestamps.
final class Legacy: Model {
    @Column var name: String = ""
}

final class NoPrimaryKey: Model {
    @Column var name: String = ""
}

final class FKParent: Model {
    @Column var title: String = ""
}

final class FKChild: Model {
    @Column var name: String = ""
    @BelongsTo(key: "parentId") var parent: FKParent?
}

/// Names SQLite keeps apart: `é`/`É`, and `k`/the Kelvin sign `K` (U+212A), which Swift's
/// `lowercased()` would fold together.
final class Accented: Model {
    @Column("É") var upper: String = ""
    @Column("é") var lower: String = ""
}

/// Two nested classes named alike: both would take the table `Clerk`.
enum Admin {
    final class Clerk: Model {
        @Column var role: String = ""
    }
}

enum Shop {
    final class Clerk: Model {
        @Column var cart: String = ""
    }

    final class Parcel: Model {
        @Column var weight: Int = 0
    }
}

enum Warehouse {
    /// Shares `Parcel` with `Shop.Parcel` on purpose: it names the table itself.
    final class Parcel: Model {
        override class var tableName: String { "Parcel" }
        @Column var weight: Int = 0
    }
}

final class FirstInTransaction: Model {
    @Column var n: Int = 0
}

final class FirstRolledBack: Model {
    @Column var n: Int = 0
}

@Suite("Schema evolution")
struct SchemaEvolutionTests {
    @Test(arguments: TestEngine.all) func aLegacyTableGetsItsTimestamps(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.execute(#"CREATE TABLE "Legacy" ("# + engine.idColumn + #", "name" TEXT NOT NULL DEFAULT '')"#)
            try db.execute(#"INSERT INTO "Legacy" ("name") VALUES ('old')"#)
            #expect(try db.drift(of: [Legacy.self]).first?.missingColumns == ["createdAt", "updatedAt"])
            let new = try Legacy.create(["name": "new"])
            #expect(new.createdAt != nil)
            let old = try #require(try Legacy.first(where: "name", equals: "old"))
            #expect(old.createdAt == nil && old.updatedAt == nil)
            old.name = "renewed"
            try old.save()
            #expect(old.updatedAt != nil)
            #expect(try db.drift(of: [Legacy.self]).first?.isEmpty == true)
        }
    }

    @Test(arguments: TestEngine.all) func aTableWithoutAnIDIsAClearError(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.execute(#"CREATE TABLE "NoPrimaryKey" ("name" TEXT)"#)
            let error = expectError(.invalidModel) { try NoPrimaryKey.create(["name": "x"]) }
            #expect(error?.message.contains("has no id column") == true)
        }
    }

    @Test(arguments: TestEngine.all) func belongsToKeysAreForeignKeys(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let parent = try FKParent.create(["title": "p"])
            let child = FKChild()
            child.parent = parent
            try child.save()
            switch engine {
            case .sqlite:
                let ddl = try storedValue(db, "SELECT sql FROM sqlite_master WHERE name = 'FKChild'")
                #expect(ddl.description.contains(#""parentId" INTEGER REFERENCES "FKParent"("id") DEFERRABLE INITIALLY DEFERRED"#))
            case .postgres:
                let key = try db.rows(
                    "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' AND conrelid = CAST(? AS regclass)",
                    [.text(#""FKChild""#)])
                #expect(key == [[.text(#"FOREIGN KEY ("parentId") REFERENCES "FKParent"(id) DEFERRABLE INITIALLY DEFERRED"#)]])
            }
            // No orphan: a key naming no parent fails when its transaction commits.
            let orphan = try FKChild.create(["name": "o"])
            orphan.parent = nil
            try orphan.set(["parentId": Int64(999)])
            let error = expectError(.constraint) { try orphan.save() }
            #expect(error?.isForeignKeyViolation == true)
            #expect(try FKChild.find(orphan.id!)?.value(of: "parentId") == .null)
            // A parent with children and no dependency cannot be destroyed from under them.
            let destroying = expectError(.constraint) { try parent.destroy() }
            #expect(destroying?.isForeignKeyViolation == true)
            #expect(try FKParent.count() == 1 && FKChild.count() == 2)
            // Inside one transaction the check waits for the commit (deferred): reparenting works.
            try db.transaction {
                let other = try FKParent.create(["title": "q"])
                child.parent = other
                try child.save()
                try parent.destroy()
            }
            #expect(try FKParent.all().map(\.title) == ["q"])
        }
    }

    @Test(arguments: TestEngine.all) func theDriftReportNamesAMissingForeignKey(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try db.execute(
                #"CREATE TABLE "FKChild" ("# + engine.idColumn + #", "createdAt" \#(engine.real), "updatedAt" \#(engine.real), "#
                    + #""name" TEXT NOT NULL DEFAULT '', "parentId" \#(engine.integer))"#)
            let log = LogLines()
            db.logger = log.logger()
            let drift = try #require(try db.drift(of: [FKChild.self]).first)
            #expect(drift.missingForeignKeys == ["parentId → FKParent(id)"])
            #expect(drift.description.contains("foreign keys not in the table, left alone"))
            _ = try FKChild.count()  // automatic migration leaves it, and says so
            #expect(log.all.contains { $0.contains("parentId → FKParent(id)") })
        }
    }

    @Test func namesAreMatchedAsSQLiteMatchesThem() throws {
        // Reserved names in any ASCII case.
        for reserved in ["ID", "Id", "CREATEDAT", "updatedat"] {
            expectError(.invalidModel) { _ = try TableSchema(name: "T", columns: [ColumnSchema(name: reserved, type: .text)]) }
        }
        // SQLite keeps é and É apart (it folds ASCII only): two columns, each its own.
        try withMemoryDatabase { db throws in
            try Accented.create(["É": "upper", "é": "lower"])
            #expect(try db.rows(#"SELECT "É", "é" FROM "Accented""#) == [[.text("upper"), .text("lower")]])
            #expect(try db.drift(of: [Accented.self]).first?.isEmpty == true)
        }
        try withDatabaseFile { path in
            let setup = try Database(.file(path))
            try setup.execute("CREATE TABLE \"T\" (\"id\" INTEGER PRIMARY KEY, \"é\" TEXT, \"É\" TEXT, \"k\" TEXT, \"\u{212A}\" TEXT)")
            var migrator = Migrator()
            migrator.register("drop é and k") { context in
                try context.dropColumn("é", from: "T")
                try context.dropColumn("k", from: "T")
            }
            let db = try Database(.file(path), migrator: migrator)
            #expect(try db.rows(#"SELECT name FROM pragma_table_info('T')"#).compactMap(\.first)
                == [.text("id"), .text("É"), .text("\u{212A}")])
        }
    }

    @Test func twoClassesTakingOneTableByAccidentIsAnError() throws {
        #expect(try Admin.Clerk.schema().name == "Clerk")
        let error = expectError(.invalidModel) { _ = try Shop.Clerk.schema() }
        #expect(error?.message.contains("ActiveRecordTests.Admin.Clerk and ActiveRecordTests.Shop.Clerk both map to the table Clerk") == true)
        // One that names the table itself shares it on purpose.
        #expect(try Shop.Parcel.schema().name == "Parcel")
        #expect(try Warehouse.Parcel.schema().name == "Parcel")
    }

    /// A model first used inside a transaction: until it commits, the table exists only for
    /// the transaction's thread; another thread waits for it rather than failing with
    /// "no such table"; and after a rollback the next use makes the table again.
    @Test(arguments: TestEngine.all) func aTableMadeInATransactionIsSeenByOtherThreadsOnlyOnceItCommits(engine: TestEngine) throws {
        try withDatabaseLocation(engine) { place in
            let db = try Database(place.location)
            let created = DispatchSemaphore(value: 0), commit = DispatchSemaphore(value: 0)
            let counted = DispatchSemaphore(value: 0)
            let result = Mutex<String>("")
            // Interleaving: A creates the table in its transaction and holds it open; B counts
            // meanwhile (it must wait: for the writer on SQLite, for the schema lock A's
            // transaction holds on PostgreSQL); A commits; B finishes.
            DispatchQueue.global().async {
                db.use {
                    _ = try? db.transaction {
                        try FirstInTransaction.create(["n": 1])
                        created.signal()
                        commit.wait()
                    }
                }
            }
            created.wait()
            DispatchQueue.global().async {
                db.use {
                    let outcome = Result { try FirstInTransaction.count() }
                    result.withLock { $0 = "\(outcome)" }
                    counted.signal()
                }
            }
            #expect(counted.wait(timeout: .now() + 0.3) == .timedOut)  // B waits for A
            commit.signal()
            #expect(counted.wait(timeout: .now() + 10) == .success)
            #expect(result.withLock { $0 } == "success(1)")
            // Rolled back: the table is gone, and a later save makes it again.
            try db.use {
                try db.transaction {
                    try FirstRolledBack.create(["n": 1])
                    throw Rollback()
                }
            }
            let saved = Mutex<String>("")
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                db.use {
                    saved.withLock { $0 = "\(Result { try FirstRolledBack.create(["n": 2]).id })" }
                    done.signal()
                }
            }
            #expect(done.wait(timeout: .now() + 10) == .success)
            #expect(saved.withLock { $0 } == "success(Optional(1))")
        }
    }

    /// Six processes first use a model whose class has two columns the table lacks, at the
    /// same moment: each reads the table under the lock it alters it with (SQLite's write
    /// lock, PostgreSQL's schema lock), so none adds a column another already added.
    @Test(arguments: TestEngine.all) func automaticMigrationIsSafeAcrossProcesses(engine: TestEngine) throws {
        for round in 1...3 {
            try withDatabaseLocation(engine) { place in
                try Database(place.location).execute(
                    #"CREATE TABLE "Widened" ("# + engine.idColumn + #", "createdAt" \#(engine.real), "updatedAt" \#(engine.real), "#
                        + #""name" TEXT NOT NULL DEFAULT '')"#)
                let start = Date().timeIntervalSince1970 + 0.5
                let children = try runStressChildren(Array(repeating: ["migrate", place.argument, String(start)], count: 6))
                for child in children { #expect(child.status == 0, "round \(round): \(child.output)") }
                #expect(try Database(place.location).rows(#"SELECT count(*) FROM "Widened""#) == [[.integer(6)]])
            }
        }
    }
}
