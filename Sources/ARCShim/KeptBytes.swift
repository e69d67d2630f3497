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

/// Bytes kept for C (a string or a blob, always followed by a NUL byte) that stay valid
/// until the next call that replaces them. The buffer is reused when large enough.
/// A record handle holds one inline (reading it retains nothing); ``KeptBytes`` boxes one.
struct KeptBuffer: ~Copyable {
    private var storage: UnsafeMutablePointer<CChar>?
    private var capacity = 0

    init() {}

    /// The kept C string, or `nil` before anything was kept.
    var pointer: UnsafePointer<CChar>? { storage.map { UnsafePointer($0) } }

    /// Keeps a copy of `bytes`, NUL-terminated, and returns it.
    /// Inlined into the text getters (every text a C program reads); growing is not.
    @inline(__always)
    mutating func set(_ bytes: UnsafeRawBufferPointer) -> UnsafePointer<CChar> {
        if bytes.count >= capacity { grow(to: bytes.count + 1) }
        let storage = storage.unsafelyUnwrapped
        if let base = bytes.baseAddress { memcpy(storage, base, bytes.count) }
        storage[bytes.count] = 0
        return UnsafePointer(storage)
    }

    @inline(never)
    private mutating func grow(to count: Int) {
        capacity = max(count, 32)
        free(storage)
        guard let allocated = malloc(capacity) else { fatalError("out of memory keeping \(count - 1) bytes") }
        storage = allocated.assumingMemoryBound(to: CChar.self)
    }

    deinit { free(storage) }
}

/// A ``KeptBuffer`` to share: a record's validation messages, a thread's last error.
/// `@unchecked Sendable`: each is used by one thread at a time — a record's by the thread
/// using the record, a last error message by its own thread (see ``LastErrors``); the
/// shared empty one is never written.
final class KeptBytes: @unchecked Sendable {
    // Unchecked exclusivity: one thread at a time (above), and every C getter that returns
    // text writes the buffer.
    @exclusivity(unchecked) private var buffer = KeptBuffer()
    /// The text kept, or "".
    var text: String { buffer.pointer.map { String(cString: $0) } ?? "" }
    /// The kept C string, or a static "".
    var pointer: UnsafePointer<CChar> {
        if let pointer = buffer.pointer { return pointer }
        return UnsafeRawPointer(emptyString.utf8Start).assumingMemoryBound(to: CChar.self)
    }
    /// Keeps a copy of `text` and returns it.
    func set(_ text: String) -> UnsafePointer<CChar> {
        var text = text
        return text.withUTF8 { set(UnsafeRawBufferPointer($0)) }
    }
    /// Keeps a copy of `bytes`, NUL-terminated, and returns it.
    func set(_ bytes: UnsafeRawBufferPointer) -> UnsafePointer<CChar> { buffer.set(bytes) }
}

private let emptyString: StaticString = ""
