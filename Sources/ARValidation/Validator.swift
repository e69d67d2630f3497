import ARCore

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

/// A failed check: its key and message.
struct Failure {
    var key: String
    var message: String
}

/// Whether a value is blank: `nil`, or an empty or all-whitespace string, or empty data or collection.
func isBlank(_ value: Any) -> Bool {
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
