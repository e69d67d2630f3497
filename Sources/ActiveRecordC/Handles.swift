// The C ABI's handles: Swift objects passed to C as opaque pointers (retained
// while C holds them, released by the matching ar_*_free / ar_close).
import ActiveRecord
import CSQLite
import Foundation
import Synchronization

/// Base of every handle, so that a handle of the wrong kind is caught (AR_MISUSE).
class Handle {
    /// The handle's kind, checked before the (unchecked, cheaper than a dynamic cast) downcast.
    enum Kind { case database, model, record, query }
    let kind: Kind
    init(kind: Kind) { self.kind = kind }

    /// Bytes kept for C (a string or a blob, always followed by a NUL byte) that stay valid
    /// until the next call that replaces them. The buffer is reused when large enough.
    /// `@unchecked Sendable`: each is used by one C thread at a time (a handle's), or
    /// under `globalLastErrorLock` (the global one).
    final class KeptBytes: @unchecked Sendable {
        @exclusivity(unchecked) private var storage: UnsafeMutablePointer<CChar>?
        @exclusivity(unchecked) private var capacity = 0
        /// The text kept, or "".
        var text: String { storage.map { String(cString: $0) } ?? "" }
        /// The kept C string, or a static "".
        var pointer: UnsafePointer<CChar> {
            if let storage { return UnsafePointer(storage) }
            return UnsafeRawPointer(emptyString.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        /// Keeps a copy of `text` and returns it.
        func set(_ text: String) -> UnsafePointer<CChar> {
            var text = text
            return text.withUTF8 { set(UnsafeRawBufferPointer($0)) }
        }
        /// Keeps a copy of `bytes`, NUL-terminated, and returns it.
        func set(_ bytes: UnsafeRawBufferPointer) -> UnsafePointer<CChar> {
            if bytes.count + 1 > capacity {
                capacity = max(bytes.count + 1, 32)
                free(storage)
                storage = malloc(capacity)?.assumingMemoryBound(to: CChar.self)
            }
            guard let storage else { fatalError("out of memory keeping \(bytes.count) bytes") }
            if let base = bytes.baseAddress { memcpy(storage, base, bytes.count) }
            storage[bytes.count] = 0
            return UnsafePointer(storage)
        }
        deinit { free(storage) }
    }

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

/// `ar_database`: a database and its last error message.
final class DatabaseHandle: Handle {
    let database: Database
    /// Identifies the database's messages in ``LastErrors``.
    let serial = LastErrors.newSerial()
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
        LastErrors.set(describe(error), for: serial)
        return ar_result(error)
    }

    func fail(_ code: ar_result, _ message: String) -> ar_result {
        LastErrors.set(message, for: serial)
        return code
    }
}

private let emptyString: StaticString = ""

/// Records the last error of a call that has no database (ar_open, NULL handles).
func failWithoutDatabase(_ code: ar_result, _ message: String) -> ar_result {
    LastErrors.set(message, for: 0)
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

    /// What C declared: columns until the schema is frozen, validations at any time.
    struct Definition {
        var columns: [ColumnSchema] = []
        /// The C type of each column (bool, date and decimal share SQLite storage classes).
        var types: [String: ar_type] = [:]
        var presence: [String] = []
        var uniqueness: [String] = []
    }

    /// Guards `definition` and `frozenState`: a model may be used from several threads.
    private let lock = NSLock()
    private var definition = Definition()
    private var frozenState: Frozen?
    /// Whether any validation was declared, read without the lock on every save.
    private let validated = Atomic<Bool>(false)

    init(database: DatabaseHandle, name: String) {
        self.database = database
        self.name = name
        super.init(kind: .model)
    }

    /// What a model is once its schema is fixed. Immutable, so records and queries of the
    /// model read it from any thread without a lock.
    final class Frozen {
        let model: DynamicModel
        /// The C type of each column by position (id, createdAt, updatedAt first).
        let typeByPosition: [ar_type?]
        /// The column names as C strings, by position, and their first bytes.
        private let cNames: [UnsafeMutablePointer<CChar>]
        private let firstBytes: [CChar]
        private let positionByName: [String: Int]
        private static let scanLimit = 32

        init(_ model: DynamicModel, types: [String: ar_type]) {
            self.model = model
            let names = model.schema.allColumnNames
            typeByPosition = names.map { types[$0] }
            cNames = names.map { strdup($0)! }
            firstBytes = cNames.map { $0.pointee }
            positionByName = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        }

        /// The position of a column in the schema's `allColumnNames`, or `nil`. A model of a
        /// few columns is scanned (first bytes, then the names compared in place): cheaper
        /// than making a string to hash.
        func position(of column: UnsafePointer<CChar>) -> Int? {
            guard cNames.count <= Self.scanLimit else { return positionByName[String(cString: column)] }
            let first = column.pointee
            for position in firstBytes.indices where firstBytes[position] == first && Self.same(cNames[position], column) {
                return position
            }
            return nil
        }

        /// Whether two C strings are equal; reads `column` no further than its NUL or the first difference.
        @inline(__always)
        private static func same(_ name: UnsafePointer<CChar>, _ column: UnsafePointer<CChar>) -> Bool {
            var offset = 0
            while true {
                let byte = name[offset]
                guard byte == column[offset] else { return false }
                if byte == 0 { return true }
                offset += 1
            }
        }

        deinit { for name in cNames { free(name) } }
    }

    /// Reads or changes the definition under the lock; `isFrozen` tells whether the schema
    /// is fixed (no more columns).
    func withDefinition<R>(_ body: (_ definition: inout Definition, _ isFrozen: Bool) throws -> R) rethrows -> R {
        try lock.withLock {
            defer { validated.store(!definition.presence.isEmpty || !definition.uniqueness.isEmpty, ordering: .releasing) }
            return try body(&definition, frozenState != nil)
        }
    }

    /// The declared validations, or `nil` when there are none (checked without the lock).
    var validations: (presence: [String], uniqueness: [String])? {
        guard validated.load(ordering: .acquiring) else { return nil }
        return lock.withLock { (definition.presence, definition.uniqueness) }
    }

    /// The frozen model, built from the columns declared so far on first use.
    func frozen() throws -> Frozen {
        try lock.withLock {
            if let frozenState { return frozenState }
            let built = Frozen(DynamicModel(try TableSchema(name: name, columns: definition.columns)), types: definition.types)
            frozenState = built
            return built
        }
    }
}

/// `ar_record`: a record, with scratch storage for what getters return.
///
/// A record from ar_query_next on a cursor is a *row record*: its getters read the
/// cursor's current row, with nothing decoded or allocated. It gets a `DynamicRecord` of its
/// own when it is changed, saved, reloaded or dropped, or when C still holds it as the
/// cursor moves on (``detach()``).
final class RecordHandle: Handle {
    let model: ModelHandle
    let frozen: ModelHandle.Frozen
    @exclusivity(unchecked) private var stored: DynamicRecord?
    /// The cursor statement whose current row this record reads, while it has no `stored`,
    /// and its sqlite3_stmt (read by the getters without retaining the statement).
    @exclusivity(unchecked) private var row: Statement? {
        didSet { rowHandle = row?.handle }
    }
    @exclusivity(unchecked) private var rowHandle: OpaquePointer?
    /// The text or bytes a getter returned last: a copy, because a row's bytes change at the
    /// cursor's next step and a small `Data` is stored inline (its address would not outlive
    /// the call). Made on first use: most records never return any.
    @exclusivity(unchecked) private var keptStorage: KeptBytes?
    var kept: KeptBytes {
        if let keptStorage { return keptStorage }
        let made = KeptBytes()
        keptStorage = made
        return made
    }
    /// The errors of the last save.
    @exclusivity(unchecked) var errors: [(property: KeptBytes, key: KeptBytes, message: KeptBytes)] = []

    init(model: ModelHandle, frozen: ModelHandle.Frozen, record: DynamicRecord) {
        self.model = model
        self.frozen = frozen
        stored = record
        super.init(kind: .record)
    }

    init(model: ModelHandle, frozen: ModelHandle.Frozen, row: Statement) {
        self.model = model
        self.frozen = frozen
        self.row = row
        rowHandle = row.handle
        super.init(kind: .record)
    }

    /// The record; a row record decodes its row into one first.
    var record: DynamicRecord {
        if let stored { return stored }
        guard let row else { preconditionFailure("a record handle with neither a record nor a row") }
        let decoded = DynamicRecord(model: frozen.model, decodingRowOf: row)
        stored = decoded
        self.row = nil
        return decoded
    }

    /// Gives a row record a record of its own, before the cursor leaves its row.
    func detach() { _ = record }

    /// Reuses this handle (which C released) for another row or record.
    func reset(row: Statement?, record: DynamicRecord?) {
        self.row = row
        stored = record
        errors = []
    }

    /// The row id (`nil`: unsaved).
    var id: Int64? {
        if let rowHandle { return sqlite3_column_int64(rowHandle, 0) }
        return record.id
    }

    /// Calls `body` with the value at `position` in the schema's `allColumnNames`; text and
    /// bytes point into the row or the record and are valid only during the call.
    func withCell<R>(at position: Int, _ body: (Cell) throws -> R) throws -> R {
        if let statement = rowHandle {
            let column = Int32(position)
            switch sqlite3_column_type(statement, column) {
            case SQLITE_NULL: return try body(.null)
            case SQLITE_INTEGER: return try body(.integer(sqlite3_column_int64(statement, column)))
            case SQLITE_FLOAT: return try body(.real(sqlite3_column_double(statement, column)))
            case SQLITE_TEXT:
                let text = sqlite3_column_text(statement, column)
                return try body(.text(UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column)))))
            default:
                let bytes = sqlite3_column_blob(statement, column)
                return try body(.blob(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column)))))
            }
        }
        switch record.value(at: position) {
        case .null: return try body(.null)
        case .integer(let int): return try body(.integer(int))
        case .real(let real): return try body(.real(real))
        case .text(var text): return try text.withUTF8 { try body(.text(UnsafeRawBufferPointer($0))) }
        case .blob(let data): return try data.withUnsafeBytes { try body(.blob($0)) }
        }
    }
}

/// A column's value as a getter sees it, without copying: text and bytes are borrowed.
enum Cell {
    case null
    case integer(Int64)
    case real(Double)
    case text(UnsafeRawBufferPointer)
    case blob(UnsafeRawBufferPointer)
}

/// `ar_query`: a query being built, then iterated.
final class QueryHandle: Handle {
    let model: ModelHandle
    /// The model as frozen when the query was made (ar_query_new freezes it).
    let frozen: ModelHandle.Frozen
    let predicate: String?
    var arguments: [QueryArgument?]
    var orderings: [(String, Bool)] = []
    var limit: Int?
    var offset: Int?
    /// Set when ar_query_next first runs the query: the rows of a cursor on a reader, or
    /// all records read at once (in a transaction, in memory, all readers busy).
    var rows: Rows?
    /// The record last returned, kept to be reused once C releases it.
    @exclusivity(unchecked) var current: RecordHandle?

    enum Rows {
        case cursor(DynamicRowCursor)
        case fetched([DynamicRecord], next: Int)
    }

    init(model: ModelHandle, frozen: ModelHandle.Frozen, predicate: String?, placeholders: Int) {
        self.model = model
        self.frozen = frozen
        self.predicate = predicate
        arguments = Array(repeating: nil, count: placeholders)
        super.init(kind: .query)
    }

    deinit { _ = releasedCurrent() }

    /// The record last returned if C released it (to reuse), else `nil`, the record then
    /// keeping its values: call before the cursor leaves the row.
    func releasedCurrent() -> RecordHandle? {
        guard current != nil else { return nil }
        if isKnownUniquelyReferenced(&current) { return current }
        current?.detach()
        current = nil
        return nil
    }

    /// Throws AR_MISUSE once ar_query_next has run the query: it can no longer change.
    func checkNotRun(_ function: String) throws {
        guard rows == nil else { throw ActiveRecordError(.misuse, "\(function): the query already ran; make a new one") }
    }

    func query() throws -> DynamicQuery {
        guard arguments.allSatisfy({ $0 != nil }) else {
            let missing = arguments.indices.filter { arguments[$0] == nil }.map { String($0 + 1) }
            throw ActiveRecordError(.invalidPredicate, "placeholders \(missing.joined(separator: ", ")) have no value; bind them first")
        }
        var query = DynamicQuery(frozen.model, where: predicate, arguments: arguments.compactMap { $0 })
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
