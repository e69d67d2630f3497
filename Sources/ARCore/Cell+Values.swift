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

/// Text from a row's cell (followed by a NUL byte, see ``EngineStatement/row()``); `nil` when
/// it is not valid UTF-8. Without a NUL inside, the C-string initializer validates on its fast
/// path (the generic `String(validating:as:)` looks up type metadata per call).
@inline(__always)
package func decodedText(_ utf8: UnsafeRawBufferPointer) -> String? {
    guard let base = utf8.baseAddress, utf8.count > 0 else { return "" }
    return base.withMemoryRebound(to: CChar.self, capacity: utf8.count + 1) { cString in
        if strlen(cString) == utf8.count { return String(validatingCString: cString) }
        return String(validating: utf8.bindMemory(to: UInt8.self), as: UTF8.self)
    }
}

/// The error for a result column holding text that is not valid UTF-8 (any engine).
package func invalidUTF8Error(column: Int32, bytes: Int) -> ActiveRecordError {
    ActiveRecordError(
        .typeMismatch,
        "result column \(column) holds TEXT that is not valid UTF-8 (\(bytes) bytes); it cannot be read as text")
}

extension Cell {
    /// The cell as a ``DatabaseValue`` (text and bytes copied).
    /// - Throws: `.typeMismatch` for text that is not valid UTF-8 (naming result `column`).
    @inline(__always)
    package func databaseValue(column: Int32) throws -> DatabaseValue {
        switch self {
        case .null: return .null
        case .integer(let int): return .integer(int)
        case .real(let real): return .real(real)
        case .text(let utf8):
            guard let text = decodedText(utf8) else { throw invalidUTF8Error(column: column, bytes: utf8.count) }
            return .text(text)
        case .blob(let bytes): return .blob(Data(cellBytes: bytes))
        }
    }

    /// A value that is not an integer, as an integer (SQLite's conversions).
    @inline(never)
    var convertedInt64: Int64 {
        switch self {
        case .null: return 0
        case .integer(let int): return int
        case .real(let real): return Self.truncated(real)
        case .text(let bytes), .blob(let bytes):
            let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace
            if let int = Int64(text) { return int }
            return Self.truncated(Self.leadingDouble(text))
        }
    }

    /// A value that is not a real, as a double (SQLite's conversions).
    @inline(never)
    var convertedDouble: Double {
        switch self {
        case .null: return 0
        case .integer(let int): return Double(int)
        case .real(let real): return real
        case .text(let bytes), .blob(let bytes):
            return Self.leadingDouble(String(decoding: bytes, as: UTF8.self).trimmingWhitespace)
        }
    }

    private static func truncated(_ real: Double) -> Int64 {
        guard !real.isNaN else { return 0 }
        if real >= 9.223372036854775807e18 { return .max }
        if real <= -9.223372036854775808e18 { return .min }
        return Int64(real)
    }

    /// The number at the start of `text` (0 when none).
    private static func leadingDouble(_ text: String) -> Double {
        let text = text.prefix(64)
        var end = text.startIndex
        var best = 0.0
        while end < text.endIndex {
            end = text.index(after: end)
            if let value = Double(text[..<end]), value.isFinite { best = value }
        }
        return best
    }
}
