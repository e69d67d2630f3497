/// A list of values bound as one parameter (``SQLDialect/inList(_:negated:)``): which lists
/// can be, and how the engines write their one value.
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

    /// The integers (the list ``isBindableAsOneParameter``) in decimal, separated by commas,
    /// between `open` and `close`: a JSON array (`[1,-2]`), a PostgreSQL array (`{1,-2}`).
    /// Written as bytes, with no `String` made per element.
    package func commaSeparatedIntegers(between open: Unicode.Scalar, and close: Unicode.Scalar) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2 + count * 8)
        bytes.append(UInt8(ascii: open))
        for (offset, element) in enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            guard case .integer(let int) = element else {
                preconditionFailure("a list bound as one parameter holds integers, not \(element)")
            }
            bytes.appendDecimal(int)
        }
        bytes.append(UInt8(ascii: close))
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Array where Element == UInt8 {
    /// Appends `value`'s decimal digits (and its sign).
    fileprivate mutating func appendDecimal(_ value: Int64) {
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
