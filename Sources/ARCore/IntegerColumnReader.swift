/// An integer column of a model class read in place on its records (an `Int64` or `Int64?`
/// field), for a loop over many records of that class: a preload reads each child's key so,
/// where ``Model/currentValue(_:)`` makes a ``DatabaseValue`` through the field's type.
/// Inlinable, with the records read in place in their array: a caller in another module reads
/// each one with no call and no retain of the record.
package struct IntegerColumnReader: Sendable {
    @usableFromInline let offset: Int
    @usableFromInline let isOptional: Bool

    /// A reader of column `index` of `mapping`'s class; `nil` when its field holds another type.
    package init?(_ mapping: ModelMapping, column index: Int) {
        guard mapping.fields.indices.contains(index) else { return nil }
        let field = mapping.fields[index]
        switch field.storage {
        case .int64: isOptional = false
        case .optionalInt64: isOptional = true
        default: return nil
        }
        offset = field.valueOffset
    }

    /// The column's value in `records[index]`, `nil` for `NULL`. The record must be of the
    /// class (or a subclass of the class) whose mapping made the reader.
    @inlinable @inline(__always)
    package func value(in records: [Model], at index: Int) -> Int64? {
        precondition(index >= 0 && index < records.count, "record index \(index) out of range")
        return records.withUnsafeBufferPointer { records in
            // The object's address, read from the array without retaining the object.
            let object = UnsafeRawPointer(records.baseAddress.unsafelyUnwrapped + index).load(as: UnsafeRawPointer.self)
            return isOptional ? (object + offset).load(as: Int64?.self) : (object + offset).load(as: Int64.self)
        }
    }
}

extension Array where Element == Model {
    /// Removes the last `count` records and returns them, in their order: each reference is
    /// handed over from this array to the new one (no retain, and no release when the rows go,
    /// as copying the records out and dropping the rows would cost a preload per child).
    package mutating func removeLast(taking count: Int) -> [Model] {
        precondition(count >= 0 && count <= self.count, "cannot take \(count) of \(self.count) records")
        return [Model](unsafeUninitializedCapacity: count) { buffer, initialized in
            let base = buffer.baseAddress.unsafelyUnwrapped
            for index in stride(from: count - 1, through: 0, by: -1) { (base + index).initialize(to: removeLast()) }
            initialized = count
        }
    }
}
