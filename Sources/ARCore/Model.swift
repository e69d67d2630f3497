#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The base class of every model: subclass it and declare columns with
/// ``Column``; the class is the table's whole schema.
///
/// ```swift
/// final class User: Model {
///     @Column var name: String = ""
///     @Column var age: Int = 0
/// }
///
/// let user = User()
/// user.name = "Alex"
/// try user.save()            // CREATE TABLE "User" on first use, then INSERT
/// user.age = 31
/// try user.save()            // UPDATE "User" SET "age" = ?, "updatedAt" = ? WHERE "id" = ?
/// ```
///
/// The table is named after the class as written (`User`); override
/// ``tableName`` to change it. Every record also has ``id`` (assigned on first
/// save), ``createdAt`` and ``updatedAt``.
///
/// Records are not `Sendable`: use one from one thread at a time, and
/// fetch it again (by ``id``) on another.
open class Model: RecordStorage {
    // Unchecked exclusivity (as `DynamicRecord`'s): the engine's per-row writes to the header
    // and reads of the mapping would otherwise each pay a dynamic access check, on every row
    // (see Benchmarks/README.md, Hot-path notes); records are confined to one thread and these
    // accesses never overlap.
    @exclusivity(unchecked) package var header = RecordHeader()
    /// Where the columns' original values are: set by the first write to a column since the
    /// record was loaded or inserted (`captureOriginal(_:)`, of that column alone); until then
    /// each column's original is its value. (Stored beside `header`, where its byte costs no space.)
    @usableFromInline @exclusivity(unchecked) package final var originalsState = OriginalsState.none
    /// In ``OriginalsState/inline``, the column whose original ``extrasWord`` holds. (Beside
    /// ``originalsState``, in the same padding.)
    @exclusivity(unchecked) private final var inlineColumn: UInt16 = 0
    // Unretained: a class's mapping lives as long as the process (``ModelMapping/of(_:)``),
    // and a strong reference would write the shared mapping's reference count for every
    // record made and freed (a cache line that reading threads share). Read through
    // `_withUnsafeGuaranteedRef`: an `unowned(unsafe)` reference is retained on every read.
    @exclusivity(unchecked) private var cachedMapping: Unretained<ModelMapping>?
    /// The record's ``RecordExtras`` (a retained reference, 0 for none), or in
    /// ``OriginalsState/inline`` the bytes of the one original the record keeps: a record whose
    /// first change since it was loaded or saved is to one column of plain bytes of at most a
    /// word (a number, a flag, a date) keeps its original here, with no allocation.
    @exclusivity(unchecked) private final var extrasWord: UInt = 0

    /// What only some records need: their columns' original values once changed, their
    /// validation failures (see ``RecordExtras``). `nil` for a record only read, or one that
    /// keeps one original in place (``OriginalsState/inline``).
    package final var extras: RecordExtras? {
        guard originalsState != .inline, extrasWord != 0 else { return nil }
        return unretainedExtras
    }

    /// ``extras``, which the caller knows are there, without a retain.
    @inline(__always)
    private final var unretainedExtras: RecordExtras {
        Unmanaged<RecordExtras>.fromOpaque(UnsafeRawPointer(bitPattern: extrasWord).unsafelyUnwrapped).takeUnretainedValue()
    }

    /// Where ``extrasWord`` is (the original it holds in ``OriginalsState/inline``).
    @inline(__always)
    private final var inlineOriginal: UnsafeMutableRawPointer {
        withUnsafeMutablePointer(to: &extrasWord) { UnsafeMutableRawPointer($0) }
    }

    /// Makes a new, unsaved record with the declared default values.
    public required init() {
        ColumnDeclarations.didInitialise(self)
    }

    deinit {
        if originalsState != .inline, extrasWord != 0 {
            Unmanaged<RecordExtras>.fromOpaque(UnsafeRawPointer(bitPattern: extrasWord).unsafelyUnwrapped).release()
        }
    }

    /// Makes a new, unsaved record from column values.
    ///
    /// ```swift
    /// let user = try User(["name": "Alex", "age": 31])
    /// ```
    /// - Parameter values: values by column (or property) name; `nil` for `NULL`.
    /// - Throws: `.unknownColumn` for a name the model lacks, `.typeMismatch`
    ///   for a value of the wrong type; the record is not made.
    public required convenience init(_ values: [String: (any ColumnValue)?]) throws {
        self.init()
        try set(values)
    }

    /// Decodes a new, unsaved record: its defaults, then the columns a client may set
    /// (``decodableColumns``) present in `decoder` (see Model+Codable.swift).
    ///
    /// ```swift
    /// let user = try JSONDecoder().decode(User.self, from: body)   // id, timestamps, keys ignored
    /// try user.save()                                               // INSERT
    /// ```
    /// - Throws: what ``assign(from:)`` throws.
    public required convenience init(from decoder: any Decoder) throws {
        self.init()
        try assign(from: decoder)
    }

    /// Encodes `id`, every declared column, `createdAt`, `updatedAt` (those of them
    /// ``encodedColumns`` lists: all by default), and the relations the record holds loaded
    /// (see ``encodeRecord(to:)``). Override to add keys; to drop columns, ``encodedColumns``.
    ///
    /// ```swift
    /// let json = try JSONEncoder().encode(user)   // {"id":1,"name":"Alex","age":31,"createdAt":…,"updatedAt":…}
    /// ```
    open func encode(to encoder: any Encoder) throws {
        try encodeRecord(to: encoder)
    }

    /// The declared columns (property or column names) that decoding a record from a client
    /// sets: `JSONDecoder().decode(User.self, …)`, ``assign(from:)``. Default: every declared
    /// column except belongs-to keys (``defaultDecodableColumns``), so that a client cannot
    /// move a record under another parent; `id` and the timestamps are never decoded.
    ///
    /// ```swift
    /// final class Post: Model {
    ///     @Column var title: String = ""
    ///     @Column var approved: Bool = false
    ///     @BelongsTo var author: Person?
    ///     // Only the title comes from a client: not `approved`, not `authorId`.
    ///     override class var decodableColumns: [String] { ["title"] }
    /// }
    /// ```
    open class var decodableColumns: [String] { defaultDecodableColumns }

    /// The keys encoding a record writes (``encodeRecord(to:)``, `JSONEncoder`): `id`,
    /// `createdAt`, `updatedAt` and declared columns (property or column names). Default:
    /// all of them (``defaultEncodedColumns``). Override to keep a column out of every
    /// encoding, a secret first: a record returned by a handler then never carries it. Read once
    /// per class; a name that is none of these is `.invalidModel` when a record is encoded.
    ///
    /// ```swift
    /// final class Account: Model {
    ///     @Column var email: String = ""
    ///     @Column var passwordHash: String = ""
    ///     // Never in a response: encodes {"id":…,"email":…,"createdAt":…,"updatedAt":…}.
    ///     override class var encodedColumns: [String] { ["id", "email", "createdAt", "updatedAt"] }
    ///     // Nor set by a client.
    ///     override class var decodableColumns: [String] { ["email"] }
    /// }
    /// ```
    open class var encodedColumns: [String] { defaultEncodedColumns }

    /// The table name: the class name as written, without its namespace (`Shop.User` →
    /// `User`). Override to change it, or to share a table with another class on purpose:
    /// two classes that both take the default name of one table are an error.
    open class var tableName: String {
        DefaultTableName.probe?.used = true
        return String(describing: self)
    }

    /// The integer column (or its property) that makes `save()` and `destroy()` check that no
    /// other transaction changed the row since the record was loaded: optimistic locking.
    ///
    /// Locking is on when the model declares this column (`lockVersion` by default, Rails'
    /// `lock_version`): every update writes the column plus one and runs only when the row
    /// still holds the record's value (`UPDATE … WHERE "id" = ? AND "lockVersion" = ?`), and
    /// a destroy deletes only that version. When another transaction changed the row in
    /// between, nothing is written and the call throws `.staleRecord` (retryable): reload the
    /// record (or run the transaction again), apply the change again, save.
    ///
    /// ```swift
    /// final class Account: Model {
    ///     @Column var balance: Int = 0
    ///     @Column var lockVersion: Int = 0      // optimistic locking on
    /// }
    /// ```
    /// Override to name another integer column, or return `nil` to turn it off for a column
    /// named `lockVersion`. The version the check expects is the record's current value, so a
    /// version a client sent back with its edit is checked too. SQL-only writes (`updateAll`,
    /// `upsert`, `deleteAll`, `delete(id:)`) neither check nor change it.
    open class var lockingColumn: String? { TableSchema.defaultLockingColumn }

    /// The table's primary key: an integer `id` the engine assigns (``PrimaryKey/autoincrement``,
    /// the default), the same under another name (`.autoincrement("userID")`), or a declared
    /// `UUID` or `String` column (`.uuid("id")`, `.string("code")`); see ``PrimaryKey``.
    ///
    /// ```swift
    /// final class Country: Model {
    ///     override class var primaryKey: PrimaryKey { .string("code") }
    ///     @Column var code: String = ""
    /// }
    /// ```
    open class var primaryKey: PrimaryKey { .autoincrement }

    /// The row id, assigned on first save; `nil` for a new record. A model keyed by a `UUID`
    /// or `String` column (``primaryKey``) has no integer id: its saved records say 0 (saved,
    /// not new); read ``primaryKeyValue`` or the key column.
    public var id: Int64? { header.id }
    /// When the record was first saved.
    public var createdAt: Date? { header.createdAt }
    /// When the record was last saved with changes.
    public var updatedAt: Date? { header.updatedAt }

    /// The failures of the last validation, in declaration order (empty when valid).
    public package(set) var errors: [ValidationFailure] {
        get { extras?.errors ?? [] }
        set {
            if let extras {
                extras.errors = newValue
            } else if !newValue.isEmpty, let extras = makeExtras() {
                extras.errors = newValue
            }
        }
    }

    /// The failures for one property.
    public func errors(for property: String) -> [ValidationFailure] { errors.filter { $0.property == property } }

    /// The schema reflected from this class (cached after the first call).
    /// - Throws: `.invalidModel` when a column name is reserved or declared twice.
    public static func schema() throws -> TableSchema { try ModelMapping.of(self).table.schema }

    package static func mapping() throws -> ModelMapping { try ModelMapping.of(self) }

    package final func mapping() throws -> ModelMapping { try withMapping { $0 } }

    /// Runs `body` with the record's mapping, passed on without a retain (a class's mapping
    /// lives as long as the process).
    @inline(__always)
    package final func withMapping<R>(_ body: (ModelMapping) throws -> R) throws -> R {
        if let cachedMapping { return try cachedMapping.with(body) }
        let mapping = try ModelMapping.unretained(type(of: self))
        cachedMapping = mapping
        return try mapping.with(body)
    }

    /// Gives the record its class's mapping, one that ``ModelMapping/of(_:)`` or
    /// ``ModelMapping/reflected(_:)`` made (kept unretained: those live as long as the process).
    package final func adopt(_ mapping: ModelMapping) { cachedMapping = Unretained(mapping) }

    /// The value of the column stored at `offset` of this object (of type `kind`): what
    /// reflection reads, from a prototype, as the column's default.
    final func fieldValue(at offset: Int, kind: any ColumnField.Type) -> DatabaseValue? {
        let base = UnsafeRawPointer(Unretained(self).address)
        return withExtendedLifetime(self) { kind.databaseValue(base + offset) }
    }

    /// The kind of the column whose field is at `offset` (see `ColumnField.storedColumnKind(_:)`).
    final func fieldColumnKind(at offset: Int, kind: any ColumnField.Type) -> ColumnKind {
        let base = UnsafeRawPointer(Unretained(self).address)
        return withExtendedLifetime(self) { kind.storedColumnKind(base + offset) }
    }

    /// Calls `body` with the hook field (a relation) stored at `offset` of this object.
    /// `Field` must be the field's type, as reflection found it.
    final func withHookField<Field, R>(at offset: Int, as type: Field.Type, _ body: (inout Field) throws -> R) rethrows -> R {
        let address = (Unretained(self).address + offset).assumingMemoryBound(to: Field.self)
        return try withExtendedLifetime(self) { try body(&address.pointee) }
    }

    /// The site of one of this record's hook fields, for the feature that owns it
    /// (eager loading writes a relation's loaded records there).
    package final func hookSite<Field: RecordHookField>(_ hook: ModelMapping.Hook, as type: Field.Type) -> HookFieldSite<Field> {
        precondition(hook.kind == Field.self, "the hook \(hook.propertyName) is a \(hook.kind), not a \(Field.self)")
        return HookFieldSite(record: self, offset: hook.offset)
    }

    /// Where the record's originals are, read once for a loop over its fields.
    @inline(__always)
    private final var originalsView: OriginalsView {
        switch originalsState {
        case .none: OriginalsView(originals: nil, captured: nil)
        case .aside: OriginalsView(originals: UnsafeRawPointer(unretainedExtras.originals), captured: unretainedExtras.captured)
        case .defaults: OriginalsView(originals: cachedMapping.unsafelyUnwrapped.with { $0.defaultOriginals }, captured: nil)
        case .inline: OriginalsView(originals: UnsafeRawPointer(inlineOriginal), captured: nil, inlineColumn: Int(inlineColumn))
        }
    }

    /// Whether the record keeps originals that may differ from its values (it was written to
    /// since it was loaded or inserted).
    package final var originalsCaptured: Bool { originalsState != .none }

    /// The columns whose originals the record keeps aside, in order (for tests); every column
    /// when it uses its class's defaults.
    package final var capturedColumns: [Int] {
        guard let count = try? mapping().fields.count else { return [] }
        switch originalsState {
        case .none: return []
        case .defaults: return Array(0..<count)
        case .aside: return (0..<count).filter { unretainedExtras.isCaptured($0) }
        case .inline: return [Int(inlineColumn)]
        }
    }

    /// The field at `index`, as a raw pointer into this object.
    @inline(__always)
    final func withField<R>(_ index: Int, _ body: (any ColumnField.Type, FieldAddress) throws -> R) rethrows -> R {
        // The engine only calls these after `mapping()` succeeded.
        let field = cachedMapping.unsafelyUnwrapped.with { $0.fields[index] }
        let address = originalsView.address(of: field, index, in: Unretained(self).address)
        return try withExtendedLifetime(self) { try body(field.kind, address) }
    }

    /// Runs a per-row operation on the field at `index`, on its type's specialised path.
    @inline(__always)
    private final func apply<Operation: FieldOperation>(
        _ operation: Operation, toField index: Int
    ) throws(Operation.Failure) -> Operation.Result {
        // The engine only calls these after `mapping()` succeeded.
        let field = cachedMapping.unsafelyUnwrapped.with { $0.fields[index] }
        let address = originalsView.address(of: field, index, in: Unretained(self).address)
        return try withExtendedLifetime(self) { () throws(Operation.Failure) -> Operation.Result in
            try field.storage.apply(operation, kind: field.kind, at: address)
        }
    }

    // MARK: Originals

    /// Before a write to the column stored at `address` (inside this object; a number, as a
    /// setter takes it): keeps its value
    /// aside as its original when nothing did since the record was loaded or saved
    /// (``captureOriginal(_:)``). What a `@Column` property's setter calls, with the address of
    /// the property's storage; one that is not a column's (which no setter passes) keeps every
    /// column's original (``captureOriginals()``).
    ///
    /// The first write to a new record (the setters filling it in) is checked here, before the
    /// column is looked up: a record still holding its class's defaults takes them as its
    /// originals, and nothing else is done.
    @usableFromInline @inline(never)
    package final func captureOriginal(ofFieldAt address: UInt) {
        guard originalsState != .defaults, cachedMapping != nil || adoptMappingToCapture() else { return }
        let checkedDefaults = originalsState == .none && header.id == nil
        if checkedDefaults, holdsDefaults() {
            originalsState = .defaults
            return
        }
        let offset = Int(bitPattern: address &- UInt(bitPattern: Unretained(self).address))
        guard let index = cachedMapping.unsafelyUnwrapped.with({ $0.fieldIndex(atOffset: offset) }) else {
            return captureOriginals()
        }
        captureOriginal(index, checkedDefaults: checkedDefaults)
    }

    /// Keeps the value of column `index` as its original, before the first write to it since
    /// the record was loaded or saved; only that column's (no other column changes with it).
    /// A new record still holding its class's default values takes the class's copy of them
    /// (no allocation, as a new record is filled in); any other copies the value into its
    /// ``extras``. Does nothing for an instance reflection makes (its class may have no
    /// mapping yet), or one of a class that cannot be reflected.
    package final func captureOriginal(_ index: Int) {
        captureOriginal(index, checkedDefaults: false)
    }

    /// ``captureOriginal(_:)``; `checkedDefaults`: the caller found that the record does not
    /// hold its class's defaults (not checked again).
    @inline(__always)
    private final func captureOriginal(_ index: Int, checkedDefaults: Bool) {
        switch originalsState {
        case .defaults: return
        case .aside: if unretainedExtras.isCaptured(index) { return }
        case .inline: if index == Int(inlineColumn) { return }
        case .none:
            guard cachedMapping != nil || adoptMappingToCapture() else { return }
            if !checkedDefaults, header.id == nil, holdsDefaults() {
                originalsState = .defaults
                return
            }
            if extrasWord == 0, keepInlineOriginal(index) { return }
        }
        keepOriginal(index)
    }

    /// Keeps the value of column `index` as its original in ``extrasWord`` when the record
    /// has no extras and the value is plain bytes that fit (``OriginalsState/inline``).
    @inline(__always)
    private final func keepInlineOriginal(_ index: Int) -> Bool {
        let field = cachedMapping.unsafelyUnwrapped.with { $0.fields[index] }
        guard field.isTrivial, field.size <= MemoryLayout<UInt>.size, index <= Int(UInt16.max) else { return false }
        let value = UnsafeRawPointer(Unretained(self).address) + field.valueOffset
        withExtendedLifetime(self) { inlineOriginal.copyMemory(from: value, byteCount: field.size) }
        inlineColumn = UInt16(index)
        originalsState = .inline
        return true
    }

    /// Copies the value of column `index` into the record's ``extras`` as its original (it
    /// keeps none for it yet, and its originals are not its class's defaults).
    private final func keepOriginal(_ index: Int) {
        guard let extras = originalsState == .aside ? unretainedExtras : makeExtras() else { return }
        let base = UnsafeRawPointer(Unretained(self).address)
        withExtendedLifetime(self) {
            cachedMapping.unsafelyUnwrapped.with { $0.copyOriginal(index, from: base, to: extras.originals) }
        }
        extras.setCaptured(index, true)
        originalsState = .aside
    }

    /// Keeps every column's value as its original unless kept already: what a write to a
    /// column that does not go through its `@Column` property calls (a relation's key).
    package final func captureOriginals() {
        switch originalsState {
        case .defaults: return
        case .aside, .inline:
            if originalsState == .inline { _ = makeExtras() }  // the one original moves there
            let extras = unretainedExtras
            let count = cachedMapping.unsafelyUnwrapped.with { $0.fields.count }
            for index in 0..<count where !extras.isCaptured(index) { keepOriginal(index) }
        case .none:
            guard cachedMapping != nil || adoptMappingToCapture() else { return }
            if header.id == nil, holdsDefaults() {
                originalsState = .defaults
                return
            }
            guard let extras = makeExtras() else { return }
            let base = UnsafeRawPointer(Unretained(self).address)
            withExtendedLifetime(self) {
                cachedMapping.unsafelyUnwrapped.with { mapping in
                    mapping.copyOriginals(from: base, to: extras.originals)
                    extras.setAllCaptured(true, count: mapping.fields.count)
                }
            }
            originalsState = .aside
        }
    }

    /// Finds the record's mapping before its first capture; `false` for an instance
    /// reflection makes, or one of a class that cannot be reflected.
    @inline(__always)
    private final func adoptMappingToCapture() -> Bool {
        guard !ColumnDeclarations.isRecording, let mapping = try? ModelMapping.unretained(type(of: self)) else { return false }
        cachedMapping = mapping
        return true
    }

    /// Whether every column holds its class's default value (its value in the instance
    /// reflection made): the same bytes, or else an equivalent value.
    @inline(__always)
    private final func holdsDefaults() -> Bool {
        let base = UnsafeRawPointer(Unretained(self).address)
        return withExtendedLifetime(self) {
            cachedMapping.unsafelyUnwrapped.with { mapping in
                mapping.defaultWords.areHeld(at: base) || holdsEquivalentDefaults(mapping)
            }
        }
    }

    /// ``holdsDefaults()`` column by column, through each type's equivalence.
    @inline(never)
    private final func holdsEquivalentDefaults(_ mapping: ModelMapping) -> Bool {
        let base = Unretained(self).address
        let defaults = OriginalsView(originals: mapping.defaultOriginals, captured: nil)
        return withExtendedLifetime(self) {
            for (index, field) in mapping.fields.enumerated() {
                if field.storage.apply(IsFieldChanged(), kind: field.kind, at: defaults.address(of: field, index, in: base)) {
                    return false
                }
            }
            return true
        }
    }

    /// Makes the originals the record's own (in its ``extras``) when it uses its class's
    /// defaults, before one is written: a copy of every default.
    private final func ownDefaultOriginals() {
        guard originalsState == .defaults, let extras = makeExtras() else { return }
        cachedMapping.unsafelyUnwrapped.with { mapping in
            // The class's copy, as laid out in an object.
            mapping.copyOriginals(from: mapping.defaultOriginals - mapping.originalsStart, to: extras.originals)
            extras.setAllCaptured(true, count: mapping.fields.count)
        }
        originalsState = .aside
    }

    /// Makes the original of column `index` the record's own (in its ``extras``), before it is
    /// written: the record's value when it kept none, the class's default when it used those.
    private final func ownOriginal(_ index: Int) {
        switch originalsState {
        case .defaults: ownDefaultOriginals()
        case .aside: if !unretainedExtras.isCaptured(index) { keepOriginal(index) }
        case .inline: if index != Int(inlineColumn) { keepOriginal(index) }
        case .none:
            guard cachedMapping != nil || adoptMappingToCapture() else { return }
            if extrasWord == 0, keepInlineOriginal(index) { return }
            keepOriginal(index)
        }
    }

    /// Column `index`'s original is its value again: the copy kept aside goes (its memory
    /// stays, for the next change), and the record keeps none once it was the last.
    private final func dropOriginal(_ index: Int) {
        switch originalsState {
        case .none: return
        case .defaults: ownDefaultOriginals()
        case .aside: break
        case .inline:
            if index == Int(inlineColumn) {
                extrasWord = 0
                originalsState = .none
            }
            return
        }
        let extras = unretainedExtras
        guard extras.isCaptured(index) else { return }
        let originals = extras.originals
        cachedMapping.unsafelyUnwrapped.with { $0.releaseOriginal(index, at: originals) }
        extras.setCaptured(index, false)
        if extras.capturesNone { originalsState = .none }
    }

    /// Drops the originals (the memory of the record's own stays, for the next change): each
    /// column's original is its value again.
    @inline(__always)
    private final func releaseOriginals() {
        switch originalsState {
        case .none: return
        case .defaults: originalsState = .none
        case .aside: releaseOwnOriginals()
        case .inline:
            extrasWord = 0
            originalsState = .none
        }
    }

    /// ``releaseOriginals()``'s work for originals of the record's own, out of line (off the
    /// decoding and inserting paths).
    @inline(never)
    private final func releaseOwnOriginals() {
        let extras = unretainedExtras
        let (originals, captured) = (extras.originals, extras.captured)
        cachedMapping.unsafelyUnwrapped.with { $0.releaseOriginals(at: originals, captured: captured) }
        extras.setAllCaptured(false, count: 0)
        originalsState = .none
    }

    /// The record's ``extras``, made now unless it has them (with the original it kept in
    /// place, ``OriginalsState/inline``, moved there); `nil` when its class cannot be reflected.
    final func makeExtras() -> RecordExtras? {
        if let extras { return extras }
        if cachedMapping == nil {
            guard let mapping = try? ModelMapping.unretained(type(of: self)) else { return nil }
            cachedMapping = mapping
        }
        let made = cachedMapping.unsafelyUnwrapped.with { RecordExtras.make(for: $0) }
        if originalsState == .inline {
            let index = Int(inlineColumn)
            let field = cachedMapping.unsafelyUnwrapped.with { $0.fields[index] }
            (made.originals + field.originalOffset).copyMemory(from: inlineOriginal, byteCount: field.size)
            made.setCaptured(index, true)
            originalsState = .aside
        }
        extrasWord = UInt(bitPattern: Unmanaged.passRetained(made).toOpaque())
        return made
    }

    // MARK: RecordStorage

    package final func bindColumn(_ index: Int, to statement: Statement, at parameter: Int32) throws {
        do {
            // The value alone: a bind looks for no original.
            // The engine only calls these after `mapping()` succeeded.
            let field = cachedMapping.unsafelyUnwrapped.with { $0.fields[index] }
            let value = Unretained(self).address + field.valueOffset
            try withExtendedLifetime(self) {
                try field.storage.bind(field.kind, at: FieldAddress(value: value, original: value), to: statement, parameter: parameter)
            }
        } catch {
            throw bindingFailure(error, column: index)
        }
    }

    package final func decodeColumn(_ index: Int, from statement: Statement, at column: Int32) throws {
        try apply(DecodeField(statement: statement, column: column), toField: index)
        // The column's original is the value read.
        if originalsState != .none { dropOriginal(index) }
    }

    /// A known type straight from its cell (``KnownFieldType/decode(_:into:)``); any other type,
    /// and any conversion or mismatch, through `decodeOther` (``decodeColumn(_:from:at:)``).
    /// Every column is read, so a record reloaded keeps no originals aside.
    package final func decodeAllColumns(
        count: Int, from statement: Statement, at first: Int32, other decodeOther: (Int) throws -> Void
    ) throws {
        releaseOriginals()
        let cells = statement.row.baseAddress.unsafelyUnwrapped + Int(first)
        let base = Unretained(self).address
        // The loop written out: with no originals, each field's value is
        // all there is to reach, and this stays inlined into the engine's decoding.
        try withExtendedLifetime(self) {
            // The engine only calls these after `mapping()` succeeded.
            try cachedMapping.unsafelyUnwrapped.with { mapping in
                for index in 0..<count {
                    let field = mapping.fields[index]
                    let value = base + field.valueOffset
                    if !field.storage.decode(cells[index], into: FieldAddress(value: value, original: value)) {
                        try decodeOther(index)
                    }
                }
            }
        }
    }

    package final func isColumnChanged(_ index: Int) -> Bool {
        originalsState != .none && apply(IsFieldChanged(), toField: index)
    }

    /// The fields reached once for all (a loop of ``isColumnChanged(_:)`` reaches the mapping
    /// per column); only those whose originals are kept aside (the others were not written
    /// to), none when the record keeps none.
    package final func forEachChangedColumn(count: Int, _ body: (Int) -> Void) {
        guard originalsState != .none else { return }
        let base = Unretained(self).address
        let view = originalsView
        withExtendedLifetime(self) {
            cachedMapping.unsafelyUnwrapped.with { mapping in
                if view.inlineColumn >= 0 {
                    let index = view.inlineColumn
                    guard index < count else { return }
                    let field = mapping.fields[index]
                    if field.storage.apply(IsFieldChanged(), kind: field.kind, at: view.address(of: field, index, in: base)) {
                        body(index)
                    }
                    return
                }
                guard let captured = view.captured else {
                    // The class's defaults: every column against its default.
                    for index in 0..<count {
                        let field = mapping.fields[index]
                        if field.storage.apply(IsFieldChanged(), kind: field.kind, at: view.address(of: field, index, in: base)) {
                            body(index)
                        }
                    }
                    return
                }
                let originals = UnsafeMutableRawPointer(mutating: view.originals.unsafelyUnwrapped)
                for word in 0..<mapping.capturedWordCount {
                    var bits = captured[word]
                    while bits != 0 {
                        let index = word &* 64 &+ bits.trailingZeroBitCount
                        bits &= bits &- 1
                        guard index < count else { return }
                        let field = mapping.fields[index]
                        let address = FieldAddress(value: base + field.valueOffset, original: originals + field.originalOffset)
                        if field.storage.apply(IsFieldChanged(), kind: field.kind, at: address) { body(index) }
                    }
                }
            }
        }
    }

    /// The one column a record that keeps one original in place (``OriginalsState/inline``)
    /// may have changed, checked without ``forEachChangedColumn(count:_:)``'s closure: most
    /// saves of a loaded record change one number.
    package final func onlyChangedColumn(count: Int) -> Int {
        switch originalsState {
        case .none: return -1
        case .inline:
            let index = Int(inlineColumn)
            guard index < count else { return -1 }
            let field = cachedMapping.unsafelyUnwrapped.with { $0.fields[index] }
            let address = FieldAddress(value: Unretained(self).address + field.valueOffset, original: inlineOriginal)
            let changed = withExtendedLifetime(self) { field.storage.apply(IsFieldChanged(), kind: field.kind, at: address) }
            return changed ? index : -1
        case .aside, .defaults: return -2
        }
    }

    package final func markColumnSaved(_ index: Int) {
        guard originalsState != .none else { return }
        dropOriginal(index)
    }

    /// Every original is the value again: the originals kept aside are released.
    package final func markAllColumnsSaved(count: Int) {
        releaseOriginals()
    }

    package final func bindAllColumns(count: Int, to statement: Statement, from first: Int32) throws {
        var parameter = first
        do {
            try forEachValue(count) { field, address in
                try field.storage.bind(field.kind, at: address, to: statement, parameter: parameter)
                parameter += 1
            }
        } catch {
            throw bindingFailure(error, column: Int(parameter - first))
        }
    }

    /// Runs `body` on each of the first `count` fields, the mapping and its fields reached
    /// once, with the value's address alone (as its original too): for work that reads the
    /// values only (a bind), which then looks for no original.
    @inline(__always)
    private final func forEachValue(_ count: Int, _ body: (ModelMapping.Field, FieldAddress) throws -> Void) rethrows {
        let base = Unretained(self).address
        try withExtendedLifetime(self) {
            // The engine only calls these after `mapping()` succeeded.
            try cachedMapping.unsafelyUnwrapped.with { mapping in
                for index in 0..<count {
                    let field = mapping.fields[index]
                    let value = base + field.valueOffset
                    try body(field, FieldAddress(value: value, original: value))
                }
            }
        }
    }

    /// A column's value that cannot be stored (NaN, -0.0, an integer beyond Int64), said with
    /// its table and column.
    @inline(never)
    private func bindingFailure(_ error: any Error, column index: Int) -> any Error {
        guard let failure = error as? ActiveRecordError, failure.code == .invalidValue,
              let schema = try? mapping().table.schema, schema.columns.indices.contains(index) else { return error }
        return failure.with(message: "\(schema.name).\(schema.columns[index].name): \(failure.message)")
    }

    package final func originalValue(_ index: Int) -> DatabaseValue {
        // On the type's specialised path: an update in a transaction keeps the original of
        // each column it writes, to undo.
        apply(OriginalFieldValue(), toField: index)
    }

    package final func restoreOriginal(_ index: Int, _ value: DatabaseValue) {
        ownOriginal(index)
        guard originalsState == .aside || originalsState == .inline else { return }
        withField(index) { kind, field in kind.restoreOriginal(value, to: field) }
    }

    package final func revertColumn(_ index: Int) {
        guard originalsState != .none else { return }
        withField(index) { kind, field in kind.revert(field) }
    }

    package final func columnValues(_ index: Int) -> (original: DatabaseValue, current: DatabaseValue) {
        withField(index) { kind, field in kind.values(field) }
    }

    package final func assignColumn(_ index: Int, _ value: DatabaseValue) throws {
        captureOriginal(index)
        try withField(index) { kind, field in try kind.assign(value, to: field) }
    }

    package final func currentValue(_ index: Int) throws -> DatabaseValue {
        // On the type's specialised path: a preload reads every child's key through here, and
        // the generic witnesses cost more than the rest of its work on the child (see
        // Benchmarks/README.md, Hot-path notes).
        try apply(CurrentFieldValue(), toField: index)
    }
}

/// The field's original value as a database value (`NULL` when it has none that converts).
private struct OriginalFieldValue: FieldOperation {
    @inline(__always)
    func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) -> DatabaseValue {
        (try? field.original(Value.self).pointee.toSQL()) ?? .null
    }

    func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) -> DatabaseValue { kind.originalSQL(field) }
}

/// Where a record's originals are, for a loop over its fields: nowhere (each original is
/// the value), its class's defaults (every column's), or its ``RecordExtras`` (the columns
/// whose bits are set; the others' originals are their values).
private struct OriginalsView {
    let originals: UnsafeRawPointer?
    let captured: UnsafeMutablePointer<UInt64>?
    /// In ``OriginalsState/inline``, the one column whose original `originals` points at; -1
    /// otherwise.
    var inlineColumn = -1

    /// Where `field` (column `index`) of the record at `base` and its original are.
    @inline(__always)
    func address(of field: ModelMapping.Field, _ index: Int, in base: UnsafeMutableRawPointer) -> FieldAddress {
        let value = base + field.valueOffset
        guard let originals else { return FieldAddress(value: value, original: value) }
        if inlineColumn >= 0 {
            let original = index == inlineColumn ? UnsafeMutableRawPointer(mutating: originals) : value
            return FieldAddress(value: value, original: original)
        }
        if let captured, captured[index &>> 6] & (1 &<< UInt64(index & 63)) == 0 {
            return FieldAddress(value: value, original: value)
        }
        return FieldAddress(value: value, original: UnsafeMutableRawPointer(mutating: originals + field.originalOffset))
    }
}

/// Where a record's original column values are (see ``Model/captureOriginal(_:)``).
@usableFromInline
package enum OriginalsState: UInt8 {
    /// Nowhere: no column was written to since the record was loaded or inserted, and each
    /// column's original is its value.
    case none
    /// In the record's ``RecordExtras``, for the columns written to (its bitmap says which);
    /// each other column's original is its value.
    case aside
    /// Its class's defaults (``ModelMapping/defaultOriginals``): a new record filled in.
    case defaults
    /// One column's, in the record itself (``Model/inlineColumn``, in the word that otherwise
    /// holds its extras): the first change of a record without extras, to a column of plain
    /// bytes of at most a word; each other column's original is its value. A change to
    /// another column, or validation failures to keep, moves it to ``RecordExtras`` (`.aside`).
    case inline
}

@available(*, unavailable, message: "Records are confined to one thread at a time; fetch by id on another")
extension Model: Sendable {}

/// `records` as `[To]`: the same array, for free, when the element types are the same (a
/// relation answering for its own child type), else a conditional cast of each element.
package func castRecords<From: Model, To: Model>(_ records: [From], to type: To.Type = To.self) -> [To] {
    if From.self == To.self { return unsafeBitCast(records, to: [To].self) }
    return records.compactMap { $0 as? To }
}

/// Tells whether ``Model/tableName`` ran its default implementation (the class did not name
/// its table itself): ``ModelMapping`` asks, once per class, with a probe in place.
enum DefaultTableName {
    /// `@unchecked Sendable`: made, set and read by one thread, inside one `withValue`.
    final class Probe: @unchecked Sendable {
        var used = false
    }

    @TaskLocal static var probe: Probe?
}
