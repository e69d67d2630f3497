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
@propertyWrapper
public struct Column<Value: ColumnValue> {
    package var value: Value
    package var original: Value
    package let name: String?
    package let index: IndexKind?

    /// The property's value.
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
    public init(wrappedValue: Value, _ name: String? = nil, index: IndexKind? = nil) {
        value = wrappedValue
        original = wrappedValue
        self.name = name
        self.index = index
    }

    /// Declares an optional column whose default is `nil`.
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

/// Where one column's current and original values sit inside a model object.
package struct FieldAddress {
    package var value: UnsafeMutableRawPointer
    package var original: UnsafeMutableRawPointer
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
    static func declaration(_ field: UnsafeRawPointer) -> ColumnDeclaration
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

    package static func declaration(_ field: UnsafeRawPointer) -> ColumnDeclaration {
        let column = field.assumingMemoryBound(to: Column.self).pointee
        return ColumnDeclaration(name: column.name, index: column.index, value: try? column.value.toSQL())
    }

    @inline(__always)
    private static func value(_ field: FieldAddress) -> UnsafeMutablePointer<Value> {
        field.value.assumingMemoryBound(to: Value.self)
    }

    @inline(__always)
    private static func original(_ field: FieldAddress) -> UnsafeMutablePointer<Value> {
        field.original.assumingMemoryBound(to: Value.self)
    }

    package static func bind(_ field: FieldAddress, to statement: Statement, at parameter: Int32) throws {
        try statement.bind(value(field).pointee.toSQL(), at: parameter)
    }

    package static func decode(_ field: FieldAddress, from statement: Statement, at index: Int32) throws {
        let decoded = try Value.fromSQL(try statement.value(index))
        value(field).pointee = decoded
        original(field).pointee = decoded
    }

    package static func isChanged(_ field: FieldAddress) -> Bool {
        !Value.isEquivalent(value(field).pointee, original(field).pointee)
    }

    package static func markSaved(_ field: FieldAddress) {
        original(field).pointee = value(field).pointee
    }

    package static func revert(_ field: FieldAddress) {
        value(field).pointee = original(field).pointee
    }

    package static func values(_ field: FieldAddress) -> (original: DatabaseValue, current: DatabaseValue) {
        ((try? original(field).pointee.toSQL()) ?? .null, (try? value(field).pointee.toSQL()) ?? .null)
    }

    package static func originalSQL(_ field: FieldAddress) -> DatabaseValue {
        (try? original(field).pointee.toSQL()) ?? .null
    }

    package static func assign(_ newValue: DatabaseValue, to field: FieldAddress) throws {
        value(field).pointee = try Value.fromSQL(newValue)
    }

    package static func restoreOriginal(_ value: DatabaseValue, to field: FieldAddress) {
        if let restored = try? Value.fromSQL(value) { original(field).pointee = restored }
    }

    package static func current(_ field: FieldAddress) throws -> DatabaseValue {
        try value(field).pointee.toSQL()
    }
}
