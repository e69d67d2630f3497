/// The regular expression of a `format` rule, matched as NSRegularExpression (ICU) matched it
/// before the library left Foundation for FoundationEssentials, as far as Swift `Regex` can: on
/// Unicode scalars, not on characters, and passing only when the first match (leftmost, the first
/// alternative that matches) covers the whole string. `\b` keeps Swift's default (Unicode) word
/// boundaries: its `.simple` kind, nearer ICU's for letters, counts no digit as a word character
/// (`\b3\b` would not match `3`), which would break more patterns. What differs from ICU is listed on ``ValidationRules/format(_:_:message:)``.
///
/// Swift `Regex` backtracks without ICU's safeguards, and far more slowly: `^(a+)+$` on 22 `a`s
/// and a `!` takes minutes (ICU: a tenth of a second). So a pattern is refused when it is made
/// if it repeats without bound a group that itself holds an unbounded quantifier (the shapes
/// that backtrack exponentially), and a text longer than ``maximumLength`` is not matched.
struct FormatPattern: @unchecked Sendable {  // a Regex is immutable but for its compiled program, made once (atomically) on first use
    private let regex: Regex<AnyRegexOutput>

    /// The longest text (in Unicode scalars) a pattern is matched against: a longer one fails
    /// the rule. It bounds the time a pattern whose backtracking is polynomial can take.
    static let maximumLength = 10_000

    /// Why a pattern is refused: a sentence that says what is wrong and what to write instead.
    struct Refusal: Error {
        let reason: String
    }

    /// - Throws: ``Refusal`` when `pattern` is not a regular expression, uses what Swift `Regex`
    ///   does not support (lookbehind), or has a shape that backtracks exponentially.
    init(_ pattern: String) throws(Refusal) {
        let shape = Shape(pattern)
        do {
            regex = try Regex(pattern).matchingSemantics(.unicodeScalar)
        } catch {
            if let lookbehind = shape.lookbehind {
                throw Refusal(
                    reason: "lookbehind (\(lookbehind)) is not supported by Swift Regex, which the format rule uses; "
                        + "rewrite the pattern without it (the rule matches the whole string: test what precedes with "
                        + "the pattern itself, or use a custom validator)")
            }
            throw Refusal(reason: "it is not a valid regular expression (\(error))")
        }
        if let group = shape.nestedUnboundedGroup {
            throw Refusal(
                reason: "the group \(group) repeats without bound something that itself repeats without bound, which "
                    + "can take minutes to fail on a text of a few dozen characters; make the inner repeat possessive "
                    + "(-[0-9]++ for -[0-9]+) or atomic ((?>…)) so that it never gives back what it took, or write the "
                    + "pattern so that each character is matched one way only ((a+)+ as a+, (\\w+\\s?)* as [\\w\\s]*)")
        }
    }

    /// Whether the first match of the pattern in `text` is all of `text`.
    /// - Returns: `nil` when `text` is longer than ``maximumLength`` (not matched).
    func matchesWhole(_ text: String) -> Bool? {
        guard text.unicodeScalars.count <= Self.maximumLength else { return nil }
        guard let match = try? regex.firstMatch(in: text) else { return false }
        return match.range == text.startIndex..<text.endIndex
    }
}

/// What a syntactic reading of a pattern finds: a lookbehind, and the first group repeated
/// without bound (`*`, `+`, `{n,}`) whose content holds an unbounded quantifier that may give
/// back what it took (`(a+)+`, `(\w+\s?)*`, `(?:x+y?){2,}`, `((a)*b)*`, `(-[0-9]+)*`); a
/// possessive quantifier (`a++`) or an atomic group (`(?>…)`) never gives back, so
/// `(-[0-9]++)*` and `((?>a+)b)+` pass. It reads escapes (`\+`, `\Q…\E`, `\p{…}`) and
/// character classes (`[+*]`, nested `[a[b]]`) as single atoms, and comments `(?#…)` as
/// nothing. It does not look for other exponential shapes (overlapping alternatives such as
/// `(a|a)*`): the length limit bounds those.
private struct Shape {
    private(set) var lookbehind: String?
    private(set) var nestedUnboundedGroup: String?

    /// A group being read: where it starts, and whether it holds an unbounded quantifier.
    private struct Group {
        let start: Int
        /// An atomic group `(?>…)`: what it holds never gives back.
        var isAtomic = false
        var holdsUnbounded = false
    }

    init(_ pattern: String) {
        let scalars = Array(pattern.unicodeScalars)
        var stack = [Group(start: 0)]  // the whole pattern at the bottom
        /// The last atom read, if a quantifier may follow it: a closed group (with what it held) or another atom.
        var atom: (group: Group?, end: Int)?
        var index = 0
        func text(_ range: Range<Int>) -> String {
            var string = String.UnicodeScalarView()
            string.append(contentsOf: scalars[range])
            return String(string)
        }
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar {
            case "\\":
                index = Self.endOfEscape(scalars, at: index)
                atom = (nil, index)
                continue
            case "[":
                index = Self.endOfClass(scalars, at: index)
                atom = (nil, index)
                continue
            case "(":
                if scalars[index...].starts(with: "(?#".unicodeScalars) {
                    index = scalars[index...].firstIndex(of: ")").map { $0 + 1 } ?? scalars.count
                    continue  // a comment: the atom before it stays quantifiable, as in ICU
                }
                for opening in ["(?<=", "(?<!"] where lookbehind == nil && scalars[index...].starts(with: opening.unicodeScalars) {
                    lookbehind = opening + "…)"
                }
                stack.append(Group(start: index, isAtomic: scalars[index...].starts(with: "(?>".unicodeScalars)))
                atom = nil
                index += 1
                continue
            case ")":
                index += 1
                guard stack.count > 1 else { atom = nil; continue }  // unbalanced: Regex reports it
                var group = stack.removeLast()
                if group.isAtomic { group.holdsUnbounded = false }
                if group.holdsUnbounded { stack[stack.count - 1].holdsUnbounded = true }
                atom = (group, index)
                continue
            case "*", "+", "?", "{":
                guard let quantified = atom, let (unbounded, end) = Self.quantifier(scalars, at: index) else {
                    atom = (nil, index + 1)  // a literal (`{` not starting a quantifier), or a syntax error
                    index += 1
                    continue
                }
                // A lazy or possessive mark (`+?`, `++`) belongs to the quantifier.
                let possessive = end < scalars.count && scalars[end] == "+"
                if unbounded {
                    if let group = quantified.group, group.holdsUnbounded, nestedUnboundedGroup == nil {
                        nestedUnboundedGroup = text(group.start..<end)
                    }
                    if !possessive { stack[stack.count - 1].holdsUnbounded = true }
                }
                index = end < scalars.count && (scalars[end] == "?" || possessive) ? end + 1 : end
                atom = nil
                continue
            default:
                atom = (nil, index + 1)
                index += 1
            }
        }
    }

    /// The quantifier at `index`: whether it is unbounded, and where it ends; `nil` when the
    /// `{` there does not start a quantifier.
    private static func quantifier(_ scalars: [Unicode.Scalar], at index: Int) -> (unbounded: Bool, end: Int)? {
        switch scalars[index] {
        case "*", "+": return (true, index + 1)
        case "?": return (false, index + 1)
        default:  // `{n}`, `{n,}`, `{n,m}`, `{,m}`
            guard let close = scalars[index...].firstIndex(of: "}") else { return nil }
            let body = scalars[(index + 1)..<close]
            guard !body.isEmpty, body.allSatisfy({ $0 == "," || $0.properties.numericType == .decimal }),
                body.filter({ $0 == "," }).count <= 1, body != [","]
            else { return nil }
            return (body.last == ",", close + 1)
        }
    }

    /// Where the escape at `index` (a backslash) ends: past `\Q…\E`, `\p{…}`, `\x{…}`, `\k<…>`
    /// and the like, else past the one escaped character.
    private static func endOfEscape(_ scalars: [Unicode.Scalar], at index: Int) -> Int {
        let next = index + 1
        guard next < scalars.count else { return scalars.count }
        if scalars[next] == "Q" {
            var end = next + 1
            while end < scalars.count, !(scalars[end] == "\\" && end + 1 < scalars.count && scalars[end + 1] == "E") { end += 1 }
            return min(end + 2, scalars.count)
        }
        let after = next + 1
        guard after < scalars.count, ["{", "<"].contains(scalars[after]), "pPxuNkgo".unicodeScalars.contains(scalars[next]) else {
            return after
        }
        let closing: Unicode.Scalar = scalars[after] == "{" ? "}" : ">"
        return scalars[after...].firstIndex(of: closing).map { $0 + 1 } ?? scalars.count
    }

    /// Where the character class at `index` (a `[`) ends: past its `]`, reading escapes, a
    /// `]` first in the class as a literal, and nested classes.
    private static func endOfClass(_ scalars: [Unicode.Scalar], at index: Int) -> Int {
        var depth = 0
        var position = index
        while position < scalars.count {
            switch scalars[position] {
            case "\\":
                position = endOfEscape(scalars, at: position)
                continue
            case "[":
                depth += 1
                position += 1
                if position < scalars.count, scalars[position] == "^" { position += 1 }
                if position < scalars.count, scalars[position] == "]" { position += 1 }  // a literal `]`
                continue
            case "]":
                depth -= 1
                position += 1
                if depth == 0 { return position }
                continue
            default:
                position += 1
            }
        }
        return scalars.count
    }
}
