import Foundation

/// Quotes an SQL identifier (table, column or index name) with double quotes,
/// doubling any double quote inside it, so that any name is safe in SQL text.
package func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

extension String {
    /// `"a\"b"` for `a"b`: see ``quoteIdentifier(_:)``.
    package var quotedIdentifier: String { quoteIdentifier(self) }
}
