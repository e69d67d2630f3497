import ARLibPQ
@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// PostgreSQL's wire formats, text and binary, as a statement's row reads them.

/// A `numeric`'s text from its binary format (PostgreSQL's `numeric_send`): the digits in
/// base 10,000 with a weight, a sign and a display scale; `isInteger` when it has no
/// fraction. `nil` for a malformed value.
func numericText(_ value: UnsafeRawBufferPointer) -> (text: String, isInteger: Bool)? {
    guard value.count >= 8 else { return nil }
    func int16(_ offset: Int) -> Int { Int(Int16(bigEndian: value.loadUnaligned(fromByteOffset: offset, as: Int16.self))) }
    let count = int16(0), weight = int16(2), scale = int16(6)
    let sign = UInt16(bitPattern: Int16(truncatingIfNeeded: int16(4)))
    switch sign {
    case 0xC000: return ("NaN", false)
    case 0xD000: return ("Infinity", false)
    case 0xF000: return ("-Infinity", false)
    default: break
    }
    guard count >= 0, value.count >= 8 + 2 * count else { return nil }
    func digit(_ position: Int) -> Int { position >= 0 && position < count ? int16(8 + 2 * position) : 0 }
    var text = sign == 0x4000 ? "-" : ""
    if weight < 0 {
        text += "0"
    } else {
        for position in 0...weight {
            let group = String(digit(position))
            text += position == 0 ? group : String(repeating: "0", count: 4 - group.count) + group
        }
    }
    if scale > 0 {
        var fraction = ""
        var position = weight + 1
        while fraction.count < scale {
            let group = String(digit(position))
            fraction += String(repeating: "0", count: 4 - group.count) + group
            position += 1
        }
        text += "." + fraction.prefix(scale)
    }
    return (text, scale == 0)
}

/// A `uuid`'s 16 bytes as PostgreSQL writes it: lower-case hex, 8-4-4-4-12.
func uuidText(_ bytes: UnsafeRawBufferPointer) -> String {
    let hex = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(36)
    for (offset, byte) in bytes.enumerated() {
        if offset == 4 || offset == 6 || offset == 8 || offset == 10 { text.append(UInt8(ascii: "-")) }
        text.append(hex[Int(byte >> 4)])
        text.append(hex[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
}

/// A decimal integer (an optional `-`, digits) that fits Int64; `nil` for anything else.
func parseInteger(_ text: UnsafeRawBufferPointer) -> Int64? {
    guard !text.isEmpty else { return nil }
    var index = 0
    let negative = text[0] == UInt8(ascii: "-")
    if negative { index = 1 }
    guard index < text.count else { return nil }
    var value: Int64 = 0
    while index < text.count {
        let digit = text[index] &- UInt8(ascii: "0")
        guard digit < 10 else { return nil }
        let (times, overflow) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = negative ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
        guard !overflow, !overflow2 else { return nil }
        value = sum
        index += 1
    }
    return value
}

/// A floating-point value's text (NUL-terminated, as libpq gives it). The common case — at
/// most 15 significant digits and a power of ten up to 22, as PostgreSQL writes timestamps,
/// scores and the like — is computed exactly from integers (one correctly rounded
/// operation on exact operands); anything else goes to `strtod`.
func parseDouble(_ text: UnsafeRawBufferPointer) -> Double {
    var mantissa: UInt64 = 0
    var digits = 0, fraction = 0, index = 0
    let negative = text.first == UInt8(ascii: "-")
    if negative { index = 1 }
    var seenPoint = false
    while index < text.count {
        let byte = text[index]
        if byte == UInt8(ascii: ".") && !seenPoint {
            seenPoint = true
        } else if byte &- UInt8(ascii: "0") < 10 {
            mantissa = mantissa &* 10 &+ UInt64(byte &- UInt8(ascii: "0"))
            digits += 1
            if seenPoint { fraction += 1 }
        } else {
            break
        }
        index += 1
    }
    guard index == text.count, digits > 0, digits <= 15, fraction <= 22 else {
        return strtod(text.baseAddress!.assumingMemoryBound(to: CChar.self), nil)
    }
    let value = fraction == 0 ? Double(mantissa) : Double(mantissa) / powersOfTen[fraction]
    return negative ? -value : value
}

/// 1e0 … 1e22, each exact in a Double.
let powersOfTen: [Double] = (0...22).map { exponent in (0..<exponent).reduce(1.0) { value, _ in value * 10 } }

/// The bytes of `bytea` hex output (`\x0aff`), decoded straight into their `Data`.
func decodingHex(_ text: UnsafeRawBufferPointer) -> Data {
    guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return Data(text) }
    // PostgreSQL writes hex in lower case; an upper-case letter is read as well.
    @inline(__always) func nibble(_ byte: UInt8) -> UInt8 {
        if byte <= UInt8(ascii: "9") { return byte &- UInt8(ascii: "0") }
        return (byte | 0x20) &- UInt8(ascii: "a") &+ 10
    }
    let count = (text.count - 2) / 2
    var data = Data(count: count)
    data.withUnsafeMutableBytes { bytes in
        guard let output = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
              let input = text.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var index = 0
        while index < count {
            output[index] = nibble(input[2 + 2 &* index]) << 4 | nibble(input[3 + 2 &* index])
            index += 1
        }
    }
    return data
}
