/// The regular expression of a `format` rule, matched as NSRegularExpression (ICU) matched it
/// before the library left Foundation for FoundationEssentials, as far as Swift `Regex` can: on
/// Unicode scalars, not on characters, and passing only when the first match (leftmost, the first
/// alternative that matches) covers the whole string. `\b` keeps Swift's default (Unicode) word
/// boundaries: its `.simple` kind, nearer ICU's for letters, counts no digit as a word character
/// (`\b3\b` would not match `3`), which would break more patterns. What differs from ICU is listed on ``ValidationRules/format(_:_:message:)``.
///
/// Swift `Regex` backtracks without ICU's safeguards, and far more slowly: `^(a+)+$` on 22 `a`s
/// and a `!` takes minutes (ICU: a tenth of a second). So a pattern is refused when it is made
/// if it repeats without bound a group made of an unbounded quantifier and nothing else that a
/// match must take (the shapes that backtrack exponentially: `(a+)+`, `(\w+\s?)*`), and a text
/// longer than ``maximumLength`` is not matched.
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
                    + "(a++ for a+) or atomic ((?>…)) so that it never gives back what it took, or write the "
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
/// back what it took, in an alternative with no other atom a match must take once
/// (`(a+)+`, `(\w+\s?)*`, `(?:x+y?){2,}`, `(a+|b)*`): each character of a run can then be
/// taken by either repeat, in exponentially many ways. A group with such an atom besides,
/// `(-[0-9]+)*` or `(\.\w+)*`, starts or ends each repetition at it, and passes; so do a
/// possessive quantifier (`a++`) and an atomic group (`(?>…)`), which never give back. It reads
/// escapes (`\+`, `\Q…\E`, `\p{…}`) and character classes (`[+*]`, nested `[a[b]]`) as single
/// atoms, comments `(?#…)` as nothing, and anchors and lookarounds as taking nothing. It does
/// not look for other exponential shapes (overlapping alternatives such as `(a|a)*`, or
/// `(a\w+)*`, whose `a` the `\w+` may take too): the length limit bounds those.
private struct Shape {
    private(set) var lookbehind: String?
    private(set) var nestedUnboundedGroup: String?

    /// A group being read: where it starts, and whether it holds an unbounded quantifier.
    private struct Group {
        let start: Int
        /// An atomic group `(?>…)`: what it holds never gives back.
        var isAtomic = false
        /// A lookaround (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`): it takes nothing.
        var isLookaround = false
        var holdsUnbounded = false
        /// The atoms a match of the current alternative must take, a bounded number of times
        /// (at least once): `-` and `[0-9]` in `-[0-9]{1,3}`, not `a+`, `b?` or `c*`.
        var required = 0
        /// The fewest such atoms of the alternatives before the current one (`|`).
        var requiredInEarlierAlternatives = Int.max

        /// The fewest required atoms of any alternative.
        var leastRequired: Int { min(required, requiredInEarlierAlternatives) }
    }

    init(_ pattern: String) {
        let scalars = Array(pattern.unicodeScalars)
        var stack = [Group(start: 0)]  // the whole pattern at the bottom
        /// The last atom read, if a quantifier may follow it: a closed group (with what it held) or another
        /// atom; `counted` when it was counted as required in the group it is in (a quantifier may undo that).
        var atom: (group: Group?, end: Int, counted: Bool)?
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
                // An anchor (`\b`, `\A`…) takes nothing; any other escape takes a character.
                let takes = index + 1 >= scalars.count || !"bBAzZG".unicodeScalars.contains(scalars[index + 1])
                index = Self.endOfEscape(scalars, at: index)
                if takes { stack[stack.count - 1].required += 1 }
                atom = (nil, index, takes)
                continue
            case "[":
                index = Self.endOfClass(scalars, at: index)
                stack[stack.count - 1].required += 1
                atom = (nil, index, true)
                continue
            case "|":
                stack[stack.count - 1].requiredInEarlierAlternatives = stack[stack.count - 1].leastRequired
                stack[stack.count - 1].required = 0
                atom = nil
                index += 1
                continue
            case "^", "$":
                atom = (nil, index + 1, false)
                index += 1
                continue
            case "(":
                if scalars[index...].starts(with: "(?#".unicodeScalars) {
                    index = scalars[index...].firstIndex(of: ")").map { $0 + 1 } ?? scalars.count
                    continue  // a comment: the atom before it stays quantifiable, as in ICU
                }
                for opening in ["(?<=", "(?<!"] where lookbehind == nil && scalars[index...].starts(with: opening.unicodeScalars) {
                    lookbehind = opening + "…)"
                }
                let isLookaround = ["(?=", "(?!", "(?<=", "(?<!"].contains { scalars[index...].starts(with: $0.unicodeScalars) }
                stack.append(Group(start: index, isAtomic: scalars[index...].starts(with: "(?>".unicodeScalars), isLookaround: isLookaround))
                atom = nil
                index = Self.startOfGroupBody(scalars, at: index)
                continue
            case ")":
                index += 1
                guard stack.count > 1 else { atom = nil; continue }  // unbalanced: Regex reports it
                var group = stack.removeLast()
                if group.isAtomic { group.holdsUnbounded = false }
                if group.holdsUnbounded { stack[stack.count - 1].holdsUnbounded = true }
                // A group that takes a required atom in each alternative is one for its own group.
                let counted = !group.isLookaround && group.leastRequired > 0
                if counted { stack[stack.count - 1].required += 1 }
                atom = (group, index, counted)
                continue
            case "*", "+", "?", "{":
                guard let quantified = atom, let (unbounded, least, end) = Self.quantifier(scalars, at: index) else {
                    // A literal (`{` not starting a quantifier), or a syntax error.
                    stack[stack.count - 1].required += 1
                    atom = (nil, index + 1, true)
                    index += 1
                    continue
                }
                // Taken any number of times, or maybe not at all: not required.
                if quantified.counted, unbounded || least == 0 { stack[stack.count - 1].required -= 1 }
                // A lazy or possessive mark (`+?`, `++`) belongs to the quantifier.
                let possessive = end < scalars.count && scalars[end] == "+"
                if unbounded {
                    if let group = quantified.group, group.holdsUnbounded, group.leastRequired == 0, nestedUnboundedGroup == nil {
                        nestedUnboundedGroup = text(group.start..<end)
                    }
                    if !possessive { stack[stack.count - 1].holdsUnbounded = true }
                }
                index = end < scalars.count && (scalars[end] == "?" || possessive) ? end + 1 : end
                atom = nil
                continue
            default:
                stack[stack.count - 1].required += 1
                atom = (nil, index + 1, true)
                index += 1
            }
        }
    }

    /// The quantifier at `index`: whether it is unbounded, the fewest times it takes its atom, and
    /// where it ends; `nil` when the `{` there does not start a quantifier.
    private static func quantifier(_ scalars: [Unicode.Scalar], at index: Int) -> (unbounded: Bool, least: Int, end: Int)? {
        switch scalars[index] {
        case "*": return (true, 0, index + 1)
        case "+": return (true, 1, index + 1)
        case "?": return (false, 0, index + 1)
        default:  // `{n}`, `{n,}`, `{n,m}`, `{,m}`
            guard let close = scalars[index...].firstIndex(of: "}") else { return nil }
            let body = scalars[(index + 1)..<close]
            guard !body.isEmpty, body.allSatisfy({ $0 == "," || $0.properties.numericType == .decimal }),
                body.filter({ $0 == "," }).count <= 1, body != [","]
            else { return nil }
            var least = 0
            for digit in body.prefix(while: { $0 != "," }) { least = min(least * 10 + Int(digit.properties.numericValue ?? 0), 1_000_000) }
            return (body.last == ",", least, close + 1)
        }
    }

    /// Where the content of the group opened at `index` (a `(`) starts: past `(`, `(?:`, `(?=`,
    /// `(?!`, `(?>`, `(?|`, `(?<=`, `(?<!`, a name (`(?<name>`, `(?P<name>`, `(?'name'`) or
    /// options (`(?i:`, `(?i-m)`), so that none of these is read as an atom.
    private static func startOfGroupBody(_ scalars: [Unicode.Scalar], at index: Int) -> Int {
        guard index + 2 < scalars.count, scalars[index + 1] == "?" else { return index + 1 }
        let mark = index + 2
        switch scalars[mark] {
        case ":", "=", "!", ">", "|":
            return mark + 1
        case "<" where mark + 1 < scalars.count && (scalars[mark + 1] == "=" || scalars[mark + 1] == "!"):
            return mark + 2
        case "<", "P", "'":
            let closing: Unicode.Scalar = scalars[mark] == "'" ? "'" : ">"
            return scalars[(mark + 1)...].firstIndex(of: closing).map { $0 + 1 } ?? scalars.count
        default:  // options: letters, `-`, `^`, then `:` (a group) or `)` (options for what follows)
            var end = mark
            while end < scalars.count, scalars[end] != ":", scalars[end] != ")" { end += 1 }
            return end < scalars.count && scalars[end] == ":" ? end + 1 : end
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
