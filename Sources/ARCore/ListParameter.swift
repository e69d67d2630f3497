/// A list of values bound as one parameter (``SQLDialect/inList(_:negated:)``): which lists
/// can be, and the piece the engines write their one value with.
extension Array where Element == DatabaseValue {
    /// Whether the list can be bound as one parameter: not empty, and all integers (ids, keys).
    /// Any other list (text, reals, blobs, `NULL`s, a mix) is bound a parameter per element:
    /// its elements' conversions to the column's type differ more between engines than an
    /// integer's, and the lists a loop repeats with other lengths are lists of ids.
    package var isBindableAsOneParameter: Bool {
        guard !isEmpty else { return false }
        for element in self {
            guard case .integer = element else { return false }
        }
        return true
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
