/// A reference that does not keep its object alive, read without a retain and release: for
/// an object something else holds for longer (each stored one says what holds it). The one
/// way the library skips reference counting on its hot paths, where a retain and a release
/// cost more than the work (see the benchmark notes), and threads sharing an object would
/// otherwise write its reference count on every call.
///
/// Public only as SPI and inlinable, so that the C shim's getters use it with no call (this
/// toolchain inlines no `package` function across modules).
@_spi(Engines) public struct Unretained<Object: AnyObject> {
    @usableFromInline let unmanaged: Unmanaged<Object>

    /// An unretained reference to `object`.
    @inlinable @inline(__always)
    public init(_ object: Object) { unmanaged = Unmanaged.passUnretained(object) }

    /// The object at `address` (an ``address`` read back), unretained.
    @inlinable @inline(__always)
    public init(address: UnsafeRawPointer) { unmanaged = Unmanaged.fromOpaque(address) }

    /// The object's address.
    @inlinable
    public var address: UnsafeMutableRawPointer {
        @inline(__always) get { unmanaged.toOpaque() }
    }

    /// The object, as a reference of the caller's own (retained).
    @inlinable
    public var object: Object {
        @inline(__always) get { unmanaged.takeUnretainedValue() }
    }

    /// Runs `body` with the object, retaining nothing: the object must stay alive meanwhile.
    @inlinable @inline(__always)
    public func with<R>(_ body: (Object) throws -> R) rethrows -> R { try unmanaged._withUnsafeGuaranteedRef(body) }
}
