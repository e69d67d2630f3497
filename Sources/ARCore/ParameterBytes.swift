#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a statement copies the texts and bytes of the values bound to it, so that its engine
/// can read them in place (SQLite: `SQLITE_STATIC`, no copy of its own): one block, reused by
/// each use of the statement, and blocks of their own for what does not fit, after which the
/// first block grows. Emptied when the statement is reset, when nothing reads them any more.
struct ParameterBytes {
    private var block: UnsafeMutableRawPointer?
    private var capacity = 0
    private var used = 0
    private var aside: [UnsafeMutableRawPointer] = []
    private var asideBytes = 0

    /// A copy of `text`'s UTF-8.
    @inline(__always)
    mutating func copy(_ text: String) -> UnsafeRawBufferPointer {
        if let copied = text.utf8.withContiguousStorageIfAvailable({ copy(UnsafeRawBufferPointer($0)) }) { return copied }
        var text = text
        return text.withUTF8 { copy(UnsafeRawBufferPointer($0)) }
    }

    /// A copy of `data`'s bytes.
    @inline(__always)
    mutating func copy(_ data: Data) -> UnsafeRawBufferPointer {
        data.withUnsafeBytes { copy($0) }
    }

    @inline(__always)
    mutating func copy(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let count = bytes.count
        guard count > 0, let source = bytes.baseAddress else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        guard let block, count <= capacity &- used else { return copyAside(source, count) }
        let target = block + used
        target.copyMemory(from: source, byteCount: count)
        used &+= count
        return UnsafeRawBufferPointer(start: target, count: count)
    }

    @inline(never)
    private mutating func copyAside(_ source: UnsafeRawPointer, _ count: Int) -> UnsafeRawBufferPointer {
        if block == nil {
            capacity = max(256, count)
            block = .allocate(byteCount: capacity, alignment: 16)
            return copy(UnsafeRawBufferPointer(start: source, count: count))
        }
        let target = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
        target.copyMemory(from: source, byteCount: count)
        aside.append(target)
        asideBytes += count
        return UnsafeRawBufferPointer(start: target, count: count)
    }

    /// Empties the block (what was copied is not read any more); after values did not fit,
    /// one block as large as all of them.
    @inline(__always)
    mutating func reset() {
        used = 0
        if !aside.isEmpty { grow() }
    }

    @inline(never)
    private mutating func grow() {
        for bytes in aside { bytes.deallocate() }
        aside.removeAll()
        block?.deallocate()
        capacity += asideBytes
        asideBytes = 0
        block = .allocate(byteCount: capacity, alignment: 16)
    }

    /// Frees every block (the statement is finalized).
    func release() {
        block?.deallocate()
        for bytes in aside { bytes.deallocate() }
    }
}
