import ARLibPQ
@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A statement's parameters as libpq takes them: four arrays (values, lengths, formats, types)
/// in memory the layout owns and reuses from one execution to the next, so that encoding a
/// statement's parameters allocates nothing and reaches no Swift array.
///
/// Two encodings:
/// * **Binary**, when the server has told the parameters' types (a prepared statement,
///   described once: ``PostgreSQLStatement``): integers, doubles and booleans in network byte
///   order in 8-byte slots of the layout's own bytes, text and `bytea` pointing at the bound
///   cells' bytes (no copy: they stay valid until the statement's next bind). A value whose
///   server type has no binary form here (a `numeric`, a `uuid`, a date, JSON) or would not
///   fit (an integer over a 32-bit column's range, an integer other than 0 or 1 for a boolean)
///   goes as text, so that the server reads it (or rejects it) exactly as it reads text.
/// * **Text** otherwise (a statement run once, or unnamed behind a transaction pooler):
///   integers as decimal digits, doubles as their shortest text, text NUL-terminated in the
///   layout's bytes, `bytea` binary.
///
/// Types (``types``): 0 (unspecified: the server infers it from where the parameter is) but
/// `double precision` for a `REAL` value and `bytea` for a blob.
///
/// The layout is a value held by its statement (which calls ``deallocate()`` in its deinit).
struct ParameterLayout {
    /// Room for this many parameters in the four arrays.
    private var capacity = 0
    private(set) var values = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: 1)
    private(set) var lengths = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    private(set) var formats = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    private(set) var types = UnsafeMutablePointer<Oid>.allocate(capacity: 1)
    /// Bytes for the values that are not the caller's: binary numbers, text copies, digits.
    private var bytes = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)
    private var byteCapacity = 8

    /// Frees the layout's memory (its statement's deinit).
    func deallocate() {
        values.deallocate()
        lengths.deallocate()
        formats.deallocate()
        types.deallocate()
        bytes.deallocate()
    }

    /// Makes room for `count` parameters.
    @inline(__always)
    private mutating func reserve(_ count: Int) {
        guard count > capacity else { return }
        deallocate()
        values = .allocate(capacity: count)
        lengths = .allocate(capacity: count)
        formats = .allocate(capacity: count)
        types = .allocate(capacity: count)
        bytes = .allocate(byteCount: 8, alignment: 8)
        byteCapacity = 8
        capacity = count
    }

    /// Makes room for `count` bytes.
    @inline(__always)
    private mutating func reserveBytes(_ count: Int) {
        guard count > byteCapacity else { return }
        bytes.deallocate()
        byteCapacity = max(count, 2 * byteCapacity)
        bytes = .allocate(byteCount: byteCapacity, alignment: 8)
    }

    /// A digest of ``types``, one of three values per parameter (unspecified, `double
    /// precision`, `bytea`): equal digests mean equal types for up to ``exactSignatureCount``
    /// parameters (3^40 < 2^64), a first check beyond.
    private(set) var signature: UInt64 = 0
    static let exactSignatureCount = 40

    /// Lays the `count` parameters out from `bound` (the others `NULL`) in one pass: sets
    /// ``types`` and ``signature`` (the types a statement is prepared with, and so the key of
    /// its prepared forms), and encodes each value, binary where `serverTypes` (the server's
    /// type of each parameter, of the form the caller expects to run) allows, else text.
    /// Returns the number (1-based) of the first text holding a NUL character, which
    /// PostgreSQL's text cannot (the layout is then incomplete), else 0.
    ///
    /// One pass rather than types first and values next: the caller runs the form it ran last
    /// when the signature it finds here is that form's, and lays out again only when not (see
    /// ``PostgreSQLStatement``'s execution).
    mutating func encode(_ bound: UnsafeBufferPointer<Cell>, count: Int, serverTypes: UnsafePointer<Oid>?) -> Int {
        reserve(count)
        // A slot of 32 bytes per parameter (a number, binary or as text); without server types,
        // room for the copies of the texts (all sent as text) too.
        var room = count &* 32
        guard let serverTypes else {
            for index in 0..<min(count, bound.count) {
                if case .text(let utf8) = bound[index] { room &+= utf8.count &+ 1 }
            }
            reserveBytes(room)
            return encode(bound, count: count, serverTypes: nil, room: room)
        }
        reserveBytes(room)
        return encode(bound, count: count, serverTypes: serverTypes, room: room)
    }

    /// ``encode(_:count:serverTypes:)``'s loop, with `room` bytes reserved (inlined twice: with
    /// the server's types, a prepared form's, which every run of a cached statement after its
    /// first takes; and without). The layout's pointers are read once into locals (stores
    /// through them would otherwise make the compiler read them again per parameter), the
    /// cells without a bounds check, and a text's NUL check inline (``containsNUL(_:count:)``)
    /// rather than a call to `memchr`.
    @inline(__always)
    private mutating func encode(
        _ bound: UnsafeBufferPointer<Cell>, count: Int, serverTypes: UnsafePointer<Oid>?, room: Int
    ) -> Int {
        let values = self.values, lengths = self.lengths, formats = self.formats, types = self.types, bytes = self.bytes
        let boundCount = min(count, bound.count)
        let cells = bound.baseAddress
        var offset = 0
        var signature: UInt64 = 0
        var index = 0
        while index < boundCount {
            let serverType = serverTypes.map { Int($0[index]) } ?? 0
            var format: Int32 = 1
            var length: Int32
            let slot = bytes + offset
            var pointer = UnsafeRawPointer(slot)
            switch cells.unsafelyUnwrapped[index] {
            case .null:
                types[index] = 0
                signature = signature &* 3
                values[index] = nil
                lengths[index] = 0
                formats[index] = 0
                index &+= 1
                continue
            case .integer(let int):
                types[index] = 0
                signature = signature &* 3
                (length, format) = Self.write(int, as: serverType, to: slot)
                offset &+= 32
            case .real(let double):
                types[index] = Oid(AR_PG_FLOAT8)
                signature = signature &* 3 &+ 1
                (length, format) = Self.write(double, as: serverType, to: slot)
                offset &+= 32
            case .text(let utf8):
                types[index] = 0
                signature = signature &* 3
                length = Int32(utf8.count)
                if let base = utf8.baseAddress {
                    if Self.containsNUL(base, count: utf8.count) { return index &+ 1 }
                    if Self.takesTextAsBinary(serverType) {
                        // The binary form of text is its bytes; a NULL pointer would be SQL NULL.
                        pointer = base
                    } else {
                        // Sent as text (a `uuid`, a `numeric`, a date; every text without server
                        // types): a copy with its NUL, in the slots' room when it fits (always
                        // without server types: the room counts the texts), else every parameter
                        // as text (``encodeAsText``).
                        guard offset &+ utf8.count &+ 1 &+ 32 &* (count &- index &- 1) <= room else {
                            return encodeAsText(bound, count: count)
                        }
                        slot.copyMemory(from: base, byteCount: utf8.count)
                        slot.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
                        offset &+= utf8.count &+ 1
                        format = 0
                    }
                } else if !Self.takesTextAsBinary(serverType) {
                    slot.storeBytes(of: 0, as: UInt8.self)
                    offset &+= 1
                    format = 0
                }
            case .blob(let blob):
                types[index] = Oid(AR_PG_BYTEA)
                signature = signature &* 3 &+ 2
                length = Int32(blob.count)
                if let base = blob.baseAddress { pointer = base }
            }
            values[index] = pointer.assumingMemoryBound(to: CChar.self)
            lengths[index] = length
            formats[index] = format
            index &+= 1
        }
        // The parameters not bound: `NULL`.
        while index < count {
            types[index] = 0
            signature = signature &* 3
            values[index] = nil
            lengths[index] = 0
            formats[index] = 0
            index &+= 1
        }
        self.signature = signature
        return 0
    }

    /// Whether the `count` bytes at `base` hold a 0, read a word (or half a word) at a time: a
    /// text parameter's check, cheaper than a call to `memchr` for the short texts of a row.
    @inline(__always)
    static func containsNUL(_ base: UnsafeRawPointer, count: Int) -> Bool {
        // A word holds a 0 byte when subtracting 1 from each byte borrows into a byte whose
        // high bit was clear.
        @inline(__always) func hasZero(_ word: UInt64) -> Bool {
            (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0
        }
        @inline(__always) func hasZero(_ word: UInt32) -> Bool {
            (word &- 0x0101_0101) & ~word & 0x8080_8080 != 0
        }
        if count >= 8 {
            var offset = 0
            while offset &+ 8 < count {
                if hasZero(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) { return true }
                offset &+= 8
            }
            // The last 8 bytes (overlapping those read when the count is not a multiple of 8).
            return hasZero(base.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self))
        }
        if count >= 4 {
            return hasZero(base.loadUnaligned(as: UInt32.self)) || hasZero(base.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
        }
        // 0 to 3 bytes: the first, the middle and the last.
        guard count > 0 else { return false }
        return base.load(as: UInt8.self) == 0 || base.load(fromByteOffset: count &>> 1, as: UInt8.self) == 0
            || base.load(fromByteOffset: count &- 1, as: UInt8.self) == 0
    }

    /// ``encode(_:count:serverTypes:)`` of a statement whose one parameter is an integer (a
    /// find or a delete by id), without the loop: `false` (nothing done) for any other, or
    /// before the layout has room for one.
    @inline(__always)
    mutating func encodeOneInteger(_ bound: UnsafeBufferPointer<Cell>, count: Int, serverTypes: UnsafePointer<Oid>?) -> Bool {
        guard count == 1, capacity >= 1, byteCapacity >= 32, bound.count >= 1, case .integer(let int) = bound[0] else {
            return false
        }
        types[0] = 0
        signature = 0
        let (length, format) = Self.write(int, as: serverTypes.map { Int($0[0]) } ?? 0, to: bytes)
        values[0] = UnsafeRawPointer(bytes).assumingMemoryBound(to: CChar.self)
        lengths[0] = length
        formats[0] = format
        return true
    }

    // MARK: One value (shared with the bulk insert, PostgreSQLConnection+BulkInsert.swift)

    /// Writes `int` at `slot` (room for 32 bytes) as a parameter of server type `serverType`
    /// takes it: binary for the integers, booleans and `double precision` when it fits, else
    /// its decimal digits and a NUL: its length and format (1 binary, 0 text).
    @inline(__always)
    static func write(_ int: Int64, as serverType: Int, to slot: UnsafeMutableRawPointer) -> (length: Int32, format: Int32) {
        switch serverType {
        case AR_PG_INT8:
            slot.storeBytes(of: int.bigEndian, as: Int64.self)
            return (8, 1)
        case AR_PG_INT4 where Int32(exactly: int) != nil:
            slot.storeBytes(of: Int32(truncatingIfNeeded: int).bigEndian, as: Int32.self)
            return (4, 1)
        case AR_PG_INT2 where Int16(exactly: int) != nil:
            slot.storeBytes(of: Int16(truncatingIfNeeded: int).bigEndian, as: Int16.self)
            return (2, 1)
        case AR_PG_BOOL where int == 0 || int == 1:
            slot.storeBytes(of: UInt8(truncatingIfNeeded: int), as: UInt8.self)
            return (1, 1)
        case AR_PG_FLOAT8:
            slot.storeBytes(of: Double(int).bitPattern.bigEndian, as: UInt64.self)
            return (8, 1)
        default:
            return (writeDecimal(int, to: slot), 0)
        }
    }

    /// Writes `double` at `slot` (room for 32 bytes): binary for a `double precision`, else as
    /// text and a NUL: its length and format.
    @inline(__always)
    static func write(_ double: Double, as serverType: Int, to slot: UnsafeMutableRawPointer) -> (length: Int32, format: Int32) {
        guard serverType == AR_PG_FLOAT8 else { return (writeText(of: double, to: slot), 0) }
        slot.storeBytes(of: double.bitPattern.bigEndian, as: UInt64.self)
        return (8, 1)
    }

    /// Whether text goes to a parameter of server type `serverType` as its bytes, in binary.
    /// Not for `name`: its binary form refuses a name over 63 bytes that its text form cuts
    /// short (what a catalog lookup of a too long name relies on).
    @inline(__always)
    static func takesTextAsBinary(_ serverType: Int) -> Bool {
        serverType == AR_PG_TEXT || serverType == AR_PG_VARCHAR || serverType == AR_PG_BPCHAR || serverType == AR_PG_JSON
    }

    /// ``encode(_:count:serverTypes:)`` of a statement whose texts sent as text do not fit in its
    /// slots: every parameter as text (what a statement not described sends).
    @inline(never)
    private mutating func encodeAsText(_ bound: UnsafeBufferPointer<Cell>, count: Int) -> Int {
        encode(bound, count: count, serverTypes: nil)
    }

    /// Writes `value`'s decimal digits and a NUL at `target` (room for 21 digits and a sign):
    /// their count.
    static func writeDecimal(_ value: Int64, to target: UnsafeMutableRawPointer) -> Int32 {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            var length = 0
            if value < 0 {
                target.storeBytes(of: UInt8(ascii: "-"), as: UInt8.self)
                length = 1
            }
            let count = digits.count - start
            (target + length).copyMemory(from: digits.baseAddress! + start, byteCount: count)
            length += count
            target.storeBytes(of: 0, toByteOffset: length, as: UInt8.self)
            return Int32(length)
        }
    }

    /// Writes `value` as PostgreSQL reads a `double precision` (`NaN`, `Infinity`, the shortest
    /// text that reads back the same) and a NUL at `target` (room for 32 bytes): its length.
    static func writeText(of value: Double, to target: UnsafeMutableRawPointer) -> Int32 {
        var text = value.isNaN ? "NaN" : value.isInfinite ? (value < 0 ? "-Infinity" : "Infinity") : "\(value)"
        return text.withUTF8 { utf8 in
            target.copyMemory(from: utf8.baseAddress!, byteCount: utf8.count)
            target.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return Int32(utf8.count)
        }
    }
}
