@_spi(Engines) import ARCore
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// `ar_model`: a model defined at run time. Its schema is fixed by the first record,
/// query or find; defining columns after that is an error.
/// `@unchecked Sendable`: its name and database never change, and its definition and frozen
/// state are behind `state`'s lock (models are shared between threads, see the header).
final class ModelHandle: Handle, @unchecked Sendable {
    let database: DatabaseHandle
    let name: String

    /// What C declared: columns until the schema is frozen, validations at any time.
    struct Definition {
        var columns: [ColumnSchema] = []
        /// The C type of each column (bool, date and decimal share SQLite storage classes).
        var types: [String: ar_type] = [:]
        /// The columns with a presence and with a uniqueness validation, in declaration order.
        var presence: [String] = []
        var uniqueness: [String] = []
        /// The models this one belongs to (ar_model_belongs_to): their tables come first.
        var parents: [ModelHandle] = []
        /// The primary key (ar_model_set_primary_key).
        var primaryKey: PrimaryKey = .autoincrement
        /// Whether a model belongs to this one (ar_model_belongs_to): its key column took this
        /// model's key type, which can then no longer change.
        var hasChildren = false
    }

    /// The definition and, once fixed, the frozen model: a model may be used from several threads.
    private struct State {
        var definition = Definition()
        var frozen: Frozen?
        /// The validations as the engine runs them, rebuilt when one is declared (and given
        /// to the frozen model, whose saves run them).
        var validations: Validations?
    }

    private let state = Lock(State())

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
        /// Whether a column is decimal (an integer cell of one reads as its digits).
        let hasDecimalColumn: Bool
        /// The column names as C strings, by position, and their first bytes.
        private let cNames: [UnsafeMutablePointer<CChar>]
        private let firstBytes: [CChar]
        private let positionByName: [String: Int]
        private static let scanLimit = 32

        init(_ model: DynamicModel, types: [String: ar_type]) {
            self.model = model
            var names = model.schema.allColumnNames
            // A UUID or text key is its declared column: its name finds that column, not the header.
            if !model.schema.primaryKey.isAutoincrement { names[0] = "" }
            typeByPosition = names.map { types[$0] }
            hasDecimalColumn = typeByPosition.contains(.decimal)
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

        /// ``position(of:)``, trying `guess` first and setting it to the position after the one
        /// found: a program that reads or sets a record's columns in declaration order (as
        /// most do) finds each with one comparison of names.
        @inline(__always)
        func position(of column: UnsafePointer<CChar>, guess: inout Int) -> Int? {
            let tried = guess
            if tried < cNames.count, Self.same(cNames[tried], column) {
                guess = tried &+ 1
                return tried
            }
            guard let found = position(of: column) else { return nil }
            guess = found &+ 1
            return found
        }

        /// Whether two C strings are equal: libc's `strcmp`, which compares many bytes an
        /// instruction (a byte at a time here took about six instructions a byte, on every
        /// getter's and setter's look-up by name).
        @inline(__always)
        private static func same(_ name: UnsafePointer<CChar>, _ column: UnsafePointer<CChar>) -> Bool {
            strcmp(name, column) == 0
        }

        deinit { for name in cNames { free(name) } }
    }

    /// Reads or changes the definition under the lock; `isFrozen` tells whether the schema
    /// is fixed (no more columns).
    func withDefinition<R>(_ body: (_ definition: inout Definition, _ isFrozen: Bool) throws -> R) rethrows -> R {
        try state.withLock { state in
            let before = (state.definition.presence, state.definition.uniqueness)
            let result = try body(&state.definition, state.frozen != nil)
            let definition = state.definition
            if before != (definition.presence, definition.uniqueness) {
                state.validations = Validations(presence: definition.presence, uniqueness: definition.uniqueness)
                state.frozen?.model.validationHook = state.validations
            }
            return result
        }
    }

    /// The frozen model once built, as the address of the object `state.frozen` keeps
    /// (never replaced): read without the lock, as each new record reads it. (An
    /// `AtomicLazyReference` load is an unspecialised generic call here; see
    /// Benchmarks/README.md, Hot-path notes.)
    private let frozenAddress = Atomic<Int>(0)

    /// The frozen model, built from the columns declared so far on first use.
    func frozen() throws -> Frozen {
        let address = frozenAddress.load(ordering: .acquiring)
        if address != 0, let pointer = UnsafeRawPointer(bitPattern: address) {
            return Unretained<Frozen>(address: pointer).object
        }
        return try state.withLock { state in
            if let frozen = state.frozen { return frozen }
            let definition = state.definition
            let parents = definition.parents
            let model = DynamicModel(
                try TableSchema(name: name, columns: definition.columns, primaryKey: definition.primaryKey),
                parents: { try parents.map { try $0.frozen().model.table } })
            model.validationHook = state.validations
            let built = Frozen(model, types: definition.types)
            state.frozen = built
            frozenAddress.store(Int(bitPattern: Unretained(built).address), ordering: .releasing)
            return built
        }
    }
}
