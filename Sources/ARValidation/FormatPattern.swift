/// The regular expression of a `format` rule, matched as NSRegularExpression (ICU) matched it
/// before the library left Foundation for FoundationEssentials: on Unicode scalars, not on
/// characters, and passing only when the first match (leftmost, the first alternative that
/// matches) covers the whole string.
struct FormatPattern: @unchecked Sendable {  // a Regex is immutable but for its compiled program, made once (atomically) on first use
    private let regex: Regex<AnyRegexOutput>

    /// - Throws: when `pattern` is not a regular expression.
    init(_ pattern: String) throws {
        regex = try Regex(pattern).matchingSemantics(.unicodeScalar)
    }

    /// Whether the first match of the pattern in `text` is all of `text`.
    func matchesWhole(_ text: String) -> Bool {
        guard let match = try? regex.firstMatch(in: text) else { return false }
        return match.range == text.startIndex..<text.endIndex
    }
}
