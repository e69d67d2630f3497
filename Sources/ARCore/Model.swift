import Foundation

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
    /// record was loaded or inserted (`captureOriginals()`); until then each column's
    /// original is its value. (Stored beside `header`, where its byte costs no space.)
    @usableFromInline @exclusivity(unchecked) package final var originalsState = OriginalsState.none
    // Unretained: a class's mapping lives as long as the process (``ModelMapping/of(_:)``),
    // and a strong reference would write the shared mapping's reference count for every
    // record made and freed (a cache line that reading threads share). Read through
    // `_withUnsafeGuaranteedRef`: an `unowned(unsafe)` reference is retained on every read.
    @exclusivity(unchecked) private var cachedMapping: Unretained<ModelMapping>?
    /// What only some records need: their columns' original values once changed, their
    /// validation failures (see ``RecordExtras``). `nil` for a record only read.
    @exclusivity(unchecked) package final var extras: RecordExtras?

    /// Makes a new, unsaved record with the declared default values.
    public required init() {
        ColumnDeclarations.didInitialise(self)
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

    /// The row id, assigned on first save; `nil` for a new record.
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

    /// Where the field `field` and its original are, `originals` being the record's originals
    /// (`nil` when it keeps none: each original is then the value itself).
    @inline(__always)
    private static func address(
        _ field: ModelMapping.Field, in base: UnsafeMutableRawPointer, originals: UnsafeRawPointer?
    ) -> FieldAddress {
        let value = base + field.valueOffset
        guard let originals else { return FieldAddress(value: value, original: value) }
        return FieldAddress(value: value, original: UnsafeMutableRawPointer(mutating: originals + field.originalOffset))
    }

    /// Where the originals are; `nil` when the record keeps none. (Those of
    /// ``OriginalsState/defaults`` are only read: every write to an original first makes the
    /// record's own copy, ``ownOriginals()``.)
    @inline(__always)
    private final var originals: UnsafeRawPointer? {
        switch originalsState {
        case .none: nil
        case .aside: UnsafeRawPointer(extras.unsafelyUnwrapped.originals)
        case .defaults: cachedMapping.unsafelyUnwrapped.with { $0.defaultOriginals }
        }
    }

    /// Whether the record keeps originals that may differ from its values (it was written to
    /// since it was loaded or inserted).
    package final var originalsCaptured: Bool { originalsState != .none }

    /// The field at `index`, as a raw pointer into this object.
    @inline(__always)
    private final func withField<R>(_ index: Int, _ body: (any ColumnField.Type, FieldAddress) throws -> R) rethrows -> R {
        // The engine only calls these after `mapping()` succeeded.
        let field = cachedMapping.unsafelyUnwrapped.with { $0.fields[index] }
        let address = Self.address(field, in: Unretained(self).address, originals: originals)
        return try withExtendedLifetime(self) { try body(field.kind, address) }
    }

    /// Runs a per-row operation on the field at `index`, on its type's specialised path.
    @inline(__always)
    private final func apply<Operation: FieldOperation>(
        _ operation: Operation, toField index: Int
    ) throws(Operation.Failure) -> Operation.Result {
        // The engine only calls these after `mapping()` succeeded.
        let field = cachedMapping.unsafelyUnwrapped.with { $0.fields[index] }
        let address = Self.address(field, in: Unretained(self).address, originals: originals)
        return try withExtendedLifetime(self) { () throws(Operation.Failure) -> Operation.Result in
            try field.storage.apply(operation, kind: field.kind, at: address)
        }
    }

    /// Runs `body` on each of the first `count` fields, the mapping and its fields reached
    /// once (a loop of ``apply(_:toField:)`` reaches them per field).
    @inline(__always)
    private final func forEachField(_ count: Int, _ body: (ModelMapping.Field, FieldAddress) throws -> Void) rethrows {
        let base = Unretained(self).address
        let originals = originals
        try withExtendedLifetime(self) {
            // The engine only calls these after `mapping()` succeeded.
            try cachedMapping.unsafelyUnwrapped.with { mapping in
                for index in 0..<count {
                    let field = mapping.fields[index]
                    try body(field, Self.address(field, in: base, originals: originals))
                }
            }
        }
    }

    // MARK: Originals

    /// Keeps each column's value as its original, before the first write since the record was
    /// loaded or inserted: what a `@Column` property's setter calls, and every other write to
    /// a column. A new record still holding its class's default values takes the class's
    /// copy of them (no allocation, as a new record is filled in); any other copies its
    /// values into its ``extras``. Does nothing for an instance reflection makes (its class
    /// may have no mapping yet), or one of a class that cannot be reflected.
    @usableFromInline @inline(never)
    package final func captureOriginals() {
        guard originalsState == .none else { return }
        if cachedMapping == nil {
            guard !ColumnDeclarations.isRecording, let mapping = try? ModelMapping.unretained(type(of: self)) else { return }
            cachedMapping = mapping
        }
        if header.id == nil, holdsDefaults() {
            originalsState = .defaults
            return
        }
        guard let extras = extras ?? makeExtras() else { return }
        let base = UnsafeRawPointer(Unretained(self).address)
        withExtendedLifetime(self) {
            cachedMapping.unsafelyUnwrapped.with { $0.copyOriginals(from: base, to: extras.originals) }
        }
        originalsState = .aside
        extras.holdsOriginals = true
    }

    /// Whether every column holds its class's default value (its value in the instance
    /// reflection made): the same bytes, or else an equivalent value.
    private final func holdsDefaults() -> Bool {
        let base = UnsafeRawPointer(Unretained(self).address)
        return withExtendedLifetime(self) {
            cachedMapping.unsafelyUnwrapped.with { mapping in
                for word in mapping.defaultWords
                where (base.load(fromByteOffset: word.offset, as: UInt64.self) ^ word.bits) & word.mask != 0 {
                    return holdsEquivalentDefaults(mapping)
                }
                return true
            }
        }
    }

    /// ``holdsDefaults()`` column by column, through each type's equivalence.
    @inline(never)
    private final func holdsEquivalentDefaults(_ mapping: ModelMapping) -> Bool {
        let base = Unretained(self).address
        return withExtendedLifetime(self) {
            for field in mapping.fields {
                let address = Self.address(field, in: base, originals: mapping.defaultOriginals)
                if field.storage.apply(IsFieldChanged(), kind: field.kind, at: address) { return false }
            }
            return true
        }
    }

    /// Makes the originals the record's own (in its ``extras``) before one is written: a copy
    /// of its class's defaults when it used those, of its values when it kept none.
    private final func ownOriginals() {
        switch originalsState {
        case .aside: return
        case .none: captureOriginals()
        case .defaults: break
        }
        guard originalsState == .defaults, let extras = extras ?? makeExtras() else { return }
        cachedMapping.unsafelyUnwrapped.with { mapping in
            // The class's copy, as laid out in an object.
            mapping.copyOriginals(from: mapping.defaultOriginals - mapping.originalsStart, to: extras.originals)
        }
        originalsState = .aside
        extras.holdsOriginals = true
    }

    /// Drops the originals (the memory of the record's own stays, for the next change): each
    /// column's original is its value again.
    @inline(__always)
    private final func releaseOriginals() {
        switch originalsState {
        case .none: return
        case .defaults: originalsState = .none
        case .aside: releaseOwnOriginals()
        }
    }

    /// ``releaseOriginals()``'s work for originals of the record's own, out of line (off the
    /// decoding and inserting paths).
    @inline(never)
    private final func releaseOwnOriginals() {
        let extras = extras.unsafelyUnwrapped
        cachedMapping.unsafelyUnwrapped.with { $0.releaseOriginals(at: extras.originals) }
        originalsState = .none
        extras.holdsOriginals = false
    }

    /// The record's ``extras``, made now; `nil` when its class cannot be reflected.
    final func makeExtras() -> RecordExtras? {
        if cachedMapping == nil {
            guard let mapping = try? ModelMapping.unretained(type(of: self)) else { return nil }
            cachedMapping = mapping
        }
        let made = cachedMapping.unsafelyUnwrapped.with { RecordExtras.make(for: $0) }
        extras = made
        return made
    }

    // MARK: RecordStorage

    package final func bindColumn(_ index: Int, to statement: Statement, at parameter: Int32) throws {
        do {
            try apply(BindField(statement: statement, parameter: parameter), toField: index)
        } catch {
            throw bindingFailure(error, column: index)
        }
    }

    package final func decodeColumn(_ index: Int, from statement: Statement, at column: Int32) throws {
        if originalsState == .none { return try apply(DecodeField(statement: statement, column: column), toField: index) }
        // The column's original is the value read: into the record's own originals.
        ownOriginals()
        try apply(DecodeField(statement: statement, column: column), toField: index)
        apply(MarkFieldSaved(), toField: index)
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
        // The loop written out (not `forEachField`): with no originals, each field's value is
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
    /// per column); none when the record keeps no originals aside (none was written to).
    package final func forEachChangedColumn(count: Int, _ body: (Int) -> Void) {
        guard originalsState != .none else { return }
        let base = Unretained(self).address
        let originals = UnsafeMutableRawPointer(mutating: originals.unsafelyUnwrapped)
        var index = 0
        withExtendedLifetime(self) {
            cachedMapping.unsafelyUnwrapped.with { mapping in
                for field in mapping.fields[..<count] {
                    let address = FieldAddress(value: base + field.valueOffset, original: originals + field.originalOffset)
                    if field.storage.apply(IsFieldChanged(), kind: field.kind, at: address) { body(index) }
                    index &+= 1
                }
            }
        }
    }

    package final func markColumnSaved(_ index: Int) {
        guard originalsState != .none else { return }
        ownOriginals()
        apply(MarkFieldSaved(), toField: index)
    }

    /// Every original is the value again: the originals kept aside are released.
    package final func markAllColumnsSaved(count: Int) {
        releaseOriginals()
    }

    package final func bindAllColumns(count: Int, to statement: Statement, from first: Int32) throws {
        var parameter = first
        do {
            try forEachField(count) { field, address in
                try field.storage.apply(BindField(statement: statement, parameter: parameter), kind: field.kind, at: address)
                parameter += 1
            }
        } catch {
            throw bindingFailure(error, column: Int(parameter - first))
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
        withField(index) { kind, field in kind.originalSQL(field) }
    }

    package final func restoreOriginal(_ index: Int, _ value: DatabaseValue) {
        ownOriginals()
        guard originalsState == .aside else { return }
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
        captureOriginals()
        try withField(index) { kind, field in try kind.assign(value, to: field) }
    }

    package final func currentValue(_ index: Int) throws -> DatabaseValue {
        // On the type's specialised path: a preload reads every child's key through here, and
        // the generic witnesses cost more than the rest of its work on the child (see
        // Benchmarks/README.md, Hot-path notes).
        try apply(CurrentFieldValue(), toField: index)
    }
}

/// Where a record's original column values are (see ``Model/captureOriginals()``).
@usableFromInline
package enum OriginalsState: UInt8 {
    /// Nowhere: the record was not written to since it was loaded or inserted, and each
    /// column's original is its value.
    case none
    /// In the record's ``RecordExtras``.
    case aside
    /// Its class's defaults (``ModelMapping/defaultOriginals``): a new record filled in.
    case defaults
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
