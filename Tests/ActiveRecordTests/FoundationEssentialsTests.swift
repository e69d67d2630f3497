@_spi(Engines) import ARCore
@testable import ARSQLite
@testable import ARValidation
import Foundation
import Testing

/// Issue 37, point 1: the library imports FoundationEssentials, not Foundation (whose ICU data
/// is 39 MiB of the 75 MiB runtime). What it took from Foundation beyond FoundationEssentials has
/// replacements that give the same results: checked here against Foundation itself (the tests
/// may import it), on concrete values.
@Suite("FoundationEssentials replacements")
struct FoundationEssentialsTests {
    static let spacedTexts = [
        "  12 ", "\t3.5\t", "\u{00A0}7\u{2003}", "\n5\n", "", "   ", "a b", " \u{3000}x\u{202F} ", "\r\n 1", "é ",
    ]

    @Test(arguments: spacedTexts) func trimmingWhitespaceIsFoundationsTrimmingOfWhitespaces(_ text: String) {
        #expect(text.trimmingWhitespace == text.trimmingCharacters(in: .whitespaces))
        #expect(text[...].trimmingWhitespace == text.trimmingCharacters(in: .whitespaces))
    }

    @Test func trimmingWhitespaceKeepsLineBreaks() {
        #expect(" \t42\u{00A0} ".trimmingWhitespace == "42")
        #expect("\n5\n".trimmingWhitespace == "\n5\n")
        #expect("   ".trimmingWhitespace == "")
    }

    @Test func hexDigitsAreStringFormatsTwoDigitHex() {
        let bytes = (0...255).map(UInt8.init)
        #expect(bytes.hexDigits() == bytes.map { String(format: "%02x", $0) }.joined())
        #expect(bytes.hexDigits(uppercase: true) == bytes.map { String(format: "%02X", $0) }.joined())
        #expect([0x0A, 0xFF, 0x00].hexDigits() == "0aff00")
        #expect(Data([0xDE, 0xAD]).hexDigits(uppercase: true) == "DEAD")
        #expect([UInt8]().hexDigits() == "")
    }

    @Test func fixedPointRoundsAsStringFormat() {
        #expect((2.0 / 3).fixedPoint(decimals: 2) == "0.67")
        #expect((-1.5).fixedPoint(decimals: 0) == "-2")
        #expect(2.675.fixedPoint(decimals: 2) == "2.67")  // 2.67499999… in binary
        #expect(0.125.fixedPoint(decimals: 2) == "0.12")  // a tie: to even
        #expect(1234567.891.fixedPoint(decimals: 1) == "1234567.9")  // no grouping
        #expect(Double.infinity.fixedPoint(decimals: 2) == "inf")
        let values = [0, -0.0, 0.005, 0.015, 2.675, 1e20, -123.456, 1.0 / 3, 9.995, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude]
        for value in values {
            for decimals in [0, 1, 2, 3, 6] {
                #expect(value.fixedPoint(decimals: decimals) == String(format: "%.\(decimals)f", value), "\(value) \(decimals)")
            }
        }
    }

    @Test(arguments: ["a/b/c", "/a", "/", "a/b/", "/a/b//", "", "a//b", "/tmp/x.sqlite", "./x.sqlite", "//a"])
    func parentDirectoryIsNSStringsDeletingLastPathComponent(_ path: String) {
        #expect(parentDirectory(of: path) == (path as NSString).deletingLastPathComponent)
    }

    /// A bare file name has no directory: "" (where Foundation's `deletingLastPathComponent`
    /// crashes, in swift-corelibs-foundation 6.3).
    @Test func aBareFileNameHasNoDirectory() {
        #expect(parentDirectory(of: "x.sqlite") == "")
        #expect(parentDirectory(of: "a/b") == "a")
    }

    /// The `format` rule matches as NSRegularExpression did: the first match covering the whole
    /// string, on Unicode scalars.
    @Test func formatPatternMatchesAsNSRegularExpression() throws {
        let patterns = [
            "^[a-z]+$", "[a-z]+", "a|ab", "\\d{3}-\\d{4}", "(?i)abc", "[^@ ]+@[^@ ]+\\.[a-z]+", "é", ".", "..", "[0-9]*",
            "\\w+", "a+?", "(ab)+", "\\s*x\\s*",
        ]
        let texts = ["ab", "abc", "ABC", "555-1234", "x@y.com", "\u{E9}", "e\u{301}", "ab\n", "", "12a", "  x ", "ababab", "aaa", "日本"]
        for pattern in patterns {
            let format = try FormatPattern(pattern)
            let expression = try NSRegularExpression(pattern: pattern)
            for text in texts where !(pattern == "\\w+" && Array(text.unicodeScalars) == ["e", "\u{301}"]) {
                let range = NSRange(text.startIndex..., in: text)
                let before = expression.firstMatch(in: text, range: range)?.range == range
                #expect(format.matchesWhole(text) == before, "\(pattern) on \(text.debugDescription)")
            }
        }
        // One difference: ICU's \w takes combining marks too, Swift's does not (the others, and
        // the patterns refused, are pinned in FoundationEssentialsFixTests).
        #expect(try FormatPattern("\\w+").matchesWhole("e\u{301}") == false)
        #expect(try FormatPattern("\\w+").matchesWhole("\u{E9}") == true)
        #expect(throws: (any Error).self) { try FormatPattern("[a-") }
    }

    /// A failure of the system (here: a directory that cannot be made) is told in the system's
    /// words, no longer as Foundation's localized text.
    @Test func aDirectoryThatCannotBeMadeSaysWhy() throws {
        let error = try #require(throws: ActiveRecordError.self) {
            try Database.createDirectory("/proc/self/activerecord-test/x")
        }
        #expect(error.code == .cannotOpen)
        #expect(error.message.hasPrefix("cannot create the directory /proc/self/activerecord-test/x: "))
        #expect(error.message.contains("No such file or directory") || error.message.contains("Permission denied")
            || error.message.contains("Operation not permitted"), "\(error.message)")
        #expect(systemErrorDescription(POSIXError(.EACCES)) == "Permission denied")
        let missing = CocoaError(.fileNoSuchFile, userInfo: [NSUnderlyingErrorKey: POSIXError(.ENOENT)])
        #expect(systemErrorDescription(missing) == "No such file or directory")
    }

    /// The Swift examples link FoundationEssentials, not Foundation and its ICU data: a program
    /// that uses the library alone does not carry them.
    @Test(arguments: [
        "ActiveRecordQuickstart", "ActiveRecordPostgreSQLExample", "ActiveRecordExampleLibrary", "ActiveRecordExampleValidations",
        "ActiveRecordExampleMigrations", "ActiveRecordExampleThreads", "ActiveRecordStressChild",
    ])
    func theExamplesDoNotLoadFoundation(_ product: String) throws {
        let binary = QuickstartTests.productsDirectory.appendingPathComponent(product).path
        try #require(FileManager.default.fileExists(atPath: binary), "build the package first")
        let ldd = Process()
        ldd.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
        ldd.arguments = [binary]
        let pipe = Pipe()
        ldd.standardOutput = pipe
        try ldd.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        ldd.waitUntilExit()
        #expect(output.contains("libFoundationEssentials.so"), "\(output)")
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(!output.contains(library), "\(product) loads \(library):\n\(output)")
        }
    }
}
