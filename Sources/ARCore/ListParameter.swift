/// A list of values bound as one parameter (``SQLDialect/inList(_:negated:)``): which lists
/// can be, and the pieces the engines write their one value with.
extension Array where Element == DatabaseValue {
    /// Whether the list can be bound as one parameter: not empty, and all integers or all
    /// text without a NUL character (text that every engine's list value can carry as it is).
    /// Any other list (reals, blobs, `NULL`s, a mix) is bound a parameter per element.
    package var isBindableAsOneParameter: Bool {
        guard let first = first else { return false }
        switch first {
        case .integer:
            for element in self {
                guard case .integer = element else { return false }
            }
            return true
        case .text:
            for element in self {
                guard case .text(let text) = element, !text.utf8.contains(0) else { return false }
            }
            return true
        case .null, .real, .blob:
            return false
        }
    }
}

extension Array where Element == UInt8 {
    /// Appends `value`'s decimal digits (and its sign), as the list values of the engines
    /// write integers: no `String` made per element.
    package mutating func appendDecimal(_ value: Int64) {
        if value < 0 { append(UInt8(ascii: "-")) }
        let start = count
        var magnitude = value.magnitude
        repeat {
            append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        self[start...].reverse()
    }
}
