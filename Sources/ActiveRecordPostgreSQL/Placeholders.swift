@_spi(Engines) import ARCore
/// The library writes `?` placeholders (SQLite's); PostgreSQL numbers them (`$1`, `$2`).
/// `rewritingPlaceholders(sql)` numbers every `?` that is a placeholder: not inside a string
/// (`'…'`, `E'…'` with backslash escapes, `$tag$…$tag$`), a quoted name (`"…"`) or a comment
/// (`-- …`, `/* … */`, which nest).
///
/// ```swift
/// rewritingPlaceholders(#"SELECT "?" FROM t WHERE a = ? AND b = '?'"#) { "$\($0)" }
/// // SELECT "?" FROM t WHERE a = $1 AND b = '?'
/// ```
/// - Parameter replacement: the text for placeholder `n` (1-based).
/// - Returns: the SQL with each placeholder replaced, how many there were, and whether a
///   second statement follows a `;`.
package func rewritingPlaceholders(
    _ sql: String, _ replacement: (Int) -> String
) -> (sql: String, count: Int, hasMoreStatements: Bool) {
    let bytes = Array(sql.utf8)
    guard bytes.contains(UInt8(ascii: "?")) || bytes.contains(UInt8(ascii: ";")) else { return (sql, 0, false) }
    var output: [UInt8] = []
    output.reserveCapacity(bytes.count + 16)
    var count = 0
    var index = 0
    var afterSemicolon = false
    var hasMoreStatements = false
    func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_") || byte >= 0x80
    }
    /// Copies from `index` through the end of a run closed by `closing` (a doubled closing
    /// byte stays inside; with `backslashes`, a backslash escapes the next byte).
    func copyQuoted(closing: UInt8, backslashes: Bool) {
        output.append(bytes[index])
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            output.append(byte)
            index += 1
            if backslashes, byte == UInt8(ascii: "\\"), index < bytes.count {
                output.append(bytes[index])
                index += 1
            } else if byte == closing {
                guard index < bytes.count, bytes[index] == closing else { return }
                output.append(bytes[index])
                index += 1
            }
        }
    }
    while index < bytes.count {
        let byte = bytes[index]
        let next: UInt8? = index + 1 < bytes.count ? bytes[index + 1] : nil
        let previous: UInt8? = index > 0 ? bytes[index - 1] : nil
        let startsComment = (byte == UInt8(ascii: "-") && next == UInt8(ascii: "-")) || (byte == UInt8(ascii: "/") && next == UInt8(ascii: "*"))
        if afterSemicolon, !startsComment, ![UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: ";")].contains(byte) {
            hasMoreStatements = true
        }
        if byte == UInt8(ascii: ";") { afterSemicolon = true }
        switch byte {
        case UInt8(ascii: "?"):
            count += 1
            output.append(contentsOf: replacement(count).utf8)
            index += 1
        case UInt8(ascii: "'"):
            // E'…' (or e'…'): backslash escapes, when the E is a word of its own.
            let escaped = (previous == UInt8(ascii: "E") || previous == UInt8(ascii: "e"))
                && (index < 2 || !isWordByte(bytes[index - 2]))
            copyQuoted(closing: UInt8(ascii: "'"), backslashes: escaped)
        case UInt8(ascii: "\""):
            copyQuoted(closing: UInt8(ascii: "\""), backslashes: false)
        case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
            while index < bytes.count, bytes[index] != UInt8(ascii: "\n") {
                output.append(bytes[index])
                index += 1
            }
        case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
            var depth = 0
            repeat {
                if bytes[index] == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "*") {
                    depth += 1
                    output.append(contentsOf: [bytes[index], bytes[index + 1]])
                    index += 2
                } else if bytes[index] == UInt8(ascii: "*"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "/") {
                    depth -= 1
                    output.append(contentsOf: [bytes[index], bytes[index + 1]])
                    index += 2
                } else {
                    output.append(bytes[index])
                    index += 1
                }
            } while depth > 0 && index < bytes.count
        case UInt8(ascii: "$") where !(previous.map(isWordByte) ?? false):
            // $tag$…$tag$ (the tag may be empty; `$1` is a parameter, not a tag).
            var end = index + 1
            while end < bytes.count, isWordByte(bytes[end]), bytes[end] != UInt8(ascii: "$") { end += 1 }
            let tagIsValid = end < bytes.count && bytes[end] == UInt8(ascii: "$")
                && !(index + 1 < end && bytes[index + 1] >= UInt8(ascii: "0") && bytes[index + 1] <= UInt8(ascii: "9"))
            guard tagIsValid else {
                output.append(byte)
                index += 1
                continue
            }
            let tag = Array(bytes[index...end])
            output.append(contentsOf: tag)
            index = end + 1
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "$"), index + tag.count <= bytes.count, Array(bytes[index..<(index + tag.count)]) == tag {
                    output.append(contentsOf: tag)
                    index += tag.count
                    break
                }
                output.append(bytes[index])
                index += 1
            }
        default:
            output.append(byte)
            index += 1
        }
    }
    return (String(decoding: output, as: UTF8.self), count, hasMoreStatements)
}
