@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// The C ABI as a C program sees it: libactiverecord.so loaded with dlopen, its functions
/// called through C function pointers. (Calling the `@c` functions as Swift functions from
/// another Swift module is not an option: on Swift 6.3.1 an `@c` enum crossing a Swift
/// module boundary is misread — `e_kind.two.rawValue` gives 1 — while C callers are fine.)
struct CAPI {
    typealias Handle = OpaquePointer?
    typealias Out = UnsafeMutablePointer<OpaquePointer?>?
    typealias Text = UnsafePointer<CChar>?
    // ar_result values, as in include/activerecord.h.
    static let ok: Int32 = 0, notFound: Int32 = 2, misuse: Int32 = 3, unknownColumn: Int32 = 4
    static let typeMismatch: Int32 = 5, invalidValue: Int32 = 6, invalidPredicate: Int32 = 7
    // ar_type and ar_column_flag values.
    static let text: Int32 = 1, integer: Int32 = 2, real: Int32 = 3, nullable: Int32 = 1, indexed: Int32 = 2

    let open: @convention(c) (Text, Out) -> Int32
    let close: @convention(c) (Handle) -> Void
    let lastError: @convention(c) (Handle) -> UnsafePointer<CChar>
    let modelDefine: @convention(c) (Handle, Text, Out) -> Int32
    let modelAddColumn: @convention(c) (Handle, Text, Int32, Int32) -> Int32
    let modelFree: @convention(c) (Handle) -> Void
    let recordNew: @convention(c) (Handle, Out) -> Int32
    let recordFree: @convention(c) (Handle) -> Void
    let recordID: @convention(c) (Handle) -> Int64
    let setText: @convention(c) (Handle, Text, Text) -> Int32
    let setInt64: @convention(c) (Handle, Text, Int64) -> Int32
    let setDecimal: @convention(c) (Handle, Text, Text) -> Int32
    let getText: @convention(c) (Handle, Text, UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32
    let getInt64: @convention(c) (Handle, Text, UnsafeMutablePointer<Int64>?) -> Int32
    let getDouble: @convention(c) (Handle, Text, UnsafeMutablePointer<Double>?) -> Int32
    let save: @convention(c) (Handle) -> Int32
    let find: @convention(c) (Handle, Int64, Out) -> Int32
    let count: @convention(c) (Handle, UnsafeMutablePointer<Int64>?) -> Int32
    let queryNew: @convention(c) (Handle, Text, Out) -> Int32

    init(_ path: String) throws {
        guard let library = dlopen(path, RTLD_NOW) else {
            throw ActiveRecordError(.cannotOpen, "dlopen \(path): \(String(cString: dlerror()))")
        }
        func function<T>(_ name: String) -> T {
            guard let symbol = dlsym(library, name) else { preconditionFailure("\(name) is not exported") }
            return unsafeBitCast(symbol, to: T.self)
        }
        open = function("ar_open")
        close = function("ar_close")
        lastError = function("ar_last_error")
        modelDefine = function("ar_model_define")
        modelAddColumn = function("ar_model_add_column")
        modelFree = function("ar_model_free")
        recordNew = function("ar_record_new")
        recordFree = function("ar_record_free")
        recordID = function("ar_record_id")
        setText = function("ar_record_set_text")
        setInt64 = function("ar_record_set_int64")
        setDecimal = function("ar_record_set_decimal")
        getText = function("ar_record_get_text")
        getInt64 = function("ar_record_get_int64")
        getDouble = function("ar_record_get_double")
        save = function("ar_record_save")
        find = function("ar_find")
        count = function("ar_count")
        queryNew = function("ar_query_new")
    }
}

/// The same table, "Pet", as a Swift class.
final class Pet2: Model {
    override class var tableName: String { "Pet" }
    @Column var name: String = ""
    @Column var legs: Int = 0
    @Column var weight: Double? = nil
}

@Suite("C ABI")
struct CABITests {
    /// The repository root (this file is Tests/ActiveRecordTests/CABITests.swift).
    static var root: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }

    @Test func onlyArSymbolsAreExportedAndTheyMatchTheHeader() throws {
        let library = Self.root.appendingPathComponent(".build/c/lib/libactiverecord.so").path
        try #require(FileManager.default.fileExists(atPath: library), "run 'make lib' first (make test does)")
        let nm = Process()
        nm.executableURL = URL(fileURLWithPath: "/usr/bin/nm")
        nm.arguments = ["-D", "--defined-only", library]
        let pipe = Pipe()
        nm.standardOutput = pipe
        try nm.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        nm.waitUntilExit()
        let symbols = output.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        let linkerMarkers: Set = ["__bss_start", "_edata", "_end", "_init", "_fini"]
        // Swift's own (mangled, $s…) symbols are its ABI; every C symbol is ours and ar_-prefixed.
        let cSymbols = symbols.filter { !$0.hasPrefix("$s") && !linkerMarkers.contains($0) }
        #expect(cSymbols.allSatisfy { $0.hasPrefix("ar_") }, "\(cSymbols.filter { !$0.hasPrefix("ar_") })")
        let header = try String(contentsOf: Self.root.appendingPathComponent("include/activerecord.h"), encoding: .utf8)
        let declared = header.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: #"\bar_\w+(?=\()"#, options: .regularExpression), !line.hasPrefix("//") else { return nil }
            return String(line[range])
        }
        #expect(Set(cSymbols) == Set(declared))
        #expect(declared.count >= 50)
    }

    static func library() throws -> CAPI {
        let path = root.appendingPathComponent(".build/c/lib/libactiverecord.so").path
        try #require(FileManager.default.fileExists(atPath: path), "run 'make lib' first (make test does)")
        return try CAPI(path)
    }

    /// A model defined through the C API and a Swift class on one database file:
    /// rows written by one are read by the other.
    @Test func aCModelAndASwiftClassShareOneTable() throws {
        let c = try Self.library()
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("shared.sqlite").path
        var database: OpaquePointer?
        #expect(c.open(path, &database) == CAPI.ok)
        defer { c.close(database) }
        var model: OpaquePointer?
        #expect(c.modelDefine(database, "Pet", &model) == CAPI.ok)
        defer { c.modelFree(model) }
        #expect(c.modelAddColumn(model, "name", CAPI.text, 0) == CAPI.ok)
        #expect(c.modelAddColumn(model, "legs", CAPI.integer, CAPI.indexed) == CAPI.ok)
        #expect(c.modelAddColumn(model, "weight", CAPI.real, CAPI.nullable) == CAPI.ok)
        var record: OpaquePointer?
        #expect(c.recordNew(model, &record) == CAPI.ok)
        #expect(c.setText(record, "name", "Rex") == CAPI.ok)
        #expect(c.setInt64(record, "legs", 4) == CAPI.ok)
        #expect(c.save(record) == CAPI.ok)
        let cID = c.recordID(record)
        c.recordFree(record)

        // Swift reads what C wrote, and writes a row of its own.
        let swiftDatabase = try Database(.file(path))
        let swiftID = try swiftDatabase.use { () throws -> Int64 in
            let rex = try #require(try Pet2.find(cID))
            #expect(rex.name == "Rex" && rex.legs == 4 && rex.weight == nil)
            return try Pet2.create(["name": "Tweety", "legs": 2, "weight": 0.1]).id!
        }

        // C reads what Swift wrote.
        var found: OpaquePointer?
        #expect(c.find(model, swiftID, &found) == CAPI.ok)
        defer { c.recordFree(found) }
        var name: UnsafePointer<CChar>?
        #expect(c.getText(found, "name", &name) == CAPI.ok)
        #expect(name.map { String(cString: $0) } == "Tweety")
        var weight = 0.0
        #expect(c.getDouble(found, "weight", &weight) == CAPI.ok && weight == 0.1)
        var count: Int64 = 0
        #expect(c.count(model, &count) == CAPI.ok && count == 2)
    }

    @Test func errorsAreCodesWithMessagesNeverCrashes() throws {
        let c = try Self.library()
        var database: OpaquePointer?
        #expect(c.open(":memory:", &database) == CAPI.ok)
        defer { c.close(database) }
        var model: OpaquePointer?
        _ = c.modelDefine(database, "Thing", &model)
        defer { c.modelFree(model) }
        _ = c.modelAddColumn(model, "name", CAPI.text, 0)
        #expect(c.modelAddColumn(model, "kind", 99, 0) == CAPI.misuse)  // not an ar_type
        var query: OpaquePointer?
        #expect(c.queryNew(model, "nmae = ?", &query) == CAPI.unknownColumn)
        #expect(String(cString: c.lastError(database)).contains("unknown column 'nmae' at position 1"))
        #expect(query == nil)
        #expect(c.queryNew(model, "name = (", &query) == CAPI.invalidPredicate)
        #expect(c.save(nil) == CAPI.misuse)
        #expect(c.save(model) == CAPI.misuse)  // a handle of the wrong kind
        #expect(String(cString: c.lastError(nil)).contains("not a record handle"))
        var record: OpaquePointer?
        _ = c.recordNew(model, &record)
        defer { c.recordFree(record) }
        var int: Int64 = 0
        #expect(c.getInt64(record, "name", &int) == CAPI.typeMismatch)
        #expect(c.setInt64(record, "name", 3) == CAPI.typeMismatch)
        #expect(c.setText(record, "nope", "x") == CAPI.unknownColumn)
        #expect(c.setDecimal(record, "name", "12abc") == CAPI.invalidValue)
    }
}
