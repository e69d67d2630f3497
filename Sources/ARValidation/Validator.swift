@_spi(Engines) import ARCore

/// A custom validator: the seeds' `ARValidatorProtocol`.
///
/// ```swift
/// struct PrefixValidator: Validator {
///     var errorMessage: String { "Invalid prefix" }
///     func validate(field: String, of record: Model) throws -> Bool {
///         try record.value(of: field, as: String.self).hasPrefix("LOL")
///     }
/// }
/// // in the model: $0.custom(\.name, PrefixValidator())
/// ```
public protocol Validator {
    /// The error key when a field is invalid; default `invalid`.
    var errorKey: String { get }
    /// A readable message; default `is invalid`.
    var errorMessage: String { get }
    /// Whether `field` (a column or property name) of `record` is valid.
    func validate(field: String, of record: Model) throws -> Bool
}

extension Validator {
    public var errorKey: String { "invalid" }
    public var errorMessage: String { "is invalid" }
}

/// A record the validation engine checks: a model class's (``Model``) or a run-time
/// model's (``DynamicRecord``, the C API's).
package protocol ValidationSubject: AnyObject {
    /// The row id; `nil` for a new record.
    var id: Int64? { get }
    /// The table that uniqueness checks read.
    func validatedTable() throws -> TableOperations
    /// A column's value as stored, by column (or property) name.
    func storedValue(of column: String) throws -> DatabaseValue
}

extension Model: ValidationSubject {
    package func validatedTable() throws -> TableOperations { try mapping().table }
    package func storedValue(of column: String) throws -> DatabaseValue { try value(of: column) }
}

extension DynamicRecord: ValidationSubject {
    package func validatedTable() throws -> TableOperations { model.table }
    package func storedValue(of column: String) throws -> DatabaseValue { try value(column) }
}

/// The checks the rules share, whichever way a model declares them (key paths or names).
enum Check {
    /// A failed check: its key and message.
    struct Outcome {
        var key: String
        var message: String
    }

    static let blankMessage = "can't be blank"
    static let takenMessage = "already exists"

    /// `cant_be_blank` when `value` is blank (see ``isBlank(_:)``).
    static func presence(_ value: Any, message: String) -> Outcome? {
        isBlank(value) ? Outcome(key: "cant_be_blank", message: message) : nil
    }

    /// `already_exists` when another row of the record's table holds `value` in `column`
    /// (and the same `scope` values); `NULL` is not checked. Runs on the writer, so that
    /// inside a save's transaction it sees what the transaction wrote.
    ///
    /// Before an upsert on `upsertConflict` (not empty), the row holding the record's values
    /// in those columns is the row the upsert updates, not another one: it is not counted.
    /// (A `NULL` among those values matches no row: the upsert inserts.)
    static func uniqueness(
        of record: any ValidationSubject, column: String, value: DatabaseValue, scope: [String], caseSensitive: Bool,
        upsertConflict: [String] = [], message: String
    ) throws -> Outcome? {
        guard !value.isNull else { return nil }
        let table = try record.validatedTable()
        let database = try Database.current
        var conditions: [RowCondition] = [caseSensitive ? .equals(column) : .equalsIgnoringCase(column)]
        var arguments = [value]
        for scoped in scope {
            let scopeValue = try record.storedValue(of: scoped)
            conditions.append(.matches(try columnName(scoped, of: table), isNull: scopeValue.isNull))
            if !scopeValue.isNull { arguments.append(scopeValue) }
        }
        if let id = record.id {
            conditions.append(.notEquals("id"))
            arguments.append(.integer(id))
        }
        if !upsertConflict.isEmpty {
            let target = try upsertConflict.map { name in (try columnName(name, of: table), try record.storedValue(of: name)) }
            if !target.contains(where: { $0.1.isNull }) {
                // `IS NOT NULL` first: a row with NULL there is not the target, and counts.
                conditions.append(.notTheRow(target.map(\.0)))
                arguments.append(contentsOf: target.map(\.1))
            }
        }
        let sql = database.dialect.existsSQL(in: table.schema.name, where: conditions)
        // Through withWriter: a first save validates before its INSERT creates the table.
        let taken = try database.withWriter(table) { connection in
            try connection.rows(sql, arguments).first?.first == .integer(1)
        }
        return taken ? Outcome(key: "already_exists", message: message) : nil
    }

    /// The name of a column of `table`, by column or property name.
    private static func columnName(_ name: String, of table: TableOperations) throws -> String {
        guard let position = table.position(of: name) else { throw table.schema.unknownColumn(name) }
        return table.schema.allColumnNames[position]
    }
}

/// Whether a value is blank: `nil` or SQL `NULL`, an empty or all-whitespace string, empty
/// data or an empty collection.
func isBlank(_ value: Any) -> Bool {
    if let stored = value as? DatabaseValue {
        switch stored {
        case .null: return true
        case .text(let text): return text.allSatisfy(\.isWhitespace)
        case .blob(let data): return data.isEmpty
        case .integer, .real: return false
        }
    }
    if let optional = value as? any OptionalProtocol, optional.isNone { return true }
    if let text = value as? String { return text.allSatisfy(\.isWhitespace) }
    if let optionalText = value as? String?, let text = optionalText { return text.allSatisfy(\.isWhitespace) }
    if let collection = value as? any Collection { return collection.isEmpty }
    if let unwrapped = (value as? any OptionalProtocol)?.wrappedAny { return isBlank(unwrapped) }
    return false
}

/// Lets `isBlank` see through optionals of any type.
protocol OptionalProtocol {
    var isNone: Bool { get }
    var wrappedAny: Any? { get }
}

extension Optional: OptionalProtocol {
    var isNone: Bool { self == nil }
    var wrappedAny: Any? { self.map { $0 as Any } }
}
