import ARLibPQ
@_spi(Engines) import ARCore
import Foundation

/// A statement's parameters as libpq takes them: one value, so that encoding them and handing
/// them to libpq each reach the statement's stored property once (every access to a class's
/// stored property is checked for exclusivity at run time: per parameter and per array, the
/// checks cost more than the encoding; see Benchmarks/README.md, Hot-path notes).
struct ParameterLayout {
    /// The parameters' bytes: text NUL-terminated, `bytea` binary.
    private var buffer: [UInt8] = []
    /// Where each parameter's bytes start in ``buffer`` (-1: `NULL`).
    private var offsets: [Int] = []
    private var lengths: [Int32] = []
    private var formats: [Int32] = []
    /// Each parameter's type (0: unspecified, read as the statement needs).
    private(set) var types: [Oid] = []
    /// Where each parameter's bytes start, for the call (rebuilt per call: `buffer` may move).
    private var pointers: [UnsafePointer<CChar>?] = []

    /// Lays the `count` parameters out from `bound` (the others `NULL`).
    mutating func encode(_ bound: UnsafeBufferPointer<Cell>, count: Int) {
        buffer.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        formats.removeAll(keepingCapacity: true)
        types.removeAll(keepingCapacity: true)
        for index in 0..<count {
            let value = index < bound.count ? bound[index] : .null
            var format: Int32 = 0
            var type: Oid = 0
            let start = buffer.count
            switch value {
            case .null:
                offsets.append(-1)
                lengths.append(0)
                formats.append(0)
                types.append(0)
                continue
            case .integer(let int): appendDecimal(int)
            case .real(let double):
                type = Oid(AR_PG_FLOAT8)
                let text = double.isNaN ? "NaN" : double.isInfinite ? (double < 0 ? "-Infinity" : "Infinity") : "\(double)"
                buffer.append(contentsOf: text.utf8)
            case .text(let utf8): buffer.append(contentsOf: utf8)
            case .blob(let bytes):
                buffer.append(contentsOf: bytes)
                format = 1
                type = Oid(AR_PG_BYTEA)
            }
            let length = buffer.count - start
            if format == 0 { buffer.append(0) }
            offsets.append(start)
            lengths.append(Int32(length))
            formats.append(format)
            types.append(type)
        }
    }

    /// Appends `value`'s decimal digits: written right to left into a small stack buffer,
    /// then appended at once (a digit at a time into `buffer`, reversed afterwards, paid an
    /// append with its checks per digit; see Benchmarks/README.md, Hot-path notes).
    private mutating func appendDecimal(_ value: Int64) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Calls `body` with the values, lengths, formats and types as libpq takes them.
    mutating func withPointers<R>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?, UnsafePointer<Oid>?) -> R
    ) -> R {
        pointers.removeAll(keepingCapacity: true)
        buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress)
            for offset in offsets {
                pointers.append(offset >= 0 ? base.map { ($0 + offset).assumingMemoryBound(to: CChar.self) } : nil)
            }
        }
        return buffer.withUnsafeBufferPointer { _ in
            pointers.withUnsafeBufferPointer { pointers in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        types.withUnsafeBufferPointer { types in
                            body(pointers.baseAddress, lengths.baseAddress, formats.baseAddress, types.baseAddress)
                        }
                    }
                }
            }
        }
    }
}
