#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The few text operations the library took from Foundation beyond FoundationEssentials
// (`trimmingCharacters(in: .whitespaces)`, `String(format:)`, `localizedDescription`), so that
// the library links FoundationEssentials only, not Foundation, FoundationInternationalization
// and ICU's data (51 MiB beside the program; see scripts/runtime-size.sh). Each gives the same
// text as before, except a system error's, now in the system's words (`systemErrorDescription`).

extension StringProtocol {
    /// The text without the white space at either end, as `trimmingCharacters(in: .whitespaces)`
    /// trims it: the Unicode space separators (general category Zs) and the tab, not line breaks.
    package var trimmingWhitespace: String {
        let scalars = String(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !isHorizontalSpace($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isHorizontalSpace($0) })!
        return String(scalars[first...last])
    }
}

/// Whether `scalar` is in Foundation's `CharacterSet.whitespaces`.
private func isHorizontalSpace(_ scalar: Unicode.Scalar) -> Bool {
    scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator
}

extension Sequence<UInt8> {
    /// The bytes in hexadecimal, two digits each, as `String(format: "%02x")` (or `"%02X"`
    /// with `uppercase`) spells them: `[0x0A, 0xFF]` → `"0aff"`.
    package func hexDigits(uppercase: Bool = false) -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Double {
    /// The number with `decimals` digits after the point, rounded as `String(format: "%.2f")`
    /// rounds it (the C library's `printf`, in the C locale: a point, no grouping):
    /// `2.0/3` with 2 → `"0.67"`, `-1.5` with 0 → `"-2"`.
    package func fixedPoint(decimals: Int) -> String {
        precondition((0...40).contains(decimals), "fixedPoint(decimals:) takes 0 to 40 decimals")
        return withVaList([Int32(decimals), self]) { arguments in
            let count = Int(vsnprintf(nil, 0, "%.*f", arguments))
            return String(unsafeUninitializedCapacity: count + 1) { buffer in
                withVaList([Int32(decimals), self]) { again in
                    buffer.withMemoryRebound(to: CChar.self) { Int(vsnprintf($0.baseAddress, count + 1, "%.*f", again)) }
                }
            }
        }
    }
}

/// What went wrong in a system call Foundation made (creating a directory, moving a file),
/// for an error message: the system's words for the error (`No such file or directory`,
/// `Permission denied`) where the error carries its code, even deep down (a move across file
/// systems fails with a `CocoaError` whose underlying error is the failed copy's `CocoaError`,
/// whose underlying error is the `POSIXError`); else a short name of the `CocoaError`'s code
/// (`fileWriteNoPermission (CocoaError 513)`), never a dump of the error's fields.
package func systemErrorDescription(_ error: any Error) -> String {
    var current: any Error = error
    for _ in 0..<16 {  // bounded: an error that is its own underlying error cannot loop
        if let posix = current as? POSIXError { return systemErrorDescription(code: posix.code.rawValue) }
        guard let cocoa = current as? CocoaError, let underlying = cocoa.underlying else { break }
        current = underlying
    }
    if let cocoa = error as? CocoaError { return cocoaCodeName(cocoa.code) }
    if let error = error as? LocalizedError, let description = error.errorDescription { return description }
    return String(describing: error)
}

/// The C library's text for the `errno` value `code` (`strerror_r`: `strerror` may share its
/// buffer between threads). Swift's Glibc imports the POSIX form, which returns 0 and fills the
/// buffer.
package func systemErrorDescription(code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard strerror_r(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The name of a `CocoaError` code, as Swift spells it, with its number; `CocoaError N` for a
/// code not listed.
private func cocoaCodeName(_ code: CocoaError.Code) -> String {
    let names: [CocoaError.Code: String] = [
        .fileNoSuchFile: "fileNoSuchFile", .fileLocking: "fileLocking", .fileReadUnknown: "fileReadUnknown",
        .fileReadNoPermission: "fileReadNoPermission", .fileReadInvalidFileName: "fileReadInvalidFileName",
        .fileReadCorruptFile: "fileReadCorruptFile", .fileReadNoSuchFile: "fileReadNoSuchFile",
        .fileReadTooLarge: "fileReadTooLarge", .fileWriteUnknown: "fileWriteUnknown",
        .fileWriteNoPermission: "fileWriteNoPermission", .fileWriteInvalidFileName: "fileWriteInvalidFileName",
        .fileWriteFileExists: "fileWriteFileExists", .fileWriteOutOfSpace: "fileWriteOutOfSpace",
        .fileWriteVolumeReadOnly: "fileWriteVolumeReadOnly", .featureUnsupported: "featureUnsupported",
    ]
    guard let name = names[code] else { return "CocoaError \(code.rawValue)" }
    return "\(name) (CocoaError \(code.rawValue))"
}
