@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

enum Role: String, ColumnValue, Codable { case admin, guest }
enum Level: Int, ColumnValue { case low = 1, high = 9 }

struct Address: Codable, Equatable, ColumnValue {
    var city = ""
    var zip: Int? = nil
}

/// A custom type through the public protocol: stored as "x,y" text.
struct Point: ColumnValue, Equatable {
    var x = 0, y = 0
    static var sqlType: SQLType { .text }
    func toSQL() -> DatabaseValue { .text("\(x),\(y)") }
    static func fromSQL(_ value: DatabaseValue) throws -> Point {
        guard case .text(let text) = value else { throw ActiveRecordError(.typeMismatch, "Point expects TEXT") }
        let parts = text.split(separator: ",").compactMap { Int($0) }
        guard parts.count == 2 else { throw ActiveRecordError(.typeMismatch, "'\(text)' is not a Point") }
        return Point(x: parts[0], y: parts[1])
    }
}

final class Everything: Model {
    @Column var string: String = ""
    @Column var optionalString: String? = nil
    @Column var int: Int = 0
    @Column var int8: Int8 = 0
    @Column var int16: Int16 = 0
    @Column var int32: Int32 = 0
    @Column var int64: Int64 = 0
    @Column var uint8: UInt8 = 0
    @Column var uint16: UInt16 = 0
    @Column var uint32: UInt32 = 0
    @Column var uint64: UInt64 = 0
    @Column var uint: UInt = 0
    @Column var double: Double = 0
    @Column var float: Float = 0
    @Column var bool: Bool = false
    @Column var decimal: Decimal = 0
    @Column var date: Date = Date(timeIntervalSince1970: 0)
    @Column var optionalDate: Date? = nil
    @Column var data: Data = Data()
    @Column var optionalData: Data? = nil
    @Column var uuid: UUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Column var url: URL? = nil
    @Column var role: Role = .guest
    @Column var level: Level? = nil
    @Column var tags: [String] = []
    @Column var scores: [String: Int] = [:]
    @Column var address: Address = Address()
    @Column var point: Point = Point()
}

@Suite("Column types round-trip exactly")
struct TypeRoundTripTests {
    /// Saves `record`, fetches it back by id from the database, returns the copy.
    func roundTrip(_ record: Everything) throws -> Everything {
        try record.save()
        return try #require(try Everything.find(record.id!))
    }

    @Test("strings", arguments: TestEngine.all, ["", "Alex", "Алексей", "👩‍👩‍👧‍👦 emoji", "Al'ex", "Bo\"b", "a\0b", "-- ; DROP TABLE Everything", String(repeating: "x", count: 100_000)])
    func strings(_ engine: TestEngine, _ value: String) throws {
        try withDatabase(engine) { _ throws in
            let record = Everything()
            record.string = value
            record.optionalString = value
            if engine == .postgres, value.utf8.contains(0) {
                // PostgreSQL's text cannot hold NUL: a clear error, and nothing saved.
                let error = expectError(.invalidValue) { try record.save() }
                #expect(error?.message.contains("cannot hold a NUL character") == true)
                #expect(record.isNewRecord && (try? Everything.count()) ?? 0 == 0)
                return
            }
            let copy = try roundTrip(record)
            #expect(copy.string == value && copy.optionalString == value)
            #expect(try Everything.count() == 1)
        }
    }

    @Test(arguments: TestEngine.all) func emptyStringIsNotNil(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let record = Everything()
            record.optionalString = ""
            let copy = try roundTrip(record)
            #expect(copy.optionalString == "")
            #expect(try storedValue(db, #"SELECT "optionalString" FROM "Everything""#) == .text(""))
            copy.optionalString = nil
            try copy.save()
            #expect(try Everything.find(copy.id!)?.optionalString == nil)
            #expect(try storedValue(db, #"SELECT "optionalString" FROM "Everything""#) == .null)
        }
    }

    @Test("64-bit integers", arguments: TestEngine.all, [Int64.min, -1, 0, 1, Int64(Int32.max) + 1, Int64.max])
    func int64s(_ engine: TestEngine, _ value: Int64) throws {
        try withDatabase(engine) { db throws in
            let record = Everything()
            record.int64 = value
            record.int = Int(value)
            let copy = try roundTrip(record)
            #expect(copy.int64 == value && copy.int == Int(value))
            #expect(try storedValue(db, #"SELECT "int64" FROM "Everything""#) == .integer(value))
        }
    }

    @Test(arguments: TestEngine.all) func fixedWidthIntegerExtremes(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let record = Everything()
            record.int8 = .min
            record.int16 = .max
            record.int32 = .min
            record.uint8 = .max
            record.uint16 = .max
            record.uint32 = .max
            record.uint64 = UInt64(Int64.max)
            record.uint = UInt(Int64.max)
            let copy = try roundTrip(record)
            #expect(copy.int8 == .min && copy.int16 == .max && copy.int32 == .min)
            #expect(copy.uint8 == .max && copy.uint16 == .max && copy.uint32 == .max)
            #expect(copy.uint64 == UInt64(Int64.max) && copy.uint == UInt(Int64.max))
        }
    }

    @Test(arguments: TestEngine.all) func unsignedAboveInt64MaxIsAClearErrorAndNothingIsWritten(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let record = Everything()
            record.uint64 = UInt64(Int64.max) + 1
            let error = expectError(.invalidValue) { try record.save() }
            #expect(error?.message.contains("above Int64.max") == true)
            #expect(record.isNewRecord)
            #expect(try Everything.count() == 0)
        }
    }

    @Test(arguments: TestEngine.all) func outOfRangeStoredIntegerIsATypeMismatchNamingTheColumn(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            try Everything().save()
            try db.execute(#"UPDATE "Everything" SET "int8" = 300"#)
            let error = expectError(.typeMismatch) { _ = try Everything.all() }
            #expect(error?.message.contains("Everything.int8") == true)
            #expect(error?.message.contains("out of Int8's range -128...127") == true)
            #expect(error?.message.contains("300") == false)  // never the value
        }
    }

    @Test("doubles and floats", arguments: TestEngine.all, [0.0, -0.5, 1e-300, .pi, Double.greatestFiniteMagnitude, .infinity, -.infinity])
    func doubles(_ engine: TestEngine, _ value: Double) throws {
        try withDatabase(engine) { _ throws in
            let record = Everything()
            record.double = value
            record.float = Float(value)
            let copy = try roundTrip(record)
            #expect(copy.double == value)
            #expect(copy.float == Float(value))
        }
    }

    @Test(arguments: TestEngine.all) func nanIsRefusedBecauseSQLiteWouldStoreNull(engine: TestEngine) throws {
        try withDatabase(engine) { _ throws in
            let record = Everything()
            record.double = .nan
            expectError(.invalidValue) { try record.save() }
        }
    }

    @Test(arguments: TestEngine.all) func boolsAreZeroAndOne(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let record = Everything()
            record.bool = true
            #expect(try roundTrip(record).bool == true)
            #expect(try storedValue(db, #"SELECT "bool" FROM "Everything""#) == .integer(1))
        }
    }

    @Test("decimals as POSIX text", arguments: TestEngine.all, ["1123.563", "0", "-0.000000000000000001", "99999999999999999999999999999999999999"])
    func decimals(_ engine: TestEngine, _ text: String) throws {
        try withDatabase(engine) { db throws in
            let value = try #require(Decimal(string: text))
            let record = Everything()
            record.decimal = value
            #expect(try roundTrip(record).decimal == value)
            let stored = try storedValue(db, #"SELECT "decimal" FROM "Everything""#)
            switch engine {
            case .sqlite: #expect(stored == .text(value.description))
            case .postgres: #expect(try Decimal.fromSQL(stored) == value)  // NUMERIC: whole numbers read as integers
            }
        }
        #expect(try Decimal.fromSQL(.text("1123.563")) == Decimal(string: "1123.563"))
        #expect(throws: ActiveRecordError.self) { try Decimal.fromSQL(.text("12abc")) }
        // More significant digits than Decimal keeps would be rounded silently: refused.
        #expect(throws: ActiveRecordError.self) { try Decimal.fromSQL(.text(String(repeating: "9", count: 41))) }
        #expect(try Decimal.fromSQL(.text("1e3")) == 1000)
    }

    @Test("dates as REAL seconds", arguments: TestEngine.all, [0, 1_700_000_000.123456, -86_400.5, 32_503_680_000.000_25])
    func dates(_ engine: TestEngine, _ seconds: Double) throws {
        try withDatabase(engine) { db throws in
            let date = Date(timeIntervalSince1970: seconds)
            let record = Everything()
            record.date = date
            record.optionalDate = date
            let copy = try roundTrip(record)
            #expect(copy.date == date && copy.optionalDate == date)
            #expect(copy.date.timeIntervalSince1970 == seconds)  // sub-millisecond kept
            #expect(try storedValue(db, #"SELECT "date" FROM "Everything""#) == .real(seconds))
        }
    }

    @Test("blobs", arguments: TestEngine.all, [Data(), Data([0]), Data([0, 255, 1, 0]), Data(repeating: 7, count: 1 << 20)])
    func blobs(_ engine: TestEngine, _ value: Data) throws {
        try withDatabase(engine) { db throws in
            let record = Everything()
            record.data = value
            record.optionalData = value
            let copy = try roundTrip(record)
            #expect(copy.data == value && copy.optionalData == value)
            // Zero-length data stays an empty blob, not NULL.
            let kind = engine == .sqlite ? #"typeof("optionalData")"# : #"pg_typeof("optionalData")::text"#
            #expect(try storedValue(db, #"SELECT \#(kind) FROM "Everything""#) == .text(engine == .sqlite ? "blob" : "bytea"))
            #expect(try storedValue(db, #"SELECT "optionalData" IS NULL FROM "Everything""#) == .integer(0))
        }
    }

    @Test(arguments: TestEngine.all) func uuidsURLsAndEnums(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let record = Everything()
            let uuid = UUID()
            record.uuid = uuid
            record.url = URL(string: "https://example.com/a?b=c&d=%20")
            record.role = .admin
            record.level = .high
            let copy = try roundTrip(record)
            #expect(copy.uuid == uuid && copy.url == record.url)
            #expect(copy.role == .admin && copy.level == .high)
            #expect(try storedValue(db, #"SELECT "role" FROM "Everything""#) == .text("admin"))
            #expect(try storedValue(db, #"SELECT "level" FROM "Everything""#) == .integer(9))
            // PostgreSQL's uuid type writes itself in lower case.
            let text = engine == .sqlite ? uuid.uuidString : uuid.uuidString.lowercased()
            #expect(try storedValue(db, #"SELECT "uuid" FROM "Everything""#) == .text(text))
            try db.execute(#"UPDATE "Everything" SET "role" = 'root'"#)
            let error = expectError(.typeMismatch) { _ = try Everything.all() }
            #expect(error?.message.contains("Everything.role") == true)
            #expect(error?.message.contains("not one of its raw values") == true)
            #expect(error?.message.contains("root") == false)  // never the value
        }
    }

    @Test(arguments: TestEngine.all) func codableValuesAsJSONWithMutationInPlaceDetected(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let record = Everything()
            record.tags = ["a", "b"]
            record.scores = ["z": 1, "a": 2]
            record.address = Address(city: "Kyiv", zip: nil)
            let copy = try roundTrip(record)
            #expect(copy.tags == ["a", "b"] && copy.scores == ["z": 1, "a": 2] && copy.address == record.address)
            // JSON with sorted keys; PostgreSQL's JSONB keeps its own spelling (a space after each ':' and ',').
            #expect(try storedValue(db, #"SELECT "scores" FROM "Everything""#)
                == .text(engine == .sqlite ? #"{"a":2,"z":1}"# : #"{"a": 2, "z": 1}"#))
            #expect(!copy.hasChanges)
            copy.tags.append("c")
            copy.address.zip = 1000
            #expect(copy.changes.map(\.column) == ["tags", "address"])
            let recorder = SQLRecorder(db)
            let sql = try recorder.during { try copy.save() }
            #expect(sql == [#"UPDATE "Everything" SET "tags" = ?, "address" = ?, "updatedAt" = ? WHERE "id" = ?"#])
            let again = try #require(try Everything.find(copy.id!))
            #expect(again.tags == ["a", "b", "c"] && again.address.zip == 1000)
        }
    }

    @Test(arguments: TestEngine.all) func customTypeThroughTheProtocol(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            let record = Everything()
            record.point = Point(x: 3, y: -4)
            #expect(try roundTrip(record).point == Point(x: 3, y: -4))
            #expect(try storedValue(db, #"SELECT "point" FROM "Everything""#) == .text("3,-4"))
        }
    }

    @Test func declaredSQLTypesAndNullability() throws {
        let columns = try Everything.schema().columns
        func column(_ name: String) throws -> ColumnSchema { try #require(columns.first { $0.name == name }) }
        #expect(try column("string").type == .text && !column("string").isNullable)
        #expect(try column("optionalString").isNullable)
        #expect(try column("uint64").type == .integer && column("bool").type == .integer)
        #expect(try column("double").type == .real && column("date").type == .real)
        #expect(try column("decimal").type == .text && column("uuid").type == .text && column("tags").type == .text)
        #expect(try column("data").type == .blob)
        #expect(try column("role").type == .text && column("level").type == .integer && column("level").isNullable)
    }
}
