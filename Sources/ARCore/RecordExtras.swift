/// What only some records of a ``Model`` need, allocated on first need and kept with the
/// record: the original values of the columns it changed (``Model/captureOriginal(_:)``)
/// and its validation failures (``Model/errors``). A record only read holds none, and costs
/// its columns' values and a pointer.
///
/// One allocation: a bitmap of the columns whose originals are kept (a bit a column), then the
/// originals, laid out after the object's header, each at its field's
/// ``ModelMapping/Field/originalOffset``; an original is initialised only while its bit is set
/// (and its record's ``Model/originalsState`` is `.aside`: the record clears the bits when it
/// leaves that state). A column whose bit is clear has its value as its original.
package final class RecordExtras: ManagedBuffer<RecordExtras.State, UInt8> {
    package struct State {
        /// The failures of the record's last validation.
        var errors: [ValidationFailure] = []
        /// Where the originals are laid out (inside this object, aligned for every field).
        let originals: UnsafeMutableRawPointer
        /// Which columns' originals are kept: a bit a column, ``ModelMapping/capturedWordCount``
        /// words (inside this object).
        let captured: UnsafeMutablePointer<UInt64>
        /// How many words ``captured`` has.
        let words: Int
        /// The record's mapping (which lives as long as the process): the originals' types.
        let mapping: Unretained<ModelMapping>
    }

    /// Extras for a record of `mapping`'s class, with room for its originals, none kept.
    static func make(for mapping: ModelMapping) -> RecordExtras {
        let (size, alignment) = mapping.originalsLayout
        let words = mapping.capturedWordCount
        let made = create(minimumCapacity: 7 + words * 8 + size + alignment - 1) { buffer in
            let tail = UInt(bitPattern: buffer.withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) })
            let bitmap = (tail + 7) & ~7
            let originals = (bitmap + UInt(words * 8) + UInt(alignment - 1)) & ~UInt(alignment - 1)
            let captured = UnsafeMutablePointer<UInt64>(bitPattern: bitmap).unsafelyUnwrapped
            captured.initialize(repeating: 0, count: words)
            return State(
                originals: UnsafeMutableRawPointer(bitPattern: originals).unsafelyUnwrapped, captured: captured, words: words,
                mapping: Unretained(mapping))
        }
        return unsafeDowncast(made, to: RecordExtras.self)
    }

    // Through the header's address: the `header` property checks exclusivity on every access.

    /// The failures of the record's last validation.
    package var errors: [ValidationFailure] {
        get { withUnsafeMutablePointerToHeader { $0.pointee.errors } }
        set { withUnsafeMutablePointerToHeader { $0.pointee.errors = newValue } }
    }

    /// Where the originals are laid out.
    package var originals: UnsafeMutableRawPointer {
        @inline(__always) get { withUnsafeMutablePointerToHeader { $0.pointee.originals } }
    }

    /// The bitmap of the columns whose originals are kept.
    package var captured: UnsafeMutablePointer<UInt64> {
        @inline(__always) get { withUnsafeMutablePointerToHeader { $0.pointee.captured } }
    }

    /// Whether the original of column `index` is kept.
    @inline(__always)
    package func isCaptured(_ index: Int) -> Bool {
        captured[index &>> 6] & (1 &<< UInt64(index & 63)) != 0
    }

    /// Marks the original of column `index` kept (`true`) or not.
    @inline(__always)
    package func setCaptured(_ index: Int, _ isCaptured: Bool) {
        let bit: UInt64 = 1 &<< UInt64(index & 63)
        if isCaptured { captured[index &>> 6] |= bit } else { captured[index &>> 6] &= ~bit }
    }

    /// Marks the originals of the first `count` columns kept (`true`) or none kept.
    package func setAllCaptured(_ isCaptured: Bool, count: Int) {
        let (captured, words) = withUnsafeMutablePointerToHeader { ($0.pointee.captured, $0.pointee.words) }
        for word in 0..<words {
            let columns = isCaptured ? min(64, max(0, count - word * 64)) : 0
            captured[word] = columns == 64 ? ~0 : (1 &<< UInt64(columns)) &- 1
        }
    }

    /// Whether no column's original is kept.
    package var capturesNone: Bool {
        @inline(__always) get {
        let (captured, words) = withUnsafeMutablePointerToHeader { ($0.pointee.captured, $0.pointee.words) }
        if words == 1 { return captured[0] == 0 }
        for word in 0..<words where captured[word] != 0 { return false }
        return true
        }
    }

    deinit {
        let (originals, captured) = (header.originals, header.captured)
        header.mapping.with { $0.releaseOriginals(at: originals, captured: captured) }
    }
}
