// The C ABI's handles: Swift objects passed to C as opaque pointers (retained
// while C holds them, released by the matching ar_*_free / ar_close).
import ActiveRecord
import Foundation

/// Base of every handle, so that a handle of the wrong kind is caught (AR_MISUSE).
class Handle {
    /// The handle's kind, checked before the (unchecked, cheaper than a dynamic cast) downcast.
    enum Kind { case database, model, record, query }
    let kind: Kind
    init(kind: Kind) { self.kind = kind }

    /// A C string that stays valid until the next call that replaces it.
    /// `@unchecked Sendable`: each is used by one C thread at a time (a handle's), or
    /// under `globalLastErrorLock` (the global one).
    final class CString: @unchecked Sendable {
        private var storage: UnsafeMutablePointer<CChar>?
        private var capacity = 0
        /// The text kept, or "".
        var text: String { storage.map { String(cString: $0) } ?? "" }
        /// The kept C string, or a static "".
        var pointer: UnsafePointer<CChar> {
            if let storage { return UnsafePointer(storage) }
            return UnsafeRawPointer(emptyString.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        /// Keeps a copy of `text` (reusing the buffer when it is large enough) and returns it.
        func set(_ text: String) -> UnsafePointer<CChar> {
            var text = text
            return text.withUTF8 { bytes in
                if bytes.count + 1 > capacity {
                    capacity = max(bytes.count + 1, 32)
                    storage = realloc(storage, capacity)?.assumingMemoryBound(to: CChar.self)
                }
                if let base = bytes.baseAddress { memcpy(storage!, base, bytes.count) }
                storage![bytes.count] = 0
                return UnsafePointer(storage!)
            }
        }
        deinit { free(storage) }
    }

    /// Hands the object to C, retained.
    func retainedPointer() -> OpaquePointer { OpaquePointer(Unmanaged.passRetained(self).toOpaque()) }

    /// The handle behind a pointer from C, if it is of kind `T`.
    static func from<T: Handle>(_ pointer: OpaquePointer?, as type: T.Type) -> T? {
        guard let pointer else { return nil }
        let handle = Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
        let expected: Kind = T.self == RecordHandle.self ? .record : T.self == ModelHandle.self ? .model
            : T.self == QueryHandle.self ? .query : .database
        return handle.kind == expected ? unsafeDowncast(handle, to: T.self) : nil
    }

    /// Releases a handle C gives back.
    static func release(_ pointer: OpaquePointer?) {
        guard let pointer else { return }
        Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(pointer)).release()
    }
}

/// `ar_database`: a database and its last error message.
final class DatabaseHandle: Handle {
    let database: Database
    let lastError = CString()
    var lastErrorText: String { lastError.text }
    init(_ database: Database) {
        self.database = database
        super.init(kind: .database)
    }

    /// Runs `body` with this database current, turning errors into result codes.
    func run(_ body: () throws -> ar_result) -> ar_result {
        do {
            return try database.use(body)
        } catch {
            return fail(error)
        }
    }

    /// Runs `body`, which does not touch the database (a getter or setter), turning errors
    /// into result codes without the cost of making the database current.
    func catching(_ body: () throws -> ar_result) -> ar_result {
        do {
            return try body()
        } catch {
            return fail(error)
        }
    }

    /// Records `error` as the last error and returns its code.
    func fail(_ error: any Error) -> ar_result {
        _ = lastError.set(describe(error))
        return ar_result(error)
    }

    func fail(_ code: ar_result, _ message: String) -> ar_result {
        _ = lastError.set(message)
        return code
    }
}

private let emptyString: StaticString = ""

/// The last error of calls that have no database (ar_open, NULL handles).
let globalLastError = Handle.CString()
let globalLastErrorLock = NSLock()

func failWithoutDatabase(_ code: ar_result, _ message: String) -> ar_result {
    globalLastErrorLock.lock()
    defer { globalLastErrorLock.unlock() }
    _ = globalLastError.set(message)
    return code
}

func describe(_ error: any Error) -> String {
    (error as? ActiveRecordError)?.description ?? "\(error)"
}

/// `ar_model`: a model defined at run time. Its schema is fixed by the first record,
/// query or find; defining columns after that is an error.
final class ModelHandle: Handle {
    let database: DatabaseHandle
    let name: String
    var columns: [ColumnSchema] = []
    var presence: [String] = []
    var uniqueness: [String] = []
    /// The C type of each column (bool, date and decimal share SQLite storage classes).
    var types: [String: ar_type] = [:]
    private(set) var model: DynamicModel?

    init(database: DatabaseHandle, name: String) {
        self.database = database
        self.name = name
        super.init(kind: .model)
    }

    /// The model, built from the columns declared so far (then frozen).
    func frozen() throws -> DynamicModel {
        if let model { return model }
        let built = DynamicModel(try TableSchema(name: name, columns: columns))
        model = built
        let names = built.schema.allColumnNames
        positionByName = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        cNames = names.map { strdup($0) }
        typeByPosition = names.map { types[$0] }
        return built
    }

    /// The C type of each column by position (id, createdAt, updatedAt first), fixed at freeze.
    private(set) var typeByPosition: [ar_type?] = []

    private var positionByName: [String: Int] = [:]
    private var cNames: [UnsafeMutablePointer<CChar>?] = []
    /// Recently used column names by the address of the C string naming them: C programs
    /// pass the same literals again and again. A short list scanned by address (cheaper
    /// than hashing), each hit checked with strcmp, so a reused buffer is safe.
    private var recent: [(address: UnsafePointer<CChar>, position: Int)] = []
    private var nextSlot = 0
    private static let recentCapacity = 32

    /// The position of a column in the schema's `allColumnNames`, or `nil`.
    func position(of column: UnsafePointer<CChar>) -> Int? {
        for entry in recent where entry.address == column {
            if let name = cNames[entry.position], strcmp(name, column) == 0 { return entry.position }
        }
        guard let position = positionByName[String(cString: column)] else { return nil }
        if recent.count < Self.recentCapacity {
            recent.append((column, position))
        } else {
            recent[nextSlot] = (column, position)
            nextSlot = (nextSlot + 1) % Self.recentCapacity
        }
        return position
    }

    deinit { for name in cNames { free(name) } }
}

/// `ar_record`: a record, with scratch storage for what getters return.
final class RecordHandle: Handle {
    let model: ModelHandle
    let record: DynamicRecord
    let text = CString()
    /// The bytes last returned by ar_record_get_blob (malloc'd: small `Data` is stored
    /// inline, so its own address would not outlive the call).
    private var blob: UnsafeMutableRawPointer?

    /// Keeps a copy of `data` and returns it.
    func keepBlob(_ data: Data) -> UnsafeRawPointer {
        free(blob)
        blob = malloc(max(data.count, 1))
        data.withUnsafeBytes { bytes in if let base = bytes.baseAddress { memcpy(blob!, base, bytes.count) } }
        return UnsafeRawPointer(blob!)
    }

    deinit { free(blob) }
    var errors: [(property: CString, key: CString, message: CString)] = []

    init(model: ModelHandle, record: DynamicRecord) {
        self.model = model
        self.record = record
        super.init(kind: .record)
    }
}

/// `ar_query`: a query being built, then iterated.
final class QueryHandle: Handle {
    let model: ModelHandle
    let predicate: String?
    var arguments: [QueryArgument?]
    var orderings: [(String, Bool)] = []
    var limit: Int?
    var offset: Int?
    var results: [DynamicRecord]?
    var position = 0

    init(model: ModelHandle, predicate: String?, placeholders: Int) {
        self.model = model
        self.predicate = predicate
        arguments = Array(repeating: nil, count: placeholders)
        super.init(kind: .query)
    }

    /// Throws AR_MISUSE once ar_query_next has run the query: it can no longer change.
    func checkNotRun(_ function: String) throws {
        guard results == nil else { throw ActiveRecordError(.misuse, "\(function): the query already ran; make a new one") }
    }

    func query() throws -> DynamicQuery {
        guard arguments.allSatisfy({ $0 != nil }) else {
            let missing = arguments.indices.filter { arguments[$0] == nil }.map { String($0 + 1) }
            throw ActiveRecordError(.invalidPredicate, "placeholders \(missing.joined(separator: ", ")) have no value; bind them first")
        }
        var query = DynamicQuery(try model.frozen(), where: predicate, arguments: arguments.compactMap { $0 })
        for (column, ascending) in orderings { query = query.order(by: column, ascending: ascending) }
        if let limit { query = query.limit(limit) }
        if let offset { query = query.offset(offset) }
        return query
    }
}

extension ar_result {
    /// The result code for an error.
    init(_ error: any Error) {
        guard let error = error as? ActiveRecordError else { self = .error; return }
        switch error.code {
        case .notFound: self = .notFound
        case .misuse: self = .misuse
        case .unknownColumn, .unknownTable: self = .unknownColumn
        case .typeMismatch: self = .typeMismatch
        case .invalidValue: self = .invalidValue
        case .invalidPredicate: self = .invalidPredicate
        case .constraint: self = .constraint
        case .validationFailed: self = .validationFailed
        case .cannotOpen: self = .cannotOpen
        case .notADatabase: self = .notADatabase
        case .readOnly: self = .readOnly
        default: self = .error
        }
    }
}
