#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Foundation's `error.localizedDescription`, which servers and UIs log, is the error's
/// ``ActiveRecordError/description`` (without this it reads "The operation could not be
/// completed. (ARCore.ActiveRecordError error 1.)").
extension ActiveRecordError: LocalizedError {
    /// ``description``: the code and the message, then the engine's code and the SQL when
    /// there are (never the bound values unless the database was asked for them).
    public var errorDescription: String? { description }
}
