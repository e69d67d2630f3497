#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The Swift type a model's column holds, when it is one of the common ones: the per-row
/// work on it (bind, decode, change check, mark saved) then runs code specialised for that
/// type, chosen by one switch, instead of unspecialised generic code that reaches the value
/// through witness tables (measured: half of a row's decoding and a third of an insert's
/// overhead went there). Other types (enums, JSON, `Decimal`, custom ones) take the
/// generic path; both paths call the same `ColumnValue` methods, so they behave alike.
///
/// Public only as SPI, with the stores below (``store(integer:at:)`` and the others): an engine
/// reading its row straight into a record (``DirectRowReading``) stores through them inline
/// (this toolchain inlines no `package` function across modules).
@_spi(Engines) public enum KnownFieldType: Sendable {
    case string, int, int64, double, bool, data, date
    case optionalString, optionalInt, optionalInt64, optionalDouble, optionalBool, optionalData, optionalDate
    /// Any other `ColumnValue`: through ``ColumnField``.
    case other

    /// The storage of a `Column<Value>` field of type `kind`.
    package init(_ kind: any ColumnField.Type) {
        let known: [(any ColumnField.Type, KnownFieldType)] = [
            (Column<String>.self, .string), (Column<Int>.self, .int), (Column<Int64>.self, .int64),
            (Column<Double>.self, .double), (Column<Bool>.self, .bool), (Column<Data>.self, .data),
            (Column<Date>.self, .date), (Column<String?>.self, .optionalString), (Column<Int?>.self, .optionalInt),
            (Column<Int64?>.self, .optionalInt64), (Column<Double?>.self, .optionalDouble),
            (Column<Bool?>.self, .optionalBool), (Column<Data?>.self, .optionalData), (Column<Date?>.self, .optionalDate),
        ]
        self = known.first { $0.0 == kind }?.1 ?? .other
    }

    /// Runs `operation` on the field at `address`, for its type.
    @inline(__always)
    package func apply<Operation: FieldOperation>(
        _ operation: Operation, kind: any ColumnField.Type, at address: FieldAddress
    ) throws(Operation.Failure) -> Operation.Result {
        switch self {
        case .string: try operation.run(String.self, address)
        case .int: try operation.run(Int.self, address)
        case .int64: try operation.run(Int64.self, address)
        case .double: try operation.run(Double.self, address)
        case .bool: try operation.run(Bool.self, address)
        case .data: try operation.run(Data.self, address)
        case .date: try operation.run(Date.self, address)
        case .optionalString: try operation.run(String?.self, address)
        case .optionalInt: try operation.run(Int?.self, address)
        case .optionalInt64: try operation.run(Int64?.self, address)
        case .optionalDouble: try operation.run(Double?.self, address)
        case .optionalBool: try operation.run(Bool?.self, address)
        case .optionalData: try operation.run(Data?.self, address)
        case .optionalDate: try operation.run(Date?.self, address)
        case .other: try operation.runGeneric(kind, address)
        }
    }
}

extension KnownFieldType {
    /// Binds the field at `address` (of type `kind`) to `parameter` of `statement`: a text or
    /// bytes copied straight from the field, without a ``DatabaseValue`` holding them on the
    /// way (what their `toSQL()` makes is no other value); any other value as ``BindField``
    /// binds it. (A switch, not type checks in the generic ``BindField``: an optional's check
    /// was not folded, and cost a metadata look-up a bind.)
    @inline(__always)
    package func bind(_ kind: any ColumnField.Type, at address: FieldAddress, to statement: Statement, parameter: Int32) throws {
        switch self {
        case .string: try statement.bindText(copying: address.value(String.self), at: parameter)
        case .data: try statement.bindBlob(copying: address.value(Data.self), at: parameter)
        // An optional holding a value is that value's bytes (its `nil` is a spare bit pattern).
        case .optionalString:
            guard case .some = address.value(String?.self).pointee else { return try statement.bind(.null, at: parameter) }
            try statement.bindText(copying: UnsafeRawPointer(address.value).assumingMemoryBound(to: String.self), at: parameter)
        case .optionalData:
            guard case .some = address.value(Data?.self).pointee else { return try statement.bind(.null, at: parameter) }
            try statement.bindBlob(copying: UnsafeRawPointer(address.value).assumingMemoryBound(to: Data.self), at: parameter)
        // The others as ``apply(_:kind:at:)`` runs them (written out: called from here, it was
        // compiled out of line).
        case .int: try BindField(statement: statement, parameter: parameter).run(Int.self, address)
        case .int64: try BindField(statement: statement, parameter: parameter).run(Int64.self, address)
        case .double: try BindField(statement: statement, parameter: parameter).run(Double.self, address)
        case .bool: try BindField(statement: statement, parameter: parameter).run(Bool.self, address)
        case .date: try BindField(statement: statement, parameter: parameter).run(Date.self, address)
        case .optionalInt: try BindField(statement: statement, parameter: parameter).run(Int?.self, address)
        case .optionalInt64: try BindField(statement: statement, parameter: parameter).run(Int64?.self, address)
        case .optionalDouble: try BindField(statement: statement, parameter: parameter).run(Double?.self, address)
        case .optionalBool: try BindField(statement: statement, parameter: parameter).run(Bool?.self, address)
        case .optionalDate: try BindField(statement: statement, parameter: parameter).run(Date?.self, address)
        case .other: try BindField(statement: statement, parameter: parameter).runGeneric(kind, address)
        }
    }

    /// Reads `cell` into the field at `address` (its value; see ``DecodeField``) when the
    /// field's type is a known one and the cell holds that type's own storage class (or `NULL`
    /// for an optional): `true` when done. Otherwise (any other type, a conversion, a mismatch,
    /// text that is not UTF-8) `false`, the field untouched, for ``DecodeField``, which reads
    /// the cell through a ``DatabaseValue`` and `fromSQL`. The values are those `fromSQL`
    /// makes, without making a ``DatabaseValue`` first.
    @inline(__always)
    package func decode(_ cell: Cell, into address: FieldAddress) -> Bool {
        switch cell {
        case .integer(let int): store(integer: int, at: address.value)
        case .real(let real): store(real: real, at: address.value)
        case .text(let utf8): storesText && store(text: decodedText(utf8), at: address.value)
        case .blob(let bytes): store(blob: bytes, at: address.value)
        case .null: storeNull(at: address.value)
        }
    }

    // The stores of one storage class each: the value the type's `fromSQL` makes, stored as the
    // field's value at `address` (assigned: the old value is released), `true`; or `false`, the
    // field untouched, for a type that takes the class only through a conversion (or not at all).

    /// Stores an `INTEGER` (`Int`, `Int64`, `Bool` from 0 or 1, and their optionals).
    @inlinable @inline(__always)
    public func store(integer: Int64, at address: UnsafeMutableRawPointer) -> Bool {
        switch self {
        case .int:
            guard let int = Int(exactly: integer) else { return false }
            address.assumingMemoryBound(to: Int.self).pointee = int
        case .optionalInt:
            guard let int = Int(exactly: integer) else { return false }
            address.assumingMemoryBound(to: Int?.self).pointee = int
        case .int64: address.assumingMemoryBound(to: Int64.self).pointee = integer
        case .optionalInt64: address.assumingMemoryBound(to: Int64?.self).pointee = integer
        case .bool where integer == 0 || integer == 1: address.assumingMemoryBound(to: Bool.self).pointee = integer == 1
        case .optionalBool where integer == 0 || integer == 1: address.assumingMemoryBound(to: Bool?.self).pointee = integer == 1
        default: return false
        }
        return true
    }

    /// Stores a `REAL` (`Double`, `Date` from seconds since 1970, and their optionals).
    @inlinable @inline(__always)
    public func store(real: Double, at address: UnsafeMutableRawPointer) -> Bool {
        switch self {
        case .double: address.assumingMemoryBound(to: Double.self).pointee = real
        case .optionalDouble: address.assumingMemoryBound(to: Double?.self).pointee = real
        case .date: address.assumingMemoryBound(to: Date.self).pointee = Date(timeIntervalSince1970: real)
        case .optionalDate: address.assumingMemoryBound(to: Date?.self).pointee = Date(timeIntervalSince1970: real)
        default: return false
        }
        return true
    }

    /// Whether the type takes `TEXT` as it is (`String`, `String?`): the text is decoded only then.
    @inlinable
    public var storesText: Bool {
        @inline(__always) get {
            switch self {
            case .string, .optionalString: true
            default: false
            }
        }
    }

    /// Stores `TEXT` decoded (``storesText`` types; `nil`: not valid UTF-8, not stored).
    @inlinable @inline(__always)
    public func store(text: __owned String?, at address: UnsafeMutableRawPointer) -> Bool {
        guard let text else { return false }
        switch self {
        case .string: address.assumingMemoryBound(to: String.self).pointee = text
        case .optionalString: address.assumingMemoryBound(to: String?.self).pointee = text
        default: return false
        }
        return true
    }

    /// Stores a `BLOB` (`Data`, `Data?`), its bytes copied.
    @inlinable @inline(__always)
    public func store(blob bytes: UnsafeRawBufferPointer, at address: UnsafeMutableRawPointer) -> Bool {
        switch self {
        case .data: address.assumingMemoryBound(to: Data.self).pointee = Data(cellBytes: bytes)
        case .optionalData: address.assumingMemoryBound(to: Data?.self).pointee = Data(cellBytes: bytes)
        default: return false
        }
        return true
    }

    /// Stores `NULL` (the optionals, as `nil`).
    @inlinable @inline(__always)
    public func storeNull(at address: UnsafeMutableRawPointer) -> Bool {
        switch self {
        case .optionalString: address.assumingMemoryBound(to: String?.self).pointee = nil
        case .optionalInt: address.assumingMemoryBound(to: Int?.self).pointee = nil
        case .optionalInt64: address.assumingMemoryBound(to: Int64?.self).pointee = nil
        case .optionalDouble: address.assumingMemoryBound(to: Double?.self).pointee = nil
        case .optionalBool: address.assumingMemoryBound(to: Bool?.self).pointee = nil
        case .optionalDate: address.assumingMemoryBound(to: Date?.self).pointee = nil
        case .optionalData: address.assumingMemoryBound(to: Data?.self).pointee = nil
        default: return false
        }
        return true
    }
}

extension Data {
    /// A copy of a cell's bytes (`Data(bytes:count:)`: the sequence initializer costs more).
    @inlinable @inline(__always)
    @_spi(Engines) public init(cellBytes bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            self.init()
            return
        }
        self.init(bytes: base, count: bytes.count)
    }
}

/// One per-row operation on a column field: for a known type (specialised) and through
/// the field's ``ColumnField`` witnesses for any other.
package protocol FieldOperation {
    associatedtype Result
    associatedtype Failure: Error
    func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) throws(Failure) -> Result
    func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) throws(Failure) -> Result
}

extension FieldAddress {
    @inline(__always)
    func value<Value>(_ type: Value.Type) -> UnsafeMutablePointer<Value> { value.assumingMemoryBound(to: Value.self) }

    @inline(__always)
    func original<Value>(_ type: Value.Type) -> UnsafeMutablePointer<Value> {
        original.assumingMemoryBound(to: Value.self)
    }
}

/// Binds the field's current value to a statement parameter.
package struct BindField: FieldOperation {
    /// Unretained: the caller holds the statement while it binds (a strong reference was
    /// retained and released per column when the per-type code was not inlined).
    let statement: Unretained<Statement>
    let parameter: Int32

    @inline(__always)
    init(statement: Statement, parameter: Int32) {
        self.statement = Unretained(statement)
        self.parameter = parameter
    }

    @inline(__always)
    package func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) throws -> Void {
        let value = try field.value(Value.self).pointee.toSQL()
        // Only REAL columns can hold NaN or -0.0 (known per type, so no check for the others).
        if Value.sqlType == .real { try value.checkStorable() }
        try statement.with { try $0.bind(value, at: parameter) }
    }

    package func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) throws {
        try statement.with { try kind.bind(field, to: $0, at: parameter) }
    }
}

/// Reads a result column into the field's value. (Its original is the value itself unless the
/// record kept its originals aside, and ``Model`` sets those after decoding.)
package struct DecodeField: FieldOperation {
    let statement: Statement
    let column: Int32
    /// The statement's current row (read once, not per column's property access).
    let row: UnsafePointer<Cell>

    @inline(__always)
    init(statement: Statement, column: Int32) {
        self.statement = statement
        self.column = column
        row = statement.row.baseAddress.unsafelyUnwrapped
    }

    @inline(__always)
    package func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) throws -> Void {
        field.value(Value.self).pointee = try Value.fromSQL(try row[Int(column)].databaseValue(column: column))
    }

    package func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) throws {
        try kind.decode(field, from: statement, at: column)
    }
}

/// Whether the field differs from its original value.
package struct IsFieldChanged: FieldOperation {
    @inline(__always)
    package func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) -> Bool {
        // A column not written since it was loaded or saved holds a bit-for-bit copy of its
        // original (the same inline bytes, or the same storage of a string or `Data`), and a
        // value is equivalent to itself: no comparison through the type (`Data`'s `==` alone
        // is dear with its access checks; see Benchmarks/README.md, Hot-path notes).
        if field.holdsIdenticalBits(Value.self) { return false }
        return !Value.isEquivalent(field.value(Value.self).pointee, field.original(Value.self).pointee)
    }

    package func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) -> Bool { kind.isChanged(field) }
}

/// The field's current value as a database value.
package struct CurrentFieldValue: FieldOperation {
    @inline(__always)
    package func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) throws -> DatabaseValue {
        try field.value(Value.self).pointee.toSQL()
    }

    package func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) throws -> DatabaseValue {
        try kind.current(field)
    }
}

/// Makes the field's current value its original one.
package struct MarkFieldSaved: FieldOperation {
    @inline(__always)
    package func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) {
        field.original(Value.self).pointee = field.value(Value.self).pointee
    }

    package func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) { kind.markSaved(field) }
}

/// Copies the field's value as its original, into memory kept aside that holds none yet.
package struct CaptureOriginal: FieldOperation {
    @inline(__always)
    package func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) {
        field.original(Value.self).initialize(to: field.value(Value.self).pointee)
    }

    package func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) { kind.captureOriginal(field) }
}

/// Destroys the original kept aside (the memory stays, to be captured into again).
package struct ReleaseOriginal: FieldOperation {
    @inline(__always)
    package func run<Value: ColumnValue>(_ type: Value.Type, _ field: FieldAddress) {
        field.original(Value.self).deinitialize(count: 1)
    }

    package func runGeneric(_ kind: any ColumnField.Type, _ field: FieldAddress) { kind.releaseOriginal(field) }
}
