@_spi(Engines) import ARCore
// The C ABI's handles: Swift objects passed to C as opaque pointers (retained
// while C holds them, released by the matching ar_*_free / ar_close).
import ActiveRecord

/// Base of every handle, so that a handle of the wrong kind is caught (AR_MISUSE).
class Handle {
    /// The handle's kind, checked before the (unchecked, cheaper than a dynamic cast) downcast.
    enum Kind { case database, model, record, query }
    let kind: Kind
    init(kind: Kind) { self.kind = kind }

    /// Hands the object to C, retained, and enters it in the ``HandleRegistry`` (which the
    /// free functions consult). Inlined, so that a caller's own reference is handed over
    /// without a retain and a release.
    @inline(__always)
    func retainedPointer() -> OpaquePointer {
        // Entered first, so that the retain comes last, where the optimizer can pair it with
        // the release of the caller's reference (the registry's atomics stand in between otherwise).
        HandleRegistry.enter(UInt(bitPattern: Unretained(self).address), kind)
        return OpaquePointer(Unmanaged.passRetained(self).toOpaque())
    }

    /// The handle behind a pointer from C, if it is of kind `T`.
    static func from<T: Handle>(_ pointer: OpaquePointer?, as type: T.Type) -> T? {
        guard let pointer else { return nil }
        let handle = Unretained<Handle>(address: UnsafeRawPointer(pointer)).object
        return handle.kind == kind(of: T.self) ? unsafeDowncast(handle, to: T.self) : nil
    }

    /// Calls `body` with the handle behind `pointer` if it is of kind `T` (else returns `nil`),
    /// borrowed: C's reference keeps it alive for the whole call, so the per-call paths
    /// (getters, setters, ar_query_next) retain and release nothing for it.
    static func borrow<T: Handle, R>(_ pointer: OpaquePointer?, as type: T.Type, _ body: (T) throws -> R) rethrows -> R? {
        guard let pointer else { return nil }
        let raw = UnsafeRawPointer(pointer)
        guard Unretained<Handle>(address: raw).with({ $0.kind == kind(of: T.self) }) else { return nil }
        return try Unretained<T>(address: raw).with(body)
    }

    private static func kind<T: Handle>(of type: T.Type) -> Kind {
        T.self == RecordHandle.self ? .record : T.self == ModelHandle.self ? .model : T.self == QueryHandle.self ? .query : .database
    }

    /// Takes back C's reference to the handle behind `pointer` (ar_close, ar_*_free): the
    /// handle, released when the caller lets it go; `nil` for NULL, or for a pointer C does not
    /// hold as a `T` (given back already, or another kind of handle), which is then left alone,
    /// its memory not read, and `function`'s misuse recorded as the last error without a
    /// database (see ``HandleRegistry`` for what this guarantees).
    @inline(__always)
    static func takeBack<T: Handle>(_ pointer: OpaquePointer?, as type: T.Type, in function: StaticString) -> T? {
        guard let pointer else { return nil }
        let removal = HandleRegistry.remove(UInt(bitPattern: UnsafeRawPointer(pointer)), kind(of: T.self))
        guard removal == .removed else {
            refuseTakeBack(removal, kind(of: T.self), function)
            return nil
        }
        return Unmanaged<T>.fromOpaque(UnsafeRawPointer(pointer)).takeRetainedValue()
    }

    @inline(never)
    private static func refuseTakeBack(_ removal: HandleRegistry.Removal, _ kind: Kind, _ function: StaticString) {
        if case .otherKind(let held) = removal {
            _ = failWithoutDatabase(.misuse, "\(function): that is \(held.described), not \(kind.described); release it with \(held.releaser)")
        } else {
            _ = failWithoutDatabase(
                .misuse, "\(function): not \(kind.described) the program holds: released already, or never made by the library; "
                    + "nothing was released (set the pointer to NULL after releasing it)")
        }
    }

    /// The kind of the handle C holds at `pointer`, read from the registry (not through the
    /// pointer): `nil` for NULL or a pointer C does not hold.
    static func heldKind(_ pointer: OpaquePointer?) -> Kind? {
        guard let pointer else { return nil }
        return HandleRegistry.kind(at: UInt(bitPattern: UnsafeRawPointer(pointer)))
    }
}

extension Handle.Kind {
    /// "a database handle", for messages.
    var described: String {
        switch self {
        case .database: "a database handle"
        case .model: "a model handle"
        case .record: "a record handle"
        case .query: "a query handle"
        }
    }

    /// The function that releases a handle of this kind.
    var releaser: String {
        switch self {
        case .database: "ar_close"
        case .model: "ar_model_free"
        case .record: "ar_record_free"
        case .query: "ar_query_free"
        }
    }
}

/// A C string as Swift text, checked: text that is not valid UTF-8 would otherwise be
/// repaired with replacement characters, so that two different names could become one
/// (`"T\xff"` and `"T\xfe"`) and a name could not be addressed as it was given.
/// - Throws: `.invalidValue` saying which argument of which function.
func utf8Text(_ pointer: UnsafePointer<CChar>, _ what: String, in function: String) throws -> String {
    guard let text = String(validatingCString: pointer) else {
        throw ActiveRecordError(.invalidValue, "\(function): \(what) is not valid UTF-8 text; pass UTF-8")
    }
    return text
}
