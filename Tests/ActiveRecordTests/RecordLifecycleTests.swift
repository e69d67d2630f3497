@_spi(Engines) import ARCore
import ARValidation
import ActiveRecord
import Foundation
import Testing

/// A tag whose name must not be blank: a model class's side of the comparisons below.
final class LifecycleTag: Model, Validating {
    @Column var name: String = ""
    static let validations = Validations(for: LifecycleTag.self) { $0.presence(\.name) }
}

/// A run-time model's validation hook that finds every record valid and, asked again after a
/// unique index refused a write, answers with `recheck`.
private struct ScriptedHook: DynamicValidationHook {
    let recheck: @Sendable () throws -> [ValidationFailure]

    func failures(
        of record: DynamicRecord, changedColumns: Set<String>?, uniquenessOnly: Bool, upsertConflict: [String]
    ) throws -> [ValidationFailure] {
        uniquenessOnly ? try recheck() : []
    }
}

/// `Model.save`, `insertAll`, a run-time model's save and its batch insert (the C API's
/// `ar_record_save` and `ar_record_insert_all`) run one lifecycle (`RecordLifecycle`): these
/// tests check where the paths used to differ.
@Suite("One record lifecycle")
struct RecordLifecycleTests {
    /// A run-time model of notes with a unique title.
    static func notes() throws -> DynamicModel {
        DynamicModel(try TableSchema(name: "LifecycleNote", columns: [ColumnSchema(name: "title", type: .text, index: .unique)]))
    }

    static func note(_ notes: DynamicModel, _ title: String) throws -> DynamicRecord {
        let note = notes.makeRecord()
        try note.set("title", .text(title))
        return note
    }

    /// A run-time model's validations run in its save, as a model class's do: nothing is
    /// written, the record stays new and keeps the failures.
    @Test(arguments: TestEngine.all)
    func aRunTimeModelValidatesInItsSave(engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let notes = try Self.notes()
            notes.validationHook = Validations(presence: ["title"], uniqueness: ["title"])
            let blank = try Self.note(notes, " ")
            let invalid = expectError(.validationFailed) { try blank.save() }
            #expect(invalid?.validationFailures.map(\.key) == ["cant_be_blank"])
            #expect(invalid?.message == "LifecycleNote is invalid: title can't be blank")
            #expect(blank.errors.map(\.key) == ["cant_be_blank"])
            #expect(blank.isNewRecord)
            #expect(try notes.count() == 0)

            try blank.set("title", .text("milk"))
            try blank.save()
            #expect(blank.errors.isEmpty)
            let twin = try Self.note(notes, "milk")
            let taken = expectError(.validationFailed) { try twin.save() }
            #expect(taken?.validationFailures.map(\.key) == ["already_exists"])
            #expect(twin.isNewRecord)
            #expect(try notes.count() == 1)
        }
    }

    /// A unique index refusing a run-time record's write (a concurrent saver won) is the
    /// failure of the uniqueness validation that explains it, checked after the rollback.
    @Test(arguments: TestEngine.all)
    func aUniqueViolationTheRecheckExplainsIsAValidationFailure(engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let notes = try Self.notes()
            let failure = ValidationFailure(model: "LifecycleNote", property: "title", key: "already_exists", message: "already exists")
            notes.validationHook = ScriptedHook { [failure] }
            try Self.note(notes, "milk").save()
            let twin = try Self.note(notes, "milk")
            let error = expectError(.validationFailed) { try twin.save() }
            #expect(error?.validationFailures == [failure])
            #expect(twin.errors == [failure])
            #expect(twin.isNewRecord)
            #expect(try notes.count() == 1)
        }
    }

    /// When the check after a unique violation fails itself, the save throws the unique
    /// violation, as a model class's save does (the C API's save used to throw the check's error).
    @Test(arguments: TestEngine.all)
    func aRecheckThatFailsLeavesTheUniqueViolation(engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let notes = try Self.notes()
            notes.validationHook = ScriptedHook { throw ActiveRecordError(.misuse, "the recheck failed") }
            try Self.note(notes, "milk").save()
            let twin = try Self.note(notes, "milk")
            let error = expectError(.constraint) { try twin.save() }
            #expect(error?.isUniqueViolation == true)
            #expect(twin.errors.isEmpty)
            #expect(twin.isNewRecord)
        }
    }

    /// A batch holding a record that is not new is refused before any validation runs, for a
    /// model class and a run-time model alike (the C API's batch used to validate first, and
    /// answer with the invalid record's failures).
    @Test(arguments: TestEngine.all)
    func aBatchWithASavedRecordIsRefusedBeforeValidating(engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let saved = LifecycleTag()
            saved.name = "kept"
            try saved.save()
            let blank = LifecycleTag()
            expectError(.misuse) { try LifecycleTag.insertAll([blank, saved]) }
            #expect(blank.errors.isEmpty)

            let notes = try Self.notes()
            notes.validationHook = Validations(presence: ["title"], uniqueness: [])
            let savedNote = try Self.note(notes, "kept")
            try savedNote.save()
            let blankNote = try Self.note(notes, "")
            let refused = expectError(.misuse) { try notes.insertAll([blankNote, savedNote]) }
            #expect(refused?.message == "insertAll: record 2 is not a new record of LifecycleNote")
            #expect(blankNote.errors.isEmpty)
            #expect(try notes.count() == 1)
        }
    }

    /// A run-time model's batch insert validates every record first and inserts nothing when
    /// one is invalid, naming its position, as a model class's `insertAll` does.
    @Test(arguments: TestEngine.all)
    func aRunTimeBatchValidatesEveryRecordFirst(engine: TestEngine) throws {
        try withDatabase(engine) { _ in
            let notes = try Self.notes()
            notes.validationHook = Validations(presence: ["title"], uniqueness: [])
            let good = try Self.note(notes, "milk"), blank = try Self.note(notes, "")
            let invalid = expectError(.validationFailed) { try notes.insertAll([good, blank]) }
            #expect(invalid?.message == "record 2 of 2: LifecycleNote is invalid: title can't be blank")
            #expect(blank.errors.map(\.key) == ["cant_be_blank"])
            #expect(good.isNewRecord && blank.isNewRecord)
            #expect(try notes.count() == 0)

            let tags = [LifecycleTag(), LifecycleTag()]
            tags[0].name = "milk"
            let classInvalid = expectError(.validationFailed) { try LifecycleTag.insertAll(tags) }
            #expect(classInvalid?.message == "record 2 of 2: LifecycleTag is invalid: name can't be blank")
        }
    }
}

/// The C API's side: `ar_record_insert_all` runs the same batch lifecycle (libactiverecord.so
/// loaded with dlopen, as `CABITests` does; SQLite, a file).
@Suite("One record lifecycle through the C API")
struct CRecordLifecycleTests {
    typealias Handle = OpaquePointer?
    typealias Text = UnsafePointer<CChar>?
    static let misuse: Int32 = 3, validationFailed: Int32 = 9

    /// A batch of an invalid new record and a saved one: AR_MISUSE before any validation runs
    /// (the batch used to validate first and answer AR_VALIDATION_FAILED), the invalid
    /// record's errors untouched; then a batch of new records, the second invalid:
    /// AR_VALIDATION_FAILED naming it, its errors readable, nothing inserted.
    @Test func theCBatchIsRefusedBeforeValidatingAndValidatesEveryRecord() throws {
        let path = CABITests.root.appendingPathComponent(".build/c/lib/libactiverecord.so").path
        try #require(FileManager.default.fileExists(atPath: path), "run 'make lib' first (make test does)")
        let library = try #require(dlopen(path, RTLD_NOW))
        func function<T>(_ name: String) -> T { unsafeBitCast(dlsym(library, name), to: T.self) }
        let open: @convention(c) (Text, UnsafeMutablePointer<OpaquePointer?>?) -> Int32 = function("ar_open")
        let close: @convention(c) (Handle) -> Void = function("ar_close")
        let lastError: @convention(c) (Handle) -> UnsafePointer<CChar> = function("ar_last_error")
        let define: @convention(c) (Handle, Text, UnsafeMutablePointer<OpaquePointer?>?) -> Int32 = function("ar_model_define")
        let addColumn: @convention(c) (Handle, Text, Int32, Int32) -> Int32 = function("ar_model_add_column")
        let presence: @convention(c) (Handle, Text) -> Int32 = function("ar_model_validate_presence")
        let modelFree: @convention(c) (Handle) -> Void = function("ar_model_free")
        let new: @convention(c) (Handle, UnsafeMutablePointer<OpaquePointer?>?) -> Int32 = function("ar_record_new")
        let setText: @convention(c) (Handle, Text, Text) -> Int32 = function("ar_record_set_text")
        let save: @convention(c) (Handle) -> Int32 = function("ar_record_save")
        let errorCount: @convention(c) (Handle) -> Int32 = function("ar_record_error_count")
        let free: @convention(c) (Handle) -> Void = function("ar_record_free")
        let insertAll: @convention(c) (UnsafePointer<OpaquePointer?>?, UInt) -> Int32 = function("ar_record_insert_all")
        let count: @convention(c) (Handle, UnsafeMutablePointer<Int64>?) -> Int32 = function("ar_count")

        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var database: OpaquePointer?
        try #require(open(directory.appendingPathComponent("batch.sqlite").path, &database) == 0)
        defer { close(database) }
        var model: OpaquePointer?
        try #require(define(database, "CNote", &model) == 0)
        defer { modelFree(model) }
        #expect(addColumn(model, "title", 1, 0) == 0)
        #expect(presence(model, "title") == 0)
        func record(_ title: String) -> OpaquePointer? {
            var record: OpaquePointer?
            #expect(new(model, &record) == 0)
            #expect(setText(record, "title", title) == 0)
            return record
        }
        let saved = record("kept"), blank = record(""), good = record("milk")
        defer { [saved, blank, good].forEach(free) }
        #expect(save(saved) == 0)

        #expect(insertAll([blank, saved], 2) == Self.misuse)
        #expect(String(cString: lastError(database)).contains("record 2 is not a new record of CNote"))
        #expect(errorCount(blank) == 0)

        #expect(insertAll([good, blank], 2) == Self.validationFailed)
        #expect(String(cString: lastError(database)).contains("record 2 of 2"))
        #expect(errorCount(blank) == 1 && errorCount(good) == 0)
        var stored: Int64 = 0
        #expect(count(model, &stored) == 0)
        #expect(stored == 1)
    }
}
