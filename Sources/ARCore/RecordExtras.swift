/// What only some records of a ``Model`` need, allocated on first need and kept with the
/// record: the original values of its columns once it changed (``Model/captureOriginals()``)
/// and its validation failures (``Model/errors``). A record only read holds none, and costs
/// its columns' values and a pointer.
///
/// One allocation: the originals are laid out after the object, at each field's
/// ``ModelMapping/Field/originalOffset``, initialised only while the record's
/// ``Model/originalsCaptured`` is set (and ``holdsOriginals``, which the record keeps in step).
package final class RecordExtras {
    /// The failures of the record's last validation.
    package var errors: [ValidationFailure] = []
    /// Where the originals are laid out (inside this object).
    package let originals: UnsafeMutableRawPointer
    /// How many fields the originals hold (every declared column).
    package let fieldCount: Int
    /// The record's mapping (which lives as long as the process): the originals' types.
    private let mapping: Unretained<ModelMapping>
    /// Whether the originals are initialised: kept in step with the record's flag, read when
    /// this object is freed.
    package var holdsOriginals = false

    private init(mapping: ModelMapping, originals: UnsafeMutableRawPointer) {
        self.mapping = Unretained(mapping)
        self.originals = originals
        fieldCount = mapping.fields.count
    }

    /// Extras for a record of `mapping`'s class, with room for its originals.
    static func make(for mapping: ModelMapping) -> RecordExtras {
        let size = mapping.originalsLayout.size, alignment = mapping.originalsLayout.alignment
        let storage = UnsafeMutableRawPointer.allocate(byteCount: max(size, 1), alignment: alignment)
        return RecordExtras(mapping: mapping, originals: storage)
    }

    deinit {
        if holdsOriginals {
            let originals = originals
            mapping.with { mapping in
                for field in mapping.fields {
                    let address = FieldAddress(value: originals + field.originalOffset, original: originals + field.originalOffset)
                    field.storage.apply(ReleaseOriginal(), kind: field.kind, at: address)
                }
            }
        }
        originals.deallocate()
    }
}
