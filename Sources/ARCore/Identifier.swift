/// Wraps `text` in `quote` (`"` or `'`), doubling every `quote` inside it.
///
/// Works on UTF-8 bytes, as SQLite reads them, not on `Character`s: a quote
/// followed by a combining mark is one `Character` (and Foundation's search
/// skips it), yet SQLite would end the quoted text at its byte. An ASCII byte
/// never occurs inside a multi-byte UTF-8 sequence, so doubling bytes is exact.
package func quoteSQL(_ text: String, with quote: Unicode.Scalar) -> String {
    let quoteByte = UInt8(ascii: quote)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(text.utf8.count + 2)
    bytes.append(quoteByte)
    for byte in text.utf8 {
        if byte == quoteByte { bytes.append(quoteByte) }
        bytes.append(byte)
    }
    bytes.append(quoteByte)
    return String(decoding: bytes, as: UTF8.self)
}

/// Quotes an SQL identifier (table, column or index name) with double quotes,
/// so that any name is safe in SQL text.
package func quoteIdentifier(_ name: String) -> String { quoteSQL(name, with: "\"") }

extension String {
    /// `"a""b"` for `a"b`: see ``quoteIdentifier(_:)``.
    package var quotedIdentifier: String { quoteIdentifier(self) }
}

/// `name` folded by the library's portable naming rule: ASCII letters without case, every
/// other character exactly. A model must open on every engine, and the most lenient of them
/// (SQLite) takes names that differ only in ASCII case for one name: so the library refuses
/// two columns, or two tables, that only this folding tells apart, on every engine. (Swift's
/// `lowercased()` folds far more: `É` to `é`, the Kelvin sign to `k`, so two names an engine
/// keeps apart would look like one.)
package func foldedName(_ name: String) -> String {
    guard name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return name }
    return String(decoding: name.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }, as: UTF8.self)
}

/// Whether two identifiers are one name by the portable naming rule (see ``foldedName(_:)``).
package func isSameName(_ lhs: String, _ rhs: String) -> Bool { foldedName(lhs) == foldedName(rhs) }

/// `text` as a JSON string literal: quoted, with `"`, `\` and control characters escaped.
package func jsonString(_ text: String) -> String {
    let quote = Unicode.Scalar(UInt8(0x22))
    var json = String.UnicodeScalarView()
    json.append(quote)
    for scalar in text.unicodeScalars {
        switch scalar {
        case quote, "\\":
            json.append("\\")
            json.append(scalar)
        case "\n": json.append(contentsOf: "\\n".unicodeScalars)
        case "\r": json.append(contentsOf: "\\r".unicodeScalars)
        case "\t": json.append(contentsOf: "\\t".unicodeScalars)
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            json.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
        default: json.append(scalar)
        }
    }
    json.append(quote)
    return String(json)
}
