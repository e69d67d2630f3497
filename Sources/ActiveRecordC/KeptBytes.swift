import Foundation

/// Bytes kept for C (a string or a blob, always followed by a NUL byte) that stay valid
/// until the next call that replaces them. The buffer is reused when large enough.
/// `@unchecked Sendable`: each is used by one thread at a time — a record's by the thread
/// using the record, a last error message by its own thread (see ``LastErrors``); the
/// shared empty one is never written.
final class KeptBytes: @unchecked Sendable {
    @exclusivity(unchecked) private var storage: UnsafeMutablePointer<CChar>?
    @exclusivity(unchecked) private var capacity = 0
    /// The text kept, or "".
    var text: String { storage.map { String(cString: $0) } ?? "" }
    /// The kept C string, or a static "".
    var pointer: UnsafePointer<CChar> {
        if let storage { return UnsafePointer(storage) }
        return UnsafeRawPointer(emptyString.utf8Start).assumingMemoryBound(to: CChar.self)
    }
    /// Keeps a copy of `text` and returns it.
    func set(_ text: String) -> UnsafePointer<CChar> {
        var text = text
        return text.withUTF8 { set(UnsafeRawBufferPointer($0)) }
    }
    /// Keeps a copy of `bytes`, NUL-terminated, and returns it.
    func set(_ bytes: UnsafeRawBufferPointer) -> UnsafePointer<CChar> {
        if bytes.count + 1 > capacity {
            capacity = max(bytes.count + 1, 32)
            free(storage)
            storage = malloc(capacity)?.assumingMemoryBound(to: CChar.self)
        }
        guard let storage else { fatalError("out of memory keeping \(bytes.count) bytes") }
        if let base = bytes.baseAddress { memcpy(storage, base, bytes.count) }
        storage[bytes.count] = 0
        return UnsafePointer(storage)
    }
    deinit { free(storage) }
}

private let emptyString: StaticString = ""
