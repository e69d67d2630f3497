import Synchronization

/// Declares a stored column of a ``Model``.
///
/// ```swift
/// final class User: Model {
///     @Column var name: String = ""                     // column "name", TEXT NOT NULL
///     @Column(index: .unique) var email: String = ""    // with a unique index
///     @Column("user_age") var age: Int = 0              // column named "user_age"
///     @Column var avatar: Data? = nil                   // nullable BLOB
///     var scratch = 0                                   // not a column: not stored
/// }
/// ```
///
/// The wrapper holds the current value only. A record keeps a column's original value (as
/// last loaded or saved) only once the column is written to: the first write to it since the
/// record was loaded or saved copies its value aside (`captureOriginal(_:)`; a new record
/// still holding its class's defaults uses the class's copy), so that `save()` compares and
/// writes only the columns written to, including changes made in place to arrays and other
/// JSON values, and a record that is only read carries no second copy. Reading the property
/// costs what a plain stored property costs; writing it adds a check of a flag and, on a
/// record that was written to, a call that finds the column.
///
/// The name and index a declaration gives are read once per class, by reflection, and not
/// kept in every record.
@propertyWrapper
public struct Column<Value: ColumnValue> {
    // Inlinable, with the field usable from inline: a model's property then reads and writes
    // its value directly, and making a record initialises its columns in place, with no
    // generic metadata look-up (unspecialised, each access pays one; see
    // Benchmarks/README.md, Hot-path notes).
    @usableFromInline package var value: Value

    /// The value, for a `Column` outside a model (a model's property goes through
    /// `subscript(_enclosingInstance:wrapped:storage:)`, which tracks changes).
    @inlinable
    public var wrappedValue: Value {
        get { value }
        _modify { yield &value }
        set { value = newValue }
    }

    /// A model's property: reads the value; a write first keeps the record's original values
    /// aside when nothing did since it was loaded or saved.
    @inlinable
    public static subscript<Record: Model>(
        _enclosingInstance record: Record,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Record, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Record, Column>
    ) -> Value {
        // Always inlined, so that the key paths are constants the optimizer turns into the
        // field's address (out of line, each access goes through the key path at run time).
        @inline(__always) get { record[keyPath: storageKeyPath].value }
        @inline(__always) set {
            keepOriginal(of: record, storageKeyPath)
            record[keyPath: storageKeyPath].value = newValue
        }
        @inline(__always) _modify {
            keepOriginal(of: record, storageKeyPath)
            yield &record[keyPath: storageKeyPath].value
        }
    }

    /// Before a write to a model's property: keeps the column's original aside unless the
    /// record keeps it already or uses its class's defaults. The column is told by the address
    /// of the property's storage in the object (the key path is a constant: the address is
    /// the object's plus a constant offset), taken as a number in an access that calls
    /// nothing: a call inside the access would make the compiler check every access to the
    /// property at run time (a `swift_beginAccess` and `swift_endAccess` per write).
    @inlinable @inline(__always)
    static func keepOriginal<Record: Model>(of record: Record, _ storageKeyPath: ReferenceWritableKeyPath<Record, Column>) {
        if record.originalsState != .defaults {
            let address = withUnsafeMutablePointer(to: &record[keyPath: storageKeyPath]) { UInt(bitPattern: $0) }
            record.captureOriginal(ofFieldAt: address)
        }
    }

    /// Declares a column with its default value.
    /// - Parameters:
    ///   - wrappedValue: the value of a new record, and the column's SQL default.
    ///   - name: the column name, when it differs from the property name.
    ///   - index: `.index` or `.unique` to create an index on the column.
    @inlinable
    public init(wrappedValue: Value, _ name: String? = nil, index: IndexKind? = nil) {
        value = wrappedValue
        if name != nil || index != nil, columnDeclarationsAreRecording() {
            ColumnDeclarations.declare(name: name, index: index, value: &value)
        }
    }

    /// Declares an optional column whose default is `nil`.
    @inlinable
    public init(_ name: String? = nil, index: IndexKind? = nil) where Value: ExpressibleByNilLiteral {
        self.init(wrappedValue: nil, name, index: index)
    }
}

/// Where one column's current and original values sit: the value inside a model object,
/// the original in the record's ``RecordExtras``, or (for a record whose originals are not
/// kept aside: unchanged since loaded or saved) at the value's own address.
package struct FieldAddress {
    package var value: UnsafeMutableRawPointer
    package var original: UnsafeMutableRawPointer

    /// Whether the value and the original, of type `Value`, are the same bytes (padding
    /// included: equal values may differ there, which only means `false`).
    @inline(__always)
    package func holdsIdenticalBits<Value>(_ type: Value.Type) -> Bool {
        holdsIdenticalBytes(MemoryLayout<Value>.size)
    }

    /// Whether the value and the original, of `size` bytes, are the same bytes.
    @inline(__always)
    package func holdsIdenticalBytes(_ size: Int) -> Bool {
        var offset = 0
        while offset + 8 <= size {
            guard value.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                == original.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else { return false }
            offset += 8
        }
        while offset < size {
            guard value.load(fromByteOffset: offset, as: UInt8.self)
                == original.load(fromByteOffset: offset, as: UInt8.self) else { return false }
            offset += 1
        }
        return true
    }
}

/// Type-erased access to a ``Column`` stored inside a model object, at
/// addresses found by reflection: no key path or `Mirror` per row.
///
/// The per-row operations take the addresses of the value and the original
/// value directly and touch only `Value`: in unspecialized generic code,
/// reaching a field of `Column<Value>` would look up its type metadata on
/// every call (measured: a third of an update's cost).
package protocol ColumnField: SendableMetatype {
    static var sqlType: SQLType { get }
    static var columnKind: ColumnKind { get }
    /// The column's kind, given the value of the field at `field` (an instance's initial
    /// value): see `ColumnValue.storedColumnKind()`.
    static func storedColumnKind(_ field: UnsafeRawPointer) -> ColumnKind
    static var isNullable: Bool { get }
    /// The size and alignment of the value, which an original kept aside takes.
    static var valueLayout: (size: Int, alignment: Int) { get }
    /// Whether the value is plain bytes, copied without retaining anything.
    static var isTrivial: Bool { get }
    /// The value of the field at `field` (a default, in an instance reflection made).
    static func databaseValue(_ field: UnsafeRawPointer) -> DatabaseValue?
    static func bind(_ field: FieldAddress, to statement: Statement, at parameter: Int32) throws
    static func decode(_ field: FieldAddress, from statement: Statement, at column: Int32) throws
    static func isChanged(_ field: FieldAddress) -> Bool
    static func markSaved(_ field: FieldAddress)
    static func captureOriginal(_ field: FieldAddress)
    static func releaseOriginal(_ field: FieldAddress)
    static func revert(_ field: FieldAddress)
    static func values(_ field: FieldAddress) -> (original: DatabaseValue, current: DatabaseValue)
    static func originalSQL(_ field: FieldAddress) -> DatabaseValue
    static func assign(_ value: DatabaseValue, to field: FieldAddress) throws
    static func restoreOriginal(_ value: DatabaseValue, to field: FieldAddress)
    static func current(_ field: FieldAddress) throws -> DatabaseValue
}

extension Column: ColumnField {
    package static var sqlType: SQLType { Value.sqlType }
    package static var columnKind: ColumnKind { Value.columnKind }
    package static func storedColumnKind(_ field: UnsafeRawPointer) -> ColumnKind {
        Value.columnKind == .json ? field.assumingMemoryBound(to: Column.self).pointee.value.storedColumnKind() : Value.columnKind
    }
    package static var isNullable: Bool { Value.isNullable }

    package static var valueLayout: (size: Int, alignment: Int) {
        precondition(MemoryLayout<Column>.offset(of: \Column.value) == 0, "Column holds its value first")
        return (MemoryLayout<Value>.size, MemoryLayout<Value>.alignment)
    }

    package static var isTrivial: Bool { _isPOD(Value.self) }

    package static func databaseValue(_ field: UnsafeRawPointer) -> DatabaseValue? {
        try? field.assumingMemoryBound(to: Column.self).pointee.value.toSQL()
    }

    // The per-row operations are KnownFieldType's, run here unspecialised (for the types it
    // has no case of): one body for both paths.

    package static func bind(_ field: FieldAddress, to statement: Statement, at parameter: Int32) throws {
        try BindField(statement: statement, parameter: parameter).run(Value.self, field)
    }

    package static func decode(_ field: FieldAddress, from statement: Statement, at index: Int32) throws {
        try DecodeField(statement: statement, column: index).run(Value.self, field)
    }

    package static func isChanged(_ field: FieldAddress) -> Bool {
        IsFieldChanged().run(Value.self, field)
    }

    package static func markSaved(_ field: FieldAddress) {
        MarkFieldSaved().run(Value.self, field)
    }

    package static func captureOriginal(_ field: FieldAddress) {
        CaptureOriginal().run(Value.self, field)
    }

    package static func releaseOriginal(_ field: FieldAddress) {
        ReleaseOriginal().run(Value.self, field)
    }

    package static func revert(_ field: FieldAddress) {
        field.value(Value.self).pointee = field.original(Value.self).pointee
    }

    package static func values(_ field: FieldAddress) -> (original: DatabaseValue, current: DatabaseValue) {
        ((try? field.original(Value.self).pointee.toSQL()) ?? .null, (try? field.value(Value.self).pointee.toSQL()) ?? .null)
    }

    package static func originalSQL(_ field: FieldAddress) -> DatabaseValue {
        (try? field.original(Value.self).pointee.toSQL()) ?? .null
    }

    package static func assign(_ newValue: DatabaseValue, to field: FieldAddress) throws {
        field.value(Value.self).pointee = try Value.fromSQL(newValue)
    }

    package static func restoreOriginal(_ value: DatabaseValue, to field: FieldAddress) {
        if let restored = try? Value.fromSQL(value) { field.original(Value.self).pointee = restored }
    }

    package static func current(_ field: FieldAddress) throws -> DatabaseValue {
        try field.value(Value.self).pointee.toSQL()
    }
}
