/// What only some records of a ``Model`` need, allocated on first need and kept with the
/// record: the original values of its columns once it changed (``Model/captureOriginals()``)
/// and its validation failures (``Model/errors``). A record only read holds none, and costs
/// its columns' values and a pointer.
///
/// One allocation: the originals are laid out after the object's header, at each field's
/// ``ModelMapping/Field/originalOffset``, initialised only while the record's
/// ``Model/originalsState`` is `.aside` (and ``holdsOriginals``, which the record keeps in step).
package final class RecordExtras: ManagedBuffer<RecordExtras.State, UInt8> {
    package struct State {
        /// The failures of the record's last validation.
        var errors: [ValidationFailure] = []
        /// Where the originals are laid out (inside this object, aligned for every field).
        let originals: UnsafeMutableRawPointer
        /// The record's mapping (which lives as long as the process): the originals' types.
        let mapping: Unretained<ModelMapping>
        /// Whether the originals are initialised: kept in step with the record's flag, read
        /// when this object is freed.
        var holdsOriginals = false
    }

    /// Extras for a record of `mapping`'s class, with room for its originals.
    static func make(for mapping: ModelMapping) -> RecordExtras {
        let (size, alignment) = mapping.originalsLayout
        let made = create(minimumCapacity: size + alignment - 1) { buffer in
            let tail = buffer.withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
            let aligned = UnsafeMutableRawPointer(bitPattern: (UInt(bitPattern: tail) + UInt(alignment - 1)) & ~UInt(alignment - 1))
            return State(originals: aligned.unsafelyUnwrapped, mapping: Unretained(mapping))
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
    package var originals: UnsafeMutableRawPointer { withUnsafeMutablePointerToHeader { $0.pointee.originals } }

    /// Whether the originals are initialised.
    package var holdsOriginals: Bool {
        get { withUnsafeMutablePointerToHeader { $0.pointee.holdsOriginals } }
        set { withUnsafeMutablePointerToHeader { $0.pointee.holdsOriginals = newValue } }
    }

    deinit {
        guard header.holdsOriginals else { return }
        let originals = header.originals
        header.mapping.with { $0.releaseOriginals(at: originals) }
    }
}
