@_spi(Engines) import ARCore

/// A list bound as one parameter on SQLite: a JSON array, whose elements `json_each` returns.
extension SQLiteDialect {
    /// `expression IN (SELECT +value FROM json_each(?))`. The unary `+` takes the affinity off
    /// `json_each`'s value column, so that `expression`'s own applies to the elements as it
    /// does to the elements of `IN (?, …)` (a TEXT column matches the integer 5 as `'5'`, an
    /// INTEGER column the text `'5'` as 5). SQLite still searches an index on the column, one
    /// element at a time and in order, so that `ORDER BY` the column needs no sort.
    package func inList(_ expression: String, negated: Bool) -> String {
        expression + (negated ? " NOT IN" : " IN") + " (SELECT +value FROM json_each(?))"
    }

    /// A JSON array: integers as JSON numbers, which `json_each` returns as exact INTEGERs over
    /// all of Int64's range (no trip through a double), text as JSON strings.
    package func listParameter(_ elements: [DatabaseValue]) -> DatabaseValue {
        var json: [UInt8] = []
        json.reserveCapacity(2 + elements.count * 8)
        json.append(UInt8(ascii: "["))
        for (offset, element) in elements.enumerated() {
            if offset > 0 { json.append(UInt8(ascii: ",")) }
            switch element {
            case .integer(let int): json.appendDecimal(int)
            case .text(let text): Self.appendJSONString(text, to: &json)
            case .null, .real, .blob: preconditionFailure("a list bound as one parameter holds integers or text, not \(element)")
            }
        }
        json.append(UInt8(ascii: "]"))
        return .text(String(decoding: json, as: UTF8.self))
    }

    /// `text` as a JSON string: `"` and `\` escaped, control characters as `\u00XX`, the rest as
    /// it is (JSON text is UTF-8).
    private static func appendJSONString(_ text: String, to json: inout [UInt8]) {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        let hex = Array("0123456789abcdef".utf8)
        json.append(quote)
        for byte in text.utf8 {
            switch byte {
            case quote, backslash:
                json.append(backslash)
                json.append(byte)
            case 0..<0x20:
                json.append(contentsOf: [backslash, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                json.append(hex[Int(byte >> 4)])
                json.append(hex[Int(byte & 0xF)])
            default:
                json.append(byte)
            }
        }
        json.append(quote)
    }
}
