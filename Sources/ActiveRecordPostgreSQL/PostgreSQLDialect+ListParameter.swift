@_spi(Engines) import ARCore

/// A list bound as one parameter on PostgreSQL: an array, sent as its text form
/// (`{1,2,3}`, `{"a","b"}`) of unspecified type, as every text parameter is sent.
extension PostgreSQLDialect {
    /// `expression = ANY(?)` (`<> ALL(?)` when negated): the server reads the parameter as
    /// an array of `expression`'s type (a `bigint` column: `bigint[]`; a `uuid` one: `uuid[]`),
    /// converting each element as it converts the elements of `IN (?, …)`, and searches a
    /// B-tree index on the column for each element. `= ANY` and `<> ALL` give NULL where
    /// `IN` and `NOT IN` do.
    func inList(_ expression: String, negated: Bool) -> String {
        expression + (negated ? " <> ALL(?)" : " = ANY(?)")
    }

    /// The array's text form: integers in decimal, text elements double-quoted with `"` and
    /// `\` escaped by `\` (so that no element reads as `NULL` or loses its spaces).
    func listParameter(_ elements: [DatabaseValue]) -> DatabaseValue {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        var array: [UInt8] = []
        array.reserveCapacity(2 + elements.count * 8)
        array.append(UInt8(ascii: "{"))
        for (offset, element) in elements.enumerated() {
            if offset > 0 { array.append(UInt8(ascii: ",")) }
            switch element {
            case .integer(let int):
                array.appendDecimal(int)
            case .text(let text):
                array.append(quote)
                for byte in text.utf8 {
                    if byte == quote || byte == backslash { array.append(backslash) }
                    array.append(byte)
                }
                array.append(quote)
            case .null, .real, .blob:
                preconditionFailure("a list bound as one parameter holds integers or text, not \(element)")
            }
        }
        array.append(UInt8(ascii: "}"))
        return .text(String(decoding: array, as: UTF8.self))
    }
}
