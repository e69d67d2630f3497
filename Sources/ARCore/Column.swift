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

/// Type-erased access to a ``Column`` stored at a raw address inside a model
/// object. The address comes from the field offset found by reflection, so
/// no key path or `Mirror` is used per row.
package protocol ColumnField: SendableMetatype {
    static var sqlType: SQLType { get }
    static var isNullable: Bool { get }
    static func declaration(_ field: UnsafeRawPointer) -> (name: String?, index: IndexKind?, value: DatabaseValue?)
    static func bind(_ field: UnsafeRawPointer, to statement: Statement, at parameter: Int32) throws
    static func decode(_ field: UnsafeMutableRawPointer, from statement: Statement, at column: Int32) throws
    static func isChanged(_ field: UnsafeRawPointer) -> Bool
    static func markSaved(_ field: UnsafeMutableRawPointer)
    static func revert(_ field: UnsafeMutableRawPointer)
    static func values(_ field: UnsafeRawPointer) -> (original: DatabaseValue, current: DatabaseValue)
    static func assign(_ value: DatabaseValue, to field: UnsafeMutableRawPointer) throws
    static func current(_ field: UnsafeRawPointer) throws -> DatabaseValue
}

extension Column: ColumnField {
    package static var sqlType: SQLType { Value.sqlType }
    package static var isNullable: Bool { Value.isNullable }

    @inline(__always)
    private static func column(_ field: UnsafeRawPointer) -> UnsafePointer<Column> {
        field.assumingMemoryBound(to: Column.self)
    }

    @inline(__always)
    private static func column(_ field: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Column> {
        field.assumingMemoryBound(to: Column.self)
    }

    package static func declaration(_ field: UnsafeRawPointer) -> (name: String?, index: IndexKind?, value: DatabaseValue?) {
        let column = column(field).pointee
        return (column.name, column.index, try? column.value.toSQL())
    }

    package static func bind(_ field: UnsafeRawPointer, to statement: Statement, at parameter: Int32) throws {
        try statement.bind(column(field).pointee.value.toSQL(), at: parameter)
    }

    package static func decode(_ field: UnsafeMutableRawPointer, from statement: Statement, at index: Int32) throws {
        let value = try Value.fromSQL(statement.value(index))
        let column = column(field)
        column.pointee.value = value
        column.pointee.original = value
    }

    package static func isChanged(_ field: UnsafeRawPointer) -> Bool {
        let column = column(field)
        return !Value.isEquivalent(column.pointee.value, column.pointee.original)
    }

    package static func markSaved(_ field: UnsafeMutableRawPointer) {
        let column = column(field)
        column.pointee.original = column.pointee.value
    }

    package static func revert(_ field: UnsafeMutableRawPointer) {
        let column = column(field)
        column.pointee.value = column.pointee.original
    }

    package static func values(_ field: UnsafeRawPointer) -> (original: DatabaseValue, current: DatabaseValue) {
        let column = column(field).pointee
        return ((try? column.original.toSQL()) ?? .null, (try? column.value.toSQL()) ?? .null)
    }

    package static func assign(_ value: DatabaseValue, to field: UnsafeMutableRawPointer) throws {
        column(field).pointee.value = try Value.fromSQL(value)
    }

    package static func current(_ field: UnsafeRawPointer) throws -> DatabaseValue {
        try column(field).pointee.value.toSQL()
    }
}
