// Which handles C holds: consulted when C gives one back (ar_close, ar_*_free), so that
// giving one back twice is refused instead of releasing freed memory.
@_spi(Engines) import ARCore
import Synchronization

/// The addresses of the handles C holds, each with its kind: a handle is entered when it is
/// handed to C (``Handle/retainedPointer()``) and removed when C gives it back
/// (``Handle/takeBack(_:as:in:)``). Only handing out, giving back and ar_last_error consult it;
/// the per-call paths (getters, setters, ar_query_next's reading) read the handle directly.
///
/// Because the registry is asked *before* the handle's memory is touched, a pointer C no
/// longer holds (freed already) is refused without reading the memory it points to, which may
/// be freed or reused. What this guarantees and what it cannot:
/// * A handle given back twice, or with the wrong function (a model to ar_record_free), is
///   refused: nothing is released and nothing is read through the pointer. Two threads giving
///   back one handle at once: exactly one releases it.
/// * Address reuse: once a handle is given back its memory may be freed, and the next handle
///   of any kind may be allocated at the same address. A stale pointer then names the new
///   handle: giving it back again releases the *new* handle if it is of the same kind (as
///   `free` would free a new allocation at a reused address); of another kind it is refused.
/// * A given-back handle passed to any other call (a getter, ar_query_next, ar_begin) is
///   undefined behaviour, as with memory after `free`: those calls do not consult the registry.
///
/// An address is removed before C's reference is released, so it is never in the registry
/// while its memory can be freed and reused; entries never move.
///
/// Lock-free in the common case: a table of atomic slots where an address may sit only in the
/// `window` slots from its hash, so that entering, removing and finding one each read at most
/// `window` slots, and a removal simply empties its slot (a search scans the whole window, so
/// no tombstones are needed): a record entered and removed (`ar_record_new` or
/// `ar_query_next`, then `ar_record_free`) takes no lock (its cost: see
/// Benchmarks/README.md, Hot-path notes).
/// Handles that find their window full (thousands held at once) go to a locked overflow
/// dictionary, read only when an address is not in its window and the overflow is not empty.
enum HandleRegistry {
    /// What removing a handle found.
    enum Removal: Equatable {
        case removed
        /// C holds the address, as a handle of another kind: nothing was removed.
        case otherKind(Handle.Kind)
        /// C does not hold the address (given back already, or never handed out).
        case absent
    }

    private static let slotBits = 14
    private static let slotCount = 1 << slotBits
    private static let window = 16
    /// The slots' address, 0 until the first handle is entered: an atomic rather than a lazy
    /// `static let`, which would cost a `swift_once` check on every use. Each slot holds 0
    /// (free) or a handle's address with its kind's tag in the low bits (Swift objects are
    /// 16-byte aligned, so those bits of an address are zero). Never freed.
    private static let table = Atomic<UInt>(0)
    private static let tagMask: UInt = 0xF
    private static let overflow = Lock<[UInt: Handle.Kind]>([:])
    private static let overflowCount = Atomic<Int>(0)

    @inline(__always)
    private static func slots() -> UnsafeMutablePointer<Atomic<UInt>>? {
        UnsafeMutablePointer(bitPattern: table.load(ordering: .acquiring))
    }

    /// The slots, made by the first handle entered.
    @inline(never)
    private static func makeSlots() -> UnsafeMutablePointer<Atomic<UInt>> {
        let made = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: slotCount)
        for index in 0..<slotCount { (made + index).initialize(to: Atomic(0)) }
        let (exchanged, original) = table.compareExchange(
            expected: 0, desired: UInt(bitPattern: made), ordering: .acquiringAndReleasing)
        guard !exchanged, let existing = UnsafeMutablePointer<Atomic<UInt>>(bitPattern: original) else { return made }
        // Another thread made them first.
        made.deinitialize(count: slotCount)
        made.deallocate()
        return existing
    }

    @inline(__always)
    private static func firstSlot(of address: UInt) -> Int {
        // Fibonacci hashing of the address without its always-zero low bits.
        Int(truncatingIfNeeded: ((address >> 4) &* 0x9E37_79B9_7F4A_7C15) >> UInt(UInt.bitWidth - slotBits))
    }

    /// Enters a handle C is about to hold. Its address is not in the registry: a live object's
    /// address is entered once, and removed before its memory can be freed and reused.
    @inline(__always)
    static func enter(_ address: UInt, _ kind: Handle.Kind) {
        assert(address & tagMask == 0, "a handle's address has its low bits set: no room for the kind's tag")
        let slots = slots() ?? makeSlots()
        let entry = address | kind.tag
        var index = firstSlot(of: address)
        for _ in 0..<window {
            if slots[index].load(ordering: .relaxed) == 0,
                slots[index].compareExchange(expected: 0, desired: entry, ordering: .acquiringAndReleasing).exchanged
            {
                return
            }
            index = (index &+ 1) & (slotCount &- 1)
        }
        enterInOverflow(address, kind)
    }

    @inline(never)
    private static func enterInOverflow(_ address: UInt, _ kind: Handle.Kind) {
        overflow.withLock { entries in
            entries[address] = kind
            overflowCount.add(1, ordering: .relaxed)
        }
    }

    /// Removes the handle at `address` if C holds it as a `kind`; once removed, the caller
    /// owns C's reference and releases it.
    @inline(__always)
    static func remove(_ address: UInt, _ kind: Handle.Kind) -> Removal {
        guard let slots = slots() else { return .absent }
        var index = firstSlot(of: address)
        for _ in 0..<window {
            let entry = slots[index].load(ordering: .acquiring)
            if entry & ~tagMask == address {
                guard entry & tagMask == kind.tag else { return .otherKind(Handle.Kind(tag: entry & tagMask)) }
                // Another thread giving the same handle back at once may win: then it is absent.
                if slots[index].compareExchange(expected: entry, desired: 0, ordering: .acquiringAndReleasing).exchanged {
                    return .removed
                }
            }
            index = (index &+ 1) & (slotCount &- 1)
        }
        return removeFromOverflow(address, kind)
    }

    @inline(never)
    private static func removeFromOverflow(_ address: UInt, _ kind: Handle.Kind) -> Removal {
        guard overflowCount.load(ordering: .relaxed) > 0 else { return .absent }
        return overflow.withLock { entries in
            guard let held = entries[address] else { return .absent }
            guard held == kind else { return .otherKind(held) }
            entries[address] = nil
            overflowCount.subtract(1, ordering: .relaxed)
            return .removed
        }
    }

    /// The kind of the handle C holds at `address`, or `nil`.
    static func kind(at address: UInt) -> Handle.Kind? {
        guard let slots = slots() else { return nil }
        var index = firstSlot(of: address)
        for _ in 0..<window {
            let entry = slots[index].load(ordering: .acquiring)
            if entry & ~tagMask == address { return Handle.Kind(tag: entry & tagMask) }
            index = (index &+ 1) & (slotCount &- 1)
        }
        guard overflowCount.load(ordering: .relaxed) > 0 else { return nil }
        return overflow.withLock { $0[address] }
    }
}

extension Handle.Kind {
    /// The kind's tag in a registry entry (never 0, which marks a free slot).
    fileprivate var tag: UInt {
        switch self {
        case .database: 1
        case .model: 2
        case .record: 3
        case .query: 4
        }
    }

    fileprivate init(tag: UInt) {
        switch tag {
        case 1: self = .database
        case 2: self = .model
        case 3: self = .record
        default: self = .query
        }
    }
}
