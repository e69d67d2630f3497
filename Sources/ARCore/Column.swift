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
/// The wrapper keeps the current value and the original one (as last loaded
/// or saved), so that `save()` writes only what changed, including changes
/// made in place to arrays and other JSON values. Reading and writing the
/// property costs what a plain stored property costs.
///
/// A record holds only the two values (and four bytes): the name and index a
/// declaration gives are read once per class, from the instance reflection makes,
/// and not kept in every record.
@propertyWrapper
public struct Column<Value: ColumnValue> {
    // Inlinable, with the fields usable from inline: a model's property then reads and
    // writes its value directly, and making a record initialises its columns in place, with
    // no generic metadata look-up (unspecialised, each access pays one; see
    // Benchmarks/README.md, Hot-path notes).
    @usableFromInline package var value: Value
    @usableFromInline package var original: Value
    /// Where reflection finds this declaration's name and index (see ``ColumnDeclarations``);
    /// 0 outside reflection and for a declaration without either.
    @usableFromInline package let declarationTag: UInt32

    /// The property's value.
    @inlinable
    public var wrappedValue: Value {
        get { value }
        _modify { yield &value }
        set { value = newValue }
    }

    /// Declares a column with its default value.
    /// - Parameters:
    ///   - wrappedValue: the value of a new record, and the column's SQL default.
    ///   - name: the column name, when it differs from the property name.
    ///   - index: `.index` or `.unique` to create an index on the column.
    @inlinable
    public init(wrappedValue: Value, _ name: String? = nil, index: IndexKind? = nil) {
        value = wrappedValue
        original = wrappedValue
        declarationTag = name == nil && index == nil ? 0 : ColumnDeclarations.tag(name: name, index: index)
    }

    /// Declares an optional column whose default is `nil`.
    @inlinable
    public init(_ name: String? = nil, index: IndexKind? = nil) where Value: ExpressibleByNilLiteral {
        self.init(wrappedValue: nil, name, index: index)
    }
}

/// What a `@Column` declaration says besides its type: its name, index and default value.
package struct ColumnDeclaration {
    package var name: String?
    package var index: IndexKind?
    package var value: DatabaseValue?
}

/// Where the names and indexes of `@Column` declarations wait for reflection, so that
/// records need not carry them.
///
/// Reflection makes one instance of a class inside ``recording(_:)``; each `Column`
/// initializer with a name or an index run there appends them to the recording and keeps
/// their position (its tag). Outside a recording a `Column` keeps tag 0, at the cost of
/// one atomic load when its declaration has a name or an index.
@usableFromInline
package enum ColumnDeclarations {
    /// The names and indexes recorded while one instance is made, by tag − 1.
    /// `@unchecked Sendable`: made, filled and read by one thread, inside one `withValue`.
    package final class Recording: @unchecked Sendable {
        package var declarations: [(name: String?, index: IndexKind?)] = []

        /// The name and index recorded under `tag` (none for tag 0).
        package func declaration(_ tag: UInt32) -> (name: String?, index: IndexKind?) {
            declarations.indices.contains(Int(tag) - 1) ? declarations[Int(tag) - 1] : (nil, nil)
        }
    }

    @TaskLocal private static var current: Recording?
    /// How many recordings are under way on any thread: the fast path checks this first.
    private static let active = Atomic<Int>(0)

    /// Runs `body` (which makes the instance reflection reads) with a recording in place.
    package static func recording<Result>(_ body: () throws -> Result) rethrows -> (Result, Recording) {
        let recording = Recording()
        active.add(1, ordering: .relaxed)
        defer { active.subtract(1, ordering: .relaxed) }
        let result = try $current.withValue(recording) { try body() }
        return (result, recording)
    }

    /// The tag of a declaration with a name or an index: its place in this thread's
    /// recording, or 0 when nothing records.
    @usableFromInline @inline(never)
    package static func tag(name: String?, index: IndexKind?) -> UInt32 {
        guard active.load(ordering: .relaxed) > 0, let recording = current else { return 0 }
        recording.declarations.append((name, index))
        return UInt32(recording.declarations.count)
    }
}

/// Where one column's current and original values sit inside a model object.
package struct FieldAddress {
    package var value: UnsafeMutableRawPointer
    package var original: UnsafeMutableRawPointer

    /// Whether the value and the original, of type `Value`, are the same bytes (padding
    /// included: equal values may differ there, which only means `false`).
    @inline(__always)
    package func holdsIdenticalBits<Value>(_ type: Value.Type) -> Bool {
        let size = MemoryLayout<Value>.size
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
    static var isNullable: Bool { get }
    /// Byte offsets of the value and the original value inside the wrapper (computed once per type).
    static var layout: (value: Int, original: Int) { get }
    /// The declaration's tag (see ``ColumnDeclarations``) and default value, in an instance reflection made.
    static func declaration(_ field: UnsafeRawPointer) -> (tag: UInt32, value: DatabaseValue?)
    static func bind(_ field: FieldAddress, to statement: Statement, at parameter: Int32) throws
    static func decode(_ field: FieldAddress, from statement: Statement, at column: Int32) throws
    static func isChanged(_ field: FieldAddress) -> Bool
    static func markSaved(_ field: FieldAddress)
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
    package static var isNullable: Bool { Value.isNullable }

    package static var layout: (value: Int, original: Int) {
        (MemoryLayout<Column>.offset(of: \Column.value)!, MemoryLayout<Column>.offset(of: \Column.original)!)
    }

    package static func declaration(_ field: UnsafeRawPointer) -> (tag: UInt32, value: DatabaseValue?) {
        let column = field.assumingMemoryBound(to: Column.self).pointee
        return (column.declarationTag, try? column.value.toSQL())
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
