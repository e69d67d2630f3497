// The C ABI's handles: Swift objects passed to C as opaque pointers (retained
// while C holds them, released by the matching ar_*_free / ar_close).
import ActiveRecord

/// Base of every handle, so that a handle of the wrong kind is caught (AR_MISUSE).
class Handle {
    /// The handle's kind, checked before the (unchecked, cheaper than a dynamic cast) downcast.
    enum Kind { case database, model, record, query }
    let kind: Kind
    init(kind: Kind) { self.kind = kind }

    /// Hands the object to C, retained.
    func retainedPointer() -> OpaquePointer { OpaquePointer(Unmanaged.passRetained(self).toOpaque()) }

    /// The handle behind a pointer from C, if it is of kind `T`.
    static func from<T: Handle>(_ pointer: OpaquePointer?, as type: T.Type) -> T? {
        guard let pointer else { return nil }
        let handle = Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
        return handle.kind == kind(of: T.self) ? unsafeDowncast(handle, to: T.self) : nil
    }

    /// Calls `body` with the handle behind `pointer` if it is of kind `T` (else returns `nil`),
    /// borrowed: C's reference keeps it alive for the whole call, so the per-call paths
    /// (getters, setters, ar_query_next) retain and release nothing for it.
    static func borrow<T: Handle, R>(_ pointer: OpaquePointer?, as type: T.Type, _ body: (T) throws -> R) rethrows -> R? {
        guard let pointer else { return nil }
        let raw = UnsafeRawPointer(pointer)
        guard Unmanaged<Handle>.fromOpaque(raw)._withUnsafeGuaranteedRef({ $0.kind == kind(of: T.self) }) else { return nil }
        return try Unmanaged<T>.fromOpaque(raw)._withUnsafeGuaranteedRef(body)
    }

    private static func kind<T: Handle>(of type: T.Type) -> Kind {
        T.self == RecordHandle.self ? .record : T.self == ModelHandle.self ? .model : T.self == QueryHandle.self ? .query : .database
    }

    /// Releases a handle C gives back.
    static func release(_ pointer: OpaquePointer?) {
        guard let pointer else { return }
        Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(pointer)).release()
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
