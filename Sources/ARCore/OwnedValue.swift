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

/// A column's value as a ``DynamicRecord`` holds it: typed, its text or bytes in memory the
/// record owns. So a C setter stores a C string without making a Swift `String`, a statement
/// binds the bytes where they are (SQLite without copying them), and freeing a record frees
/// a buffer per text or blob rather than destroying enums in an array.
///
/// A plain value: whoever holds one owns its bytes, and hands them on (``DynamicRecord``'s
/// slots, its originals) or frees them (``release()``) exactly once.
struct OwnedValue {
    enum Kind: UInt8 {
        case null, integer, real, text, blob
        /// In a record's originals: the column has not changed.
        case absent
    }

    private(set) var kind: Kind
    /// Whether ``bytes`` came from `malloc` (else from a record's ``ByteArena``, freed with it).
    private var isMalloced = false
    /// The byte count of a text or blob.
    private var count: Int
    /// An integer, or a real's bits.
    private var bits: UInt64
    /// A text's UTF-8 (followed by a NUL byte) or a blob's bytes, owned; `nil` when empty.
    private var bytes: UnsafeMutableRawPointer?

    private init(kind: Kind, count: Int = 0, bits: UInt64 = 0) {
        self.kind = kind
        self.count = count
        self.bits = bits
    }

    private init(kind: Kind, copying source: UnsafeRawBufferPointer, terminated: Bool, into arena: inout ByteArena) {
        self.init(kind: kind, count: source.count)
        if !source.isEmpty { (bytes, isMalloced) = arena.copy(source, terminated: terminated) }
    }

    static var null: OwnedValue { OwnedValue(kind: .null) }
    static var absent: OwnedValue { OwnedValue(kind: .absent) }
    static func integer(_ int: Int64) -> OwnedValue { OwnedValue(kind: .integer, bits: UInt64(bitPattern: int)) }
    static func real(_ real: Double) -> OwnedValue { OwnedValue(kind: .real, bits: real.bitPattern) }

    /// A copy of `utf8` (which the caller checked is valid UTF-8) as text.
    static func text(copying utf8: UnsafeRawBufferPointer, into arena: inout ByteArena) -> OwnedValue {
        OwnedValue(kind: .text, copying: utf8, terminated: true, into: &arena)
    }

    /// A copy of `bytes` as a blob.
    static func blob(copying bytes: UnsafeRawBufferPointer, into arena: inout ByteArena) -> OwnedValue {
        OwnedValue(kind: .blob, copying: bytes, terminated: false, into: &arena)
    }

    /// `value`, its text or bytes copied.
    init(_ value: DatabaseValue, into arena: inout ByteArena) {
        switch value {
        case .null: self = .null
        case .integer(let int): self = .integer(int)
        case .real(let real): self = .real(real)
        case .text(var text): self = text.withUTF8 { .text(copying: UnsafeRawBufferPointer($0), into: &arena) }
        case .blob(let data): self = data.withUnsafeBytes { .blob(copying: $0, into: &arena) }
        }
    }

    /// Whether the value holds text or bytes.
    var hasBytes: Bool { bytes != nil }

    /// A value of its own: text and bytes copied.
    func copy(into arena: inout ByteArena) -> OwnedValue {
        guard bytes != nil else { return self }
        return OwnedValue(kind: kind, copying: buffer, terminated: kind == .text, into: &arena)
    }

    /// Frees the text or bytes if they came from `malloc` (the value is not used again).
    func release() {
        if isMalloced { free(bytes) }
    }

    /// The value as a ``DatabaseValue`` (text and bytes copied into Swift values).
    var databaseValue: DatabaseValue {
        switch kind {
        case .null, .absent: .null
        case .integer: .integer(Int64(bitPattern: bits))
        case .real: .real(Double(bitPattern: bits))
        case .text: .text(String(decoding: buffer, as: UTF8.self))
        case .blob: .blob(Data(buffer))
        }
    }

    /// The text's or blob's bytes, valid while the value is held.
    private var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: bytes, count: count) }

    /// Binds the value to `statement`'s parameter `index`: text and bytes without a copy
    /// where the engine allows, so the value must stay held until the statement next binds
    /// that parameter or is finalized (the library's cached statements rebind every parameter
    /// on each use).
    func bind(to statement: Statement, at index: Int32) throws {
        switch kind {
        case .null, .absent: try statement.bind(.null, at: index)
        case .integer: try statement.bind(.integer(Int64(bitPattern: bits)), at: index)
        case .real: try statement.bind(.real(Double(bitPattern: bits)), at: index)
        case .text: try statement.bindText(borrowing: buffer, at: index)
        case .blob: try statement.bindBlob(borrowing: buffer, at: index)
        }
    }

    /// Whether two values are equal as ``DatabaseValue``s are.
    static func same(_ a: OwnedValue, _ b: OwnedValue) -> Bool {
        guard a.kind == b.kind else { return false }
        switch a.kind {
        case .null, .absent: return true
        case .integer: return a.bits == b.bits
        case .real: return Double(bitPattern: a.bits) == Double(bitPattern: b.bits)
        case .text, .blob:
            guard a.count == b.count else { return false }
            return a.count == 0 || memcmp(a.bytes!, b.bytes!, a.count) == 0
        }
    }

    /// The value of result column `column` of `statement`'s row, its text or bytes copied.
    /// - Throws: `.typeMismatch` for text that is not valid UTF-8.
    static func decoding(_ statement: Statement, at column: Int32, into arena: inout ByteArena) throws -> OwnedValue {
        switch statement.cell(column) {
        case .null: return .null
        case .integer(let int): return .integer(int)
        case .real(let real): return .real(real)
        case .text(let utf8):
            guard isValidUTF8(utf8) else { throw invalidUTF8Error(column: column, bytes: utf8.count) }
            return .text(copying: utf8, into: &arena)
        case .blob(let bytes): return .blob(copying: bytes, into: &arena)
        }
    }
}

/// Where a record's text and bytes are copied: a few bytes allocated with the record's
/// slots (one allocation for a record of short values, freed with it), then `malloc` once
/// they are used up. Space in the arena is not reused: a column set again takes more.
struct ByteArena {
    private var next: UnsafeMutableRawPointer?
    private var end: UnsafeMutableRawPointer?

    /// An arena over `bytes` (`nil`, or a count of 0: every copy is malloced).
    init(_ bytes: UnsafeMutableRawPointer?, count: Int) {
        next = bytes
        end = bytes.map { $0 + count }
    }

    /// A copy of `source` (NUL-terminated if `terminated`), and whether it was malloced.
    mutating func copy(_ source: UnsafeRawBufferPointer, terminated: Bool) -> (UnsafeMutableRawPointer, malloced: Bool) {
        let size = source.count + (terminated ? 1 : 0)
        let copy: UnsafeMutableRawPointer
        let malloced: Bool
        if let next, let end, end - next >= size {
            copy = next
            self.next = next + size
            malloced = false
        } else {
            guard let allocated = malloc(size) else { fatalError("out of memory for a value of \(source.count) bytes") }
            copy = allocated
            malloced = true
        }
        if let base = source.baseAddress { memcpy(copy, base, source.count) }
        if terminated { copy.storeBytes(of: 0, toByteOffset: source.count, as: UInt8.self) }
        return (copy, malloced)
    }
}

/// Whether `bytes` are valid UTF-8: ASCII checked eight bytes at a time, anything else by
/// the standard library.
package func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    var offset = 0
    var highBits: UInt64 = 0
    while offset &+ 8 <= bytes.count {
        highBits |= base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        offset &+= 8
    }
    while offset < bytes.count {
        highBits |= UInt64(base.load(fromByteOffset: offset, as: UInt8.self))
        offset &+= 1
    }
    return highBits & 0x8080_8080_8080_8080 == 0 || String(validating: bytes, as: UTF8.self) != nil
}
