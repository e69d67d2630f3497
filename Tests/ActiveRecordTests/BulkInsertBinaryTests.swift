@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Columns of the server types the library maps to, altered on PostgreSQL to narrower or
/// other types: `smallint`, `integer`, `varchar`, and `jsonb` (no binary form here: sent as
/// text), beside `numeric` and `uuid` (no binary form here either).
final class BulkTyped: Model {
    @Column var small: Int64 = 0
    @Column var medium: Int64 = 0
    @Column var label: String = ""
    @Column var document: String = "{}"
    @Column var amount: Decimal = 0
    @Column var token: UUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Column var flag: Bool = false
}

/// Issue 35, point 4 (second pass): PostgreSQL's bulk insert sends every value in its column
/// type's binary form (the one-row `INSERT` described for the types), text where the type has
/// none here; every type the library maps reads back exactly, a value that does not fit its
/// column fails clearly, and a table changed after the description is never misread.
@Suite("insertAll in bulk: binary values of every column type")
struct BulkInsertBinaryTests {
    /// Record `n` (from 0) of every mapped type: extremes first, NULLs, empty and unicode text,
    /// bytes with zeros.
    static func everything(_ n: Int) -> Everything {
        let record = Everything()
        record.string = ["", "Ünïcødé ✓ 🚀 東京 \(n)", "plain \(n)", "quote ' and \\ backslash, \"double\""][n % 4]
        record.optionalString = n % 3 == 0 ? nil : n % 3 == 1 ? "" : "optional \(n)"
        let integers: [Int64] = [.min, .max, 0, -1, Int64(Int32.max) + 1, Int64(Int32.min) - 1]
        record.int64 = n < integers.count ? integers[n] : Int64(n) * 1_000_003 - 7
        record.int = Int(record.int64 / 3)
        record.int8 = n % 2 == 0 ? .min : .max
        record.int16 = Int16(truncatingIfNeeded: n &* 31)
        record.int32 = n % 3 == 0 ? .min : n % 3 == 1 ? .max : Int32(n)
        record.uint8 = UInt8(truncatingIfNeeded: n)
        record.uint16 = .max
        record.uint32 = UInt32.max - UInt32(n)
        record.uint64 = UInt64(Int64.max) - UInt64(n)
        record.uint = UInt(n)
        let doubles: [Double] = [.infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude, 0.1, -2.5e-7, 1e-300]
        record.double = n < doubles.count ? doubles[n] : Double(n) / 7
        record.float = n % 2 == 0 ? .greatestFiniteMagnitude : Float(n) / 3
        record.bool = n % 2 == 0
        record.decimal = Decimal(string: n % 2 == 0 ? "12345678901234567890.123456789\(n % 10)" : "-0.\(n)")!
        record.date = Date(timeIntervalSince1970: 1_700_000_000.125 + Double(n))
        record.optionalDate = n % 2 == 0 ? nil : Date(timeIntervalSince1970: -Double(n) * 86_400.5)
        record.data = n % 5 == 0 ? Data() : Data([0, 0, UInt8(truncatingIfNeeded: n), 0, 255, 0])
        record.optionalData = n % 4 == 0 ? nil : Data([0])
        record.uuid = UUID(uuidString: String(format: "%08X-0000-4000-8000-%012X", n, n * 7))!
        record.url = n % 2 == 0 ? URL(string: "https://example.com/\(n)?q=ü") : nil
        record.role = n % 2 == 0 ? .admin : .guest
        record.level = n % 3 == 0 ? nil : n % 3 == 1 ? .low : .high
        record.tags = n % 4 == 0 ? [] : ["a\(n)", "ü ✓"]
        record.scores = ["x": n, "y": -n]
        record.address = Address(city: "City \(n)", zip: n % 2 == 0 ? nil : n)
        record.point = Point(x: n, y: -n)
        return record
    }

    /// Whether `a` and `b` hold the same id and values.
    static func same(_ a: Everything, _ b: Everything) -> Bool {
        a.id == b.id && a.string == b.string && a.optionalString == b.optionalString && a.int == b.int && a.int8 == b.int8
            && a.int16 == b.int16 && a.int32 == b.int32 && a.int64 == b.int64 && a.uint8 == b.uint8 && a.uint16 == b.uint16
            && a.uint32 == b.uint32 && a.uint64 == b.uint64 && a.uint == b.uint && a.double == b.double && a.float == b.float
            && a.bool == b.bool && a.decimal == b.decimal && a.date == b.date && a.optionalDate == b.optionalDate
            && a.data == b.data && a.optionalData == b.optionalData && a.uuid == b.uuid && a.url == b.url && a.role == b.role
            && a.level == b.level && a.tags == b.tags && a.scores == b.scores && a.address == b.address && a.point == b.point
            && a.createdAt == b.createdAt && a.updatedAt == b.updatedAt
    }

    static func expectSame(_ records: [Everything], _ stored: [Everything], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(stored.count == records.count, sourceLocation: sourceLocation)
        let different = zip(records, stored).filter { !same($0, $1) }
        #expect(different.isEmpty, "\(different.count) differ, first: \(different.first.map { "\($0.0.string) vs \($0.1.string)" } ?? "")",
            sourceLocation: sourceLocation)
    }

    @Test(arguments: TestEngine.all) func everyMappedTypeRoundTrips(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            // Two full statements (1,000 rows each) and a short one, twice: the second time the
            // connection knows the table's types and its statement.
            var first: [Everything] = []
            for round in 0..<2 {
                let records = (0..<2_100).map { Self.everything($0 + round * 10_000) }
                try Everything.insertAll(records)
                let stored = try Everything.query().where("id >= %@", records[0].id!).order(by: "id").fetch()
                Self.expectSame(records, stored)
                if round == 0 { first = records }
            }
            // Stored as the one-row insert stores them, to the server's own text of each value.
            let hex = engine == .postgres ? #"encode("data", 'hex')"# : #"hex("data")"#
            let row = #"SELECT "string", CAST("double" AS TEXT), CAST("float" AS TEXT), CAST("decimal" AS TEXT), "#
                + #"CAST("uuid" AS TEXT), \#(hex), "int64", "int32", CAST("bool" AS TEXT), CAST("date" AS TEXT), "tags" "#
                + #"FROM "Everything" WHERE id = ?"#
            for n in [0, 1, 2, 3, 4, 5, 6, 7, 1_999] {
                let one = Self.everything(n)
                try one.save()
                #expect(try db.rows(row, [.integer(one.id!)]) == db.rows(row, [.integer(first[n].id!)]), "record \(n)")
            }
            // NaN is refused as everywhere, and on PostgreSQL a NUL in text: nothing inserted.
            let count = try Everything.count()
            let failing = (20_000..<21_500).map(Self.everything)
            failing[1_200].double = .nan
            _ = expectError(.invalidValue) { try Everything.insertAll(failing) }
            failing[1_200].double = 1
            if engine == .postgres {
                failing[1_300].string = "a\0b"
                let error = expectError(.invalidValue) { try Everything.insertAll(failing) }
                #expect(error?.message.hasPrefix("record 1301 of 1500: ") == true, "\(error?.message ?? "")")
                #expect(error?.message.contains("NUL") == true)
            }
            #expect(try Everything.count() == count && failing.allSatisfy(\.isNewRecord))
        }
    }

    @Test(.enabled(if: TestEngine.postgresConnection != nil))
    func narrowerIntegersAndTypesWithoutABinaryForm() throws {
        try withDatabase(.postgres) { db throws in
            _ = try BulkTyped.count()
            try db.execute(#"ALTER TABLE "BulkTyped" ALTER COLUMN "small" DROP DEFAULT, ALTER COLUMN "small" TYPE SMALLINT, "#
                + #"ALTER COLUMN "medium" DROP DEFAULT, ALTER COLUMN "medium" TYPE INTEGER, "#
                + #"ALTER COLUMN "label" TYPE VARCHAR(40), ALTER COLUMN "document" DROP DEFAULT, "#
                + #"ALTER COLUMN "document" TYPE JSONB USING "document"::jsonb"#)
            let records = (0..<2_100).map { n in
                let record = BulkTyped()
                record.small = n % 2 == 0 ? Int64(Int16.min) : Int64(Int16.max)
                record.medium = n % 3 == 0 ? Int64(Int32.min) : Int64(n)
                record.label = n % 2 == 0 ? "" : "étiquette \(n)"
                record.document = #"{"n": \#(n), "s": "ü"}"#
                record.amount = Decimal(string: "-98765432109876543210.0123456789\(n % 10)")!
                record.token = UUID(uuidString: String(format: "%08X-1111-4000-8000-%012X", n, n))!
                record.flag = n % 2 == 1
                return record
            }
            try BulkTyped.insertAll(records)
            let stored = try BulkTyped.query().order(by: "id").fetch()
            #expect(stored.count == records.count)
            for (record, row) in zip(records, stored) where record.id != row.id || record.small != row.small
                || record.medium != row.medium || record.label != row.label || record.document != row.document
                || record.amount != row.amount || record.token != row.token || record.flag != row.flag
            {
                Issue.record("\(record.id ?? 0): stored \(row.small) \(row.medium) \(row.label) \(row.document) \(row.amount) \(row.token)")
                break
            }
            // A value over its column's range goes as text, and the server refuses it clearly.
            let over = (0..<1_500).map { _ in BulkTyped() }
            over[1_234].medium = Int64(Int32.max) + 1
            let error = expectError(.invalidValue) { try BulkTyped.insertAll(over) }
            #expect(error?.message.hasPrefix("record 1235 of 1500: ") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("out of range") == true, "\(error?.message ?? "")")
            #expect(try BulkTyped.count() == records.count)
        }
    }

    @Test(arguments: TestEngine.all) func statementsLeftInFlightOrWaitedForUnderATimeout(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            // Each statement is left in flight while the next rows are encoded, unless a
            // statement timeout is set in the transaction (each is then waited for): both
            // name the failing row, and a record that cannot be bound leaves the connection usable.
            for timeout in [false, true] {
                let items = (0..<3_500).map { BulkInsertTests.item($0 + (timeout ? 100_000 : 0)) }
                items[2_600].code = items[1_200].code
                let insert = {
                    let error = expectError(.constraint) { try db.transaction { try BulkItem.insertAll(items) } }
                    #expect(error?.message.hasPrefix("record 2601 of 3500: ") == true, "\(error?.message ?? "")")
                    items[2_600].code = "fixed \(timeout)"
                    items[3_400].ratio = .nan
                    _ = expectError(.invalidValue) { try db.transaction { try BulkItem.insertAll(items) } }
                    items[3_400].ratio = 1
                    try db.transaction { try BulkItem.insertAll(items) }
                }
                if timeout { try db.withStatementTimeout(.seconds(30), insert) } else { try insert() }
            }
            #expect(try BulkItem.count() == 7_000)
        }
    }

    /// Inserts items `range` and checks that their `count` and `flag` columns hold their values
    /// (whatever the columns' types now).
    static func insertAndCheck(_ range: Range<Int>, _ db: Database, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let items = range.map(BulkInsertTests.item)
        try BulkItem.insertAll(items)
        let rows = try db.rows(#"SELECT "count"::bigint, "flag"::integer FROM "BulkItem" WHERE id >= ? ORDER BY id"#, [.integer(items[0].id!)])
        #expect(rows.count == items.count, sourceLocation: sourceLocation)
        #expect(zip(items, rows).allSatisfy { $1 == [.integer($0.count), .integer($0.flag ? 1 : 0)] }, sourceLocation: sourceLocation)
    }

    @Test(.enabled(if: TestEngine.postgresConnection != nil))
    func aTableChangedAfterItsDescriptionIsNeverMisread() throws {
        try withDatabase(.postgres) { db throws in
            // One transaction: one connection, which keeps the table's form from the first insert.
            try db.transaction {
                try Self.insertAndCheck(2_000..<3_500, db)
                // `count` becomes an `integer`: the statement prepared for `bigint` values still
                // sends 8-byte integers declared `bigint`, which the server converts.
                try db.execute(#"ALTER TABLE "BulkItem" ALTER COLUMN "count" DROP DEFAULT, ALTER COLUMN "count" TYPE INTEGER USING ("count" % 1000000)::integer"#)
                try Self.insertAndCheck(4_000..<5_500, db)
                // `flag` becomes an `integer`, which a `boolean` is not converted to: the server
                // refuses the statement, clearly; the next insert describes the table again.
                try db.execute(#"ALTER TABLE "BulkItem" ALTER COLUMN "flag" DROP DEFAULT, ALTER COLUMN "flag" TYPE INTEGER USING "flag"::integer"#)
                let failing = (6_000..<7_500).map(BulkInsertTests.item)
                var message = ""
                do {
                    try db.transaction { try BulkItem.insertAll(failing) }
                    Issue.record("a boolean into an integer column was not refused")
                } catch let error as ActiveRecordError {
                    message = error.message
                }
                #expect(message.contains("\"flag\" is of type integer but expression is of type boolean"), "\(message)")
                #expect(failing.allSatisfy { $0.isNewRecord })
                try Self.insertAndCheck(6_000..<7_500, db)
            }
            #expect(try BulkItem.count() == 4_500)
        }
    }
}

/// The same behind a transaction pooler's rules (`transactionPooling: true`): the table is
/// described in every `insertAll`, nothing is prepared by name.
@Suite("insertAll in bulk: binary values with transaction pooling", .enabled(if: TestEngine.postgresConnection != nil))
struct BulkInsertBinaryPoolingTests {
    @Test func binaryValuesWithUnnamedStatementsFollowAChangedTable() throws {
        try withTransactionPoolingDatabase { database in
            let records = (0..<2_100).map(BulkInsertBinaryTests.everything)
            try Everything.insertAll(records)
            BulkInsertBinaryTests.expectSame(records, try Everything.query().order(by: "id").fetch())
            try BulkInsertBinaryTests.insertAndCheck(0..<1_500, database)
            try database.execute(#"ALTER TABLE "BulkItem" ALTER COLUMN "flag" DROP DEFAULT, ALTER COLUMN "flag" TYPE INTEGER USING "flag"::integer"#)
            try BulkInsertBinaryTests.insertAndCheck(2_000..<3_500, database)
            let named = try database.rows("SELECT count(*) FROM pg_prepared_statements")
            #expect(named.first?.first == .integer(0))
        }
    }
}

/// Runs `body` with a PostgreSQL database of its own schema opened with `transactionPooling:
/// true` (straight to the server: a pooler's rules without the pooler), current.
func withTransactionPoolingDatabase(_ body: (Database) throws -> Void) throws {
    let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    try PostgresAdmin.database.execute("CREATE SCHEMA \(ident: schema)")
    defer { try? PostgresAdmin.database.execute("DROP SCHEMA \(ident: schema) CASCADE") }
    let database = try Database(.postgres(TestEngine.connection(schema: schema), transactionPooling: true))
    try database.use { try body(database) }
}
