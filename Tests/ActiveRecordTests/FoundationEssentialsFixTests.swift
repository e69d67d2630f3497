@_spi(Engines) import ARCore
@testable import ARValidation
import ActiveRecord
import Foundation
import Testing

/// A model whose `format` rule has an exponentially backtracking pattern.
final class NestedRepeatCode: Model, Validating {
    @Column var code: String = ""
    static let validations = Validations(for: NestedRepeatCode.self) { $0.format(\.code, "^(a+)+$") }
}

/// A model whose `format` rule uses a lookbehind.
final class LookbehindCode: Model, Validating {
    @Column var code: String = ""
    static let validations = Validations(for: LookbehindCode.self) { $0.format(\.code, "x(?<=x)y") }
}

/// A model with a benign `format` rule.
final class DigitsCode: Model, Validating {
    @Column var code: String = ""
    static let validations = Validations(for: DigitsCode.self) { $0.format(\.code, "[0-9]+(-[0-9]++)*", message: "digits") }
}

/// The review of issue 37's FoundationEssentials replacements: what Swift `Regex` does where
/// NSRegularExpression (ICU) did otherwise, system errors nested in system errors, the names of
/// the library's threads.
@Suite("FoundationEssentials replacements, mended")
struct FoundationEssentialsFixTests {
    // MARK: Point 1: patterns that backtrack exponentially are refused when made

    /// A group repeated without bound that holds an unbounded quantifier and, in one of its
    /// alternatives, nothing else a match must take. (Never matched here: on 22 `a`s and a `!`,
    /// `^(a+)+$` took Swift Regex 210 s.)
    @Test(arguments: [
        "^(a+)+$", "(\\w+\\s?)*", "(a*)*", "(?:x+y?){2,}", "(a{2,})+", "(a+?)*", "(\\d+)*", "(?:\\s*\\w+)+", "(a+|b)+",
        "(b|a+)*", "(^a+$)+", "((?=x)a+)+", "(\\ba+\\b)+", "(?<w>[a-z]+-?)+", "(?i)(a+)+", "(?P<n>a+)+", "(?'n'a+)*", "(?i:a+)+",
    ])
    func aNestedUnboundedRepeatIsRefused(_ pattern: String) throws {
        let refusal = try #require(throws: FormatPattern.Refusal.self) { try FormatPattern(pattern) }
        #expect(refusal.reason.contains("repeats without bound something that itself repeats without bound"), "\(refusal.reason)")
    }

    /// Escapes, classes, bounded repeats and groups repeated a bounded number of times are not
    /// that shape.
    @Test(arguments: [
        "(\\+)+", "([+]x)+", "([*+]+)", "(a+)", "(a+)?", "(a+){3}", "(a{1,3})+", "(ab)+", "[(a+)]+", "\\(a+\\)+", "(a\\Q+\\E)+",
        "(\\p{L})+", "([\\]+])*", "(a[[:alpha:]])+", "(b(?#+))+", "(-[0-9]++)*", "((?>a+)b)+", "(a*+)*", "^[^@ ]+@[^@ ]+\\.[a-z]+$", "(a|b)*c+",
        // An atom each repetition must take besides the repeat: it starts or ends each one.
        "((a)*b)*", "x(?<n>[a-z]+\\d)+", "((?:ab)+c)+", "[0-9]+(-[0-9]+)*", "\\w+(\\.\\w+)*", "(a+b|c)+", "([a-z]+[0-9]{1,3})*",
        "(?:-\\d+)*", "(?<n>-\\d+)*", "(?i:x\\w+)+", "(?>a+)+",
    ])
    func otherShapesAreAccepted(_ pattern: String) throws {
        _ = try FormatPattern(pattern)
    }

    /// The refusal reaches the user as `.invalidModel` on validation, naming the rule and the
    /// pattern and saying what to write instead; nothing is matched, nothing saved.
    @Test func aModelWithARefusedPatternFailsValidationNamingTheRule() throws {
        try withDatabase(.sqlite) { _ in
            let record = try NestedRepeatCode(["code": String(repeating: "a", count: 22) + "!"])
            let error = expectError(.invalidModel) { _ = try record.validate() }
            let message = try #require(error?.message)
            #expect(message.hasPrefix("the format rule of NestedRepeatCode.code refuses its pattern ^(a+)+$: the group (a+)+ "))
            #expect(message.contains("make the inner repeat possessive (a++ for a+)"))
            #expect(message.contains("(a+)+ as a+"))
            expectError(.invalidModel) { try record.save() }
            #expect(record.isNewRecord)
        }
    }

    /// A benign pattern still works; a text over the length limit fails the rule with its own
    /// message, without being matched.
    @Test func aBenignPatternStillMatchesAndALongTextFails() throws {
        try withDatabase(.sqlite) { _ in
            #expect(try DigitsCode(["code": "12-345"]).validate())
            let letters = try DigitsCode(["code": "12-x"])
            #expect(try !letters.validate())
            #expect(letters.errors.map { "\($0.key): \($0.message)" } == ["invalid_format: digits"])
            let atLimit = try DigitsCode(["code": String(repeating: "7", count: FormatPattern.maximumLength)])
            #expect(try atLimit.validate())
            let long = try DigitsCode(["code": String(repeating: "7", count: FormatPattern.maximumLength + 1)])
            #expect(try !long.validate())
            #expect(long.errors.map { "\($0.key): \($0.message)" } == [
                "invalid_format: is too long to check against its format (more than 10000 characters)"
            ])
        }
        #expect(FormatPattern.maximumLength == 10_000)
    }

    // MARK: Point 2: where Swift Regex differs from ICU, pinned

    /// Whether ICU's first match of `pattern` covers all of `text` (`nil`: ICU refuses it).
    private func icuMatchesWhole(_ pattern: String, _ text: String) -> Bool? {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return nil }
        let range = NSRange(text.startIndex..., in: text)
        return expression.firstMatch(in: text, range: range)?.range == range
    }

    /// Lookbehind worked in ICU; Swift Regex does not support it: the refusal says so.
    @Test(arguments: ["(?<=a)b", "a(?<!b)c"]) func lookbehindIsRefusedByName(_ pattern: String) throws {
        #expect(icuMatchesWhole(pattern, "ac") != nil)
        let refusal = try #require(throws: FormatPattern.Refusal.self) { try FormatPattern(pattern) }
        #expect(refusal.reason.hasPrefix("lookbehind ((?<"), "\(refusal.reason)")
        #expect(refusal.reason.contains("is not supported by Swift Regex"))
    }

    @Test func aModelWithLookbehindSaysSoOnSave() throws {
        try withDatabase(.sqlite) { _ in
            let error = expectError(.invalidModel) { try LookbehindCode(["code": "xy"]).save() }
            #expect(error?.message.hasPrefix(
                "the format rule of LookbehindCode.code refuses its pattern x(?<=x)y: lookbehind ((?<=…)) is not supported") == true)
        }
    }

    /// `\b` is a Unicode default word boundary, where ICU's is between a `\w` and a non-`\w`:
    /// none inside "can't", "a.b", "3.5". The same as ICU at the edges of words and numbers.
    /// (Swift's `.simple` kind would count no digit as a word character: `\b3\b` not matching "3".)
    @Test func wordBoundariesAreUnicodes() throws {
        let same: [(String, String)] = [
            ("\\bfoo\\b", "foo"), ("a\\b.", "a."), ("x\\b", "x"), ("\\w+\\b \\w+", "a b"), ("\\b3\\b", "3"), ("3\\b-\\b5", "3-5"),
            ("\\.\\b5", ".5"), ("a3\\b ", "a3 "),
        ]
        for (pattern, text) in same {
            #expect(icuMatchesWhole(pattern, text) == true)
            #expect(try FormatPattern(pattern).matchesWhole(text) == true, "\(pattern) on \(text)")
        }
        for (pattern, text) in [("\\w+\\b'\\w", "can't"), ("a\\b\\.\\bb", "a.b"), ("3\\b\\.\\b5", "3.5"), ("3\\b,\\b5", "3,5")] {
            #expect(icuMatchesWhole(pattern, text) == true)
            #expect(try FormatPattern(pattern).matchesWhole(text) == false, "\(pattern) on \(text)")
        }
    }

    /// `(?i)` folds one scalar to one: ß does not match SS, as it did in ICU.
    @Test func caseInsensitiveMatchingDoesNotFoldSharpSToSS() throws {
        #expect(icuMatchesWhole("(?i)straße", "STRASSE") == true)
        #expect(try FormatPattern("(?i)straße").matchesWhole("STRASSE") == false)
        #expect(try FormatPattern("(?i)straße").matchesWhole("STRAßE") == true)
    }

    /// ICU refused a stray or unfinished brace; Swift reads them as literal text, and `{,m}`
    /// as `{0,m}`.
    @Test func straysBracesAreLiteralText() throws {
        for (pattern, text) in [("{", "{"), ("a{", "a{"), ("}", "}"), ("x{1,2", "x{1,2")] {
            #expect(icuMatchesWhole(pattern, text) == nil)
            #expect(try FormatPattern(pattern).matchesWhole(text) == true, "\(pattern)")
        }
        #expect(icuMatchesWhole("a{,3}", "aa") == nil)
        #expect(try FormatPattern("a{,3}").matchesWhole("aaa") == true)
        #expect(try FormatPattern("a{,3}").matchesWhole("aaaa") == false)
        #expect(try FormatPattern("a{,3}").matchesWhole("a{,3}") == false)
    }

    /// ICU's `\w` takes combining marks; Swift's does not (so a boundary falls before one).
    @Test func wordCharactersDoNotIncludeCombiningMarks() throws {
        #expect(icuMatchesWhole("\\w+", "e\u{301}") == true)
        #expect(try FormatPattern("\\w+").matchesWhole("e\u{301}") == false)
        #expect(try FormatPattern("\\w+").matchesWhole("e\u{301}x") == false)
    }

    // MARK: Point 3: a system error nested in system errors

    /// A move from /tmp to /proc: the rename fails (EXDEV), the copy fallback fails, and
    /// Foundation wraps the copy's CocoaError (holding the POSIXError) in the move's.
    @Test func aNestedSystemErrorIsToldInTheSystemsWords() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("x.sqlite").path
        #expect(FileManager.default.createFile(atPath: source, contents: Data([1, 2, 3])))
        let error = try #require(throws: (any Error).self) {
            try FileManager.default.moveItem(atPath: source, toPath: "/proc/self/activerecord-test.sqlite")
        }
        let outer = try #require(error as? CocoaError)
        #expect(outer.underlying is CocoaError, "\(error)")
        let description = systemErrorDescription(error)
        #expect(["No such file or directory", "Permission denied", "Operation not permitted"].contains(description), "\(description)")
        #expect(!description.contains("CocoaError("))
    }

    @Test func aSystemErrorWithoutACodeIsNamedShortly() {
        #expect(systemErrorDescription(POSIXError(.EXDEV)) == "Invalid cross-device link")
        #expect(systemErrorDescription(POSIXError(.EACCES)) == "Permission denied")
        let nested = CocoaError(.fileWriteUnknown, userInfo: [NSUnderlyingErrorKey: CocoaError(.fileWriteNoPermission)])
        #expect(systemErrorDescription(nested) == "fileWriteUnknown (CocoaError 512)")
        #expect(systemErrorDescription(CocoaError(CocoaError.Code(rawValue: 4242))) == "CocoaError 4242")
        let deep = CocoaError(.fileWriteUnknown, userInfo: [
            NSUnderlyingErrorKey: CocoaError(.fileReadUnknown, userInfo: [NSUnderlyingErrorKey: POSIXError(.ENOSPC)])
        ])
        #expect(systemErrorDescription(deep) == "No space left on device")
    }

    // MARK: Point 4: the library's threads are named

    /// The names of this process's threads (Linux: `/proc/self/task/*/comm`).
    private func threadNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
        }
    }

    /// While a database is observed, the thread that hears commits made elsewhere carries its
    /// name: `ar.commits` (SQLite polls its file), `ar.listener` (PostgreSQL listens).
    @Test(arguments: TestEngine.all) func theThreadThatHearsOtherCommitsIsNamed(engine: TestEngine) throws {
        let name = engine == .sqlite ? "ar.commits" : "ar.listener"
        try withDatabase(engine, file: true) { database in
            let observation = database.observe(tables: ["Anything"], fetch: { 0 }) { _ in }
            defer { observation.cancel() }
            // The thread names itself as it starts: give it the time to.
            var names = try threadNames()
            for _ in 0..<100 where !names.contains(name) {
                Thread.sleep(forTimeInterval: 0.05)
                names = try threadNames()
            }
            #expect(names.contains(name), "\(names)")
        }
    }

    /// The executor's worker threads are named too: an async read runs on one.
    @Test func theExecutorsWorkersAreNamed() async throws {
        let database = try Database(.inMemory)
        let name = try await database.read { try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
        #expect(name == "ar.worker\n")
    }
}
