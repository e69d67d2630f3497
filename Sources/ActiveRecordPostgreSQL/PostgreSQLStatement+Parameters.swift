import ActiveRecordLibPQ
@_spi(Engines) import ARCore
import Foundation

/// A statement's parameters as libpq takes them.
extension PostgreSQLStatement {
    /// Lays the bound cells out for libpq: text (NUL-terminated) or binary `bytea`.
    func encodeParameters() {
        buffer.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        formats.removeAll(keepingCapacity: true)
        types.removeAll(keepingCapacity: true)
        for index in 0..<placeholderCount {
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
    func appendDecimal(_ value: Int64) {
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

    func withParameters<R>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
    ) -> R {
        buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress)
            pointers.removeAll(keepingCapacity: true)
            for offset in offsets {
                pointers.append(offset >= 0 ? base.map { ($0 + offset).assumingMemoryBound(to: CChar.self) } : nil)
            }
            return pointers.withUnsafeBufferPointer { pointers in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(pointers.baseAddress, lengths.baseAddress, formats.baseAddress)
                    }
                }
            }
        }
    }
}
