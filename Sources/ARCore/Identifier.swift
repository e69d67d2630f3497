/// Wraps `text` in `quote`, doubling every `quote` inside it.
///
/// Works on Unicode scalars, not `Character`s: a quote followed by a
/// combining mark is one `Character` (and Foundation's search skips it), but
/// SQLite reads bytes and would end the quoted text there.
package func quoteSQL(_ text: String, with quote: Unicode.Scalar) -> String {
    var result = String.UnicodeScalarView()
    result.append(quote)
    for scalar in text.unicodeScalars {
        if scalar == quote { result.append(quote) }
        result.append(scalar)
    }
    result.append(quote)
    return String(result)
}

/// Quotes an SQL identifier (table, column or index name) with double quotes,
/// so that any name is safe in SQL text.
package func quoteIdentifier(_ name: String) -> String { quoteSQL(name, with: "\"") }

extension String {
    /// `"a""b"` for `a"b`: see ``quoteIdentifier(_:)``.
    package var quotedIdentifier: String { quoteIdentifier(self) }
}
