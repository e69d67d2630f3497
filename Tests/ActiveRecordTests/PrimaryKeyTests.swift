@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// A model keyed by a UUID column named `id`, generated on insert when left nil.
final class KeyDevice: Model {
    override class var primaryKey: PrimaryKey { .uuid("id") }
    @Column("id") var uuid: UUID? = nil
    @Column var name: String = ""
}

/// A model keyed by a String the caller sets.
final class KeyCountry: Model {
    override class var primaryKey: PrimaryKey { .string("code") }
    @Column var code: String = ""
    @Column var name: String = ""
    @Column var population: Int = 0
}

/// An integer key under another name.
final class KeyMember: Model {
    override class var primaryKey: PrimaryKey { .autoincrement("memberID") }
    @Column var name: String = ""
}

/// A UUID key in a non-optional column named by its property, locked optimistically.
final class KeyTicket: Model {
    override class var primaryKey: PrimaryKey { .uuid("ticketKey") }
    @Column var ticketKey: UUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Column var title: String = ""
    @Column var lockVersion: Int = 0
}

/// A key naming a column the model does not declare.
final class KeyMissingColumn: Model {
    override class var primaryKey: PrimaryKey { .string("code") }
    @Column var name: String = ""
}

/// A UUID key naming a String column.
final class KeyWrongType: Model {
    override class var primaryKey: PrimaryKey { .uuid("code") }
    @Column var code: String = ""
}

/// Issue 36, point 1: primary keys other than an Int64 `id` (UUID, String, a custom name), on
/// both engines: the table made, insert, find, update, destroy, reload, and the errors.
@Suite("Primary keys")
struct PrimaryKeyTests {
    @Test(arguments: TestEngine.all) func aUUIDKeyIsGeneratedOnInsertAndFindsTheRecord(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let device = KeyDevice()
            device.name = "phone"
            #expect(device.isNewRecord)
            #expect(device.primaryKeyValue == .null)
            try device.save()
            let uuid = try #require(device.uuid)
            #expect(!device.isNewRecord)
            #expect(device.primaryKeyValue == .text(uuid.uuidString))
            // Version 4 (random), as the library generates them.
            #expect(uuid.uuidString[uuid.uuidString.index(uuid.uuidString.startIndex, offsetBy: 14)] == "4")
            let found = try #require(try KeyDevice.find(uuid))
            #expect(found.name == "phone")
            #expect(found.uuid == uuid)
            #expect(!found.isNewRecord)
            #expect(try KeyDevice.find(UUID()) == nil)
            // The column is the table's primary key, holding the UUID.
            let rows = try db.rows(#"SELECT "id", "name" FROM "KeyDevice""#)
            #expect(rows.count == 1)
            #expect(try UUID.fromSQL(rows[0][0]) == uuid)  // PostgreSQL's uuid reads back in lower case
            #expect(rows[0][1] == .text("phone"))
        }
    }

    @Test(arguments: TestEngine.all) func aUUIDSetByTheCallerIsKept(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
            let device = KeyDevice()
            device.uuid = uuid
            try device.save()
            #expect(device.uuid == uuid)
            #expect(try KeyDevice.find(key: uuid)?.uuid == uuid)
            // Another record with the same key is refused by the primary key.
            let twin = KeyDevice()
            twin.uuid = uuid
            _ = expectError(.constraint) { try twin.save() }
            #expect(twin.isNewRecord)
            #expect(try KeyDevice.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func saveInsertsThenUpdatesByTheStringKey(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let france = KeyCountry()
            france.code = "FR"
            france.name = "France"
            try france.save()
            let germany = try KeyCountry.create(["code": "DE", "name": "Germany"])
            france.population = 68
            try france.save()  // an UPDATE of France's row only
            #expect(try KeyCountry.count() == 2)
            #expect(try KeyCountry.find("FR")?.population == 68)
            #expect(try KeyCountry.find("DE")?.population == 0)
            #expect(try KeyCountry.find("XX") == nil)
            let names = try db.rows(#"SELECT "code", "name", "population" FROM "KeyCountry" ORDER BY "code""#)
            #expect(names == [[.text("DE"), .text("Germany"), .integer(0)], [.text("FR"), .text("France"), .integer(68)]])
            // Reload reads the row by its key.
            try db.execute(#"UPDATE "KeyCountry" SET "name" = 'Allemagne' WHERE "code" = 'DE'"#)
            try germany.reload()
            #expect(germany.name == "Allemagne")
            // all() is in key order; first() and last() too.
            #expect(try KeyCountry.all().map(\.code) == ["DE", "FR"])
            #expect(try KeyCountry.first()?.code == "DE")
            #expect(try KeyCountry.last()?.code == "FR")
            #expect(try KeyCountry.exists(key: .text("FR")))
        }
    }

    @Test(arguments: TestEngine.all) func destroyAndDeleteGoByTheKey(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            for code in ["FR", "DE", "IT"] { try KeyCountry.create(["code": code]) }
            let france = try #require(try KeyCountry.find("FR"))
            try france.destroy()
            #expect(france.isDestroyed)
            #expect(try KeyCountry.all().map(\.code) == ["DE", "IT"])
            #expect(try KeyCountry.delete(key: "IT"))
            #expect(try !KeyCountry.delete(key: "IT"))
            #expect(try KeyCountry.all().map(\.code) == ["DE"])
            // A record deleted elsewhere: destroy and reload say so, by key.
            let germany = try #require(try KeyCountry.find("DE"))
            #expect(try KeyCountry.delete(key: "DE"))
            let gone = expectError(.notFound) { try germany.reload() }
            #expect(gone?.message.contains("code 'DE'") == true)
            _ = expectError(.notFound) { try germany.destroy() }
        }
    }

    @Test(arguments: TestEngine.all) func anEmptyStringKeyIsRefusedAndNothingIsWritten(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let nameless = KeyCountry()
            nameless.name = "Nowhere"
            let error = expectError(.invalidValue) { try nameless.save() }
            #expect(error?.message.contains("KeyCountry.code is its primary key") == true)
            #expect(nameless.isNewRecord)
            #expect(try KeyCountry.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func changingTheKeyOfASavedRecordIsRefused(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let france = try KeyCountry.create(["code": "FR", "name": "France"])
            france.code = "FX"
            france.name = "France métropolitaine"
            let error = expectError(.misuse) { try france.save() }
            #expect(error?.message.contains("cannot change once saved") == true)
            #expect(try KeyCountry.find("FR")?.name == "France")
            #expect(try KeyCountry.find("FX") == nil)
            // The record still stands for its row: reload reads it back, destroy deletes it.
            try france.reload()
            #expect(france.code == "FR")
            #expect(france.name == "France")
            france.code = "FX"
            try france.destroy()
            #expect(try KeyCountry.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func aCustomIntegerKeyNameIsTheTablesKey(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let ann = try KeyMember.create(["name": "Ann"])
            let bob = try KeyMember.create(["name": "Bob"])
            let annID = try #require(ann.id)
            #expect(bob.id == annID + 1)
            #expect(ann.primaryKeyValue == .integer(annID))
            #expect(try db.rows(#"SELECT "memberID", "name" FROM "KeyMember" ORDER BY "memberID""#)
                == [[.integer(annID), .text("Ann")], [.integer(annID + 1), .text("Bob")]])
            ann.name = "Anne"
            try ann.save()
            #expect(try KeyMember.find(annID)?.name == "Anne")
            #expect(try KeyMember.query().where("memberID", .equal(annID + 1)).fetch().map(\.name) == ["Bob"])
            #expect(try KeyMember.query().where("id", .equal(annID + 1)).fetch().map(\.name) == ["Bob"])
            try bob.destroy()
            #expect(try KeyMember.all().map(\.name) == ["Anne"])
            #expect(try KeyMember.exists(id: annID))
        }
    }

    @Test(arguments: TestEngine.all) func aKeyedModelQueriesByItsKeyAndLocksOptimistically(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let first = KeyTicket()
            first.title = "one"
            try first.save()
            #expect(first.ticketKey != UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
            let copy = try #require(try KeyTicket.find(first.ticketKey))
            first.title = "uno"
            try first.save()
            #expect(first.lockVersion == 1)
            copy.title = "eins"
            _ = expectError(.staleRecord) { try copy.save() }
            #expect(try KeyTicket.query().where("ticketKey", .equal(first.ticketKey)).fetch().map(\.title) == ["uno"])
            #expect(try KeyTicket.first(where: "id", equals: first.ticketKey)?.title == "uno")
            try first.destroy()
            #expect(try KeyTicket.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func aKeyOfAnotherTypeIsRefused(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            _ = expectError(.typeMismatch) { _ = try KeyCountry.find(key: Int64(3)) }
            _ = expectError(.typeMismatch) { _ = try KeyDevice.find("not a uuid") }
            _ = expectError(.typeMismatch) { _ = try KeyMember.find("FR") }
        }
    }

    @Test func aKeyNamingNoColumnOrTheWrongTypeIsAnInvalidModel() throws {
        try withDatabase(.sqlite) { _ throws in
            let missing = expectError(.invalidModel) { try KeyMissingColumn().save() }
            #expect(missing?.message.contains("names no column") == true)
            let wrong = expectError(.invalidModel) { try KeyWrongType().save() }
            #expect(wrong?.message.contains("must be a UUID column") == true)
        }
    }

    @Test func theTablesAreMadeWithTheirKeys() throws {
        let dialect = SQLiteDialect()
        let country = try ModelMapping.of(KeyCountry.self).table.schema
        #expect(try country.createTableSQL(dialect)
            == #"CREATE TABLE IF NOT EXISTS "KeyCountry" ("createdAt" REAL, "updatedAt" REAL, "code" TEXT NOT NULL PRIMARY KEY, "#
            + #""name" TEXT NOT NULL DEFAULT '', "population" INTEGER NOT NULL DEFAULT 0)"#)
        #expect(country.findSQL.hasSuffix(#"WHERE "code" = ?"#))
        #expect(country.updateSQL(columns: [1]) == #"UPDATE "KeyCountry" SET "name" = ?, "updatedAt" = ? WHERE "code" = ?"#)
        let member = try ModelMapping.of(KeyMember.self).table.schema
        #expect(try member.createTableSQL(dialect).hasPrefix(#"CREATE TABLE IF NOT EXISTS "KeyMember" ("memberID" INTEGER PRIMARY KEY, "#))
        #expect(member.deleteSQL == #"DELETE FROM "KeyMember" WHERE "memberID" = ?"#)
    }

    @Test func aModelDefinedAtRunTimeMayHaveAStringKey() throws {
        try withDatabase(.sqlite) { _ throws in
            let schema = try TableSchema(
                name: "Airport", columns: [ColumnSchema(name: "iata", type: .text), ColumnSchema(name: "city", type: .text)],
                primaryKey: .string("iata"))
            let airports = DynamicModel(schema)
            let cdg = airports.makeRecord()
            try cdg.set("iata", .text("CDG"))
            try cdg.set("city", .text("Paris"))
            try cdg.save()
            try cdg.set("city", .text("Roissy"))
            try cdg.save()
            #expect(try airports.find(key: .text("CDG"))?.value("city") == .text("Roissy"))
            #expect(try airports.count() == 1)
        }
    }
}
