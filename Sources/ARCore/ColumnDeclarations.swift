#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// What a `@Column` declaration says besides its type: its name, index and default value.
package struct ColumnDeclaration {
    package var name: String?
    package var index: IndexKind?
    package var value: DatabaseValue?
}

/// Where the names and indexes of `@Column` declarations wait for reflection, so that
/// records need not carry them.
///
/// Reflection makes an instance of a class inside ``recording(marking:probing:_:)``; each
/// `Column` initializer with a name or an index run there appends them to the recording, in
/// the order they run. Which field each one initialised is then found by making another
/// instance in which that declaration alone starts with another value (a probe), and seeing
/// which field holds it when ``Model``'s initializer runs (before the class's initializer
/// writes any column: ``declarations(of:prototype:recording:columns:)``). Records that the
/// initializer makes of other classes record their declarations too, and match no field.
/// Outside a recording, making a record costs one atomic load (in ``Model``'s initializer),
/// and one more per declaration with a name or an index (``columnDeclarationsAreRecording()``).
@usableFromInline
package enum ColumnDeclarations {
    /// A column field of a class being reflected: its offset in the object and its type.
    package typealias ColumnField = (offset: Int, kind: any ARCore.ColumnField.Type)

    /// The names and indexes recorded while one instance is made, in the order declared.
    /// `@unchecked Sendable`: made, filled and read by one thread, inside one `withValue`.
    package final class Recording: @unchecked Sendable {
        package var declarations: [(name: String?, index: IndexKind?, kind: any ARCore.ColumnField.Type)] = []
        /// The declaration (its position) that starts with a probe value instead of its own.
        let marked: Int?
        /// The probe the marked declaration took (`nil` when its type has no second value).
        var probe: DatabaseValue?
        /// The class whose instance's columns to read as its properties' initial values left
        /// them (when ``Model``'s initializer runs, before the rest of the class's own), and
        /// those columns.
        let probing: (type: Model.Type, columns: [ColumnField])?
        /// What those columns held then.
        var initialValues: [DatabaseValue?]?

        init(marked: Int?, probing: (type: Model.Type, columns: [ColumnField])?) {
            self.marked = marked
            self.probing = probing
        }
    }

    @TaskLocal private static var current: Recording?
    /// How many recordings are under way on any thread: the fast path checks this first.
    fileprivate static let active = Atomic<Int>(0)

    /// Runs `body` (which makes the instance reflection reads) with a recording in place; with
    /// `marked`, the declaration at that position starts with a probe value; with `probing`,
    /// the recording keeps the initial values of that class's columns.
    package static func recording<Result>(
        marking marked: Int? = nil, probing: (type: Model.Type, columns: [ColumnField])? = nil, _ body: () throws -> Result
    ) rethrows -> (Result, Recording) {
        let recording = Recording(marked: marked, probing: probing)
        active.add(1, ordering: .relaxed)
        defer { active.subtract(1, ordering: .relaxed) }
        let result = try $current.withValue(recording) { try body() }
        return (result, recording)
    }

    /// Whether this thread is making an instance for reflection (whose class may have no
    /// mapping yet).
    package static var isRecording: Bool { active.load(ordering: .relaxed) > 0 && current != nil }

    /// Notes a declaration with a name or an index in this thread's recording, if any.
    @usableFromInline @inline(never)
    package static func declare<Value: ColumnValue>(name: String?, index: IndexKind?, value: inout Value) {
        guard active.load(ordering: .relaxed) > 0, let recording = current else { return }
        if recording.declarations.count == recording.marked, let probe = ColumnProbes.distinctValue(from: value) {
            value = probe
            recording.probe = try? probe.toSQL()
        }
        recording.declarations.append((name, index, Column<Value>.self))
    }

    /// Called by ``Model``'s initializer: when reflection probes `record`'s class, keeps what
    /// its columns hold before the class's initializer writes any of them.
    @inline(__always)
    static func didInitialise(_ record: Model) {
        if active.load(ordering: .relaxed) > 0 { keepInitialValues(record) }
    }

    @inline(never)
    private static func keepInitialValues(_ record: Model) {
        guard let recording = current, let probing = recording.probing, recording.initialValues == nil,
              type(of: record) == probing.type else { return }
        recording.initialValues = probing.columns.map { record.fieldValue(at: $0.offset, kind: $0.kind) }
    }

    /// The declaration of each column field of `type` (offset and kind, in reflection order),
    /// given `prototype`, an instance made inside `recording`.
    package static func declarations(
        of type: Model.Type, prototype: Model, recording: Recording, columns: [ColumnField]
    ) -> [ColumnDeclaration] {
        var result = columns.map { ColumnDeclaration(value: prototype.fieldValue(at: $0.offset, kind: $0.kind)) }
        guard !recording.declarations.isEmpty else { return result }
        // The initial values, and those with each declaration in turn probed.
        let (unprobed, unprobedRecording) = Self.recording(probing: (type, columns)) { type.init() }
        let initial = withExtendedLifetime(unprobed) { unprobedRecording.initialValues }
        var assigned = Array(repeating: false, count: columns.count)
        for (position, declared) in recording.declarations.enumerated() {
            let candidates = columns.indices.filter { !assigned[$0] && columns[$0].kind == declared.kind }
            guard !candidates.isEmpty else { continue }
            let field: Int
            switch probedField(of: type, position: position, candidates: candidates, columns: columns, initial: initial) {
            case .field(let probed): field = probed
            // Another object's declaration (a record the initializer made).
            case .none: continue
            // No second value of the type to probe with (an enum that is not `CaseIterable`):
            // the first column of its type left.
            case .unknown: field = candidates[0]
            }
            assigned[field] = true
            result[field].name = declared.name
            result[field].index = declared.index
        }
        return result
    }

    /// Which field a declaration initialised, as probing found it.
    private enum Probed {
        case field(Int)
        /// None of the candidates: the declaration is another object's.
        case none
        /// No probe value for the type.
        case unknown
    }

    /// The one of `candidates` that the declaration at `position` initialises: the one holding
    /// a probe value in an instance made with that declaration marked, and not in `initial`.
    private static func probedField(
        of type: Model.Type, position: Int, candidates: [Int], columns: [ColumnField], initial: [DatabaseValue?]?
    ) -> Probed {
        let (probed, recording) = recording(marking: position, probing: (type, columns)) { type.init() }
        guard let probe = recording.probe else { return .unknown }
        guard let values = withExtendedLifetime(probed, { recording.initialValues }), let initial else { return .none }
        let holding = candidates.filter { values[$0] == probe && initial[$0] != probe }
        return holding.count == 1 ? .field(holding[0]) : .none
    }
}

/// Values that a column of a given type can hold, to write one that differs from a record's
/// (key path resolution, reflection's declarations).
package enum ColumnProbes {
    /// Values tried, in order, until one reads back different from the value given.
    private static let probes: [DatabaseValue] = [
        .integer(1), .integer(2), .real(1.5), .real(2.5), .text("a"), .text("b"),
        .text("00000000-0000-0000-0000-000000000001"), .text("00000000-0000-0000-0000-000000000002"),
        .blob(Data([1])), .blob(Data([2])), .text("[]"), .text("{}"), .text("[0]"), .null,
    ]

    /// A value of `Value` not equivalent to `original`: another case of a `CaseIterable`
    /// type, or the first probe that converts to one; `nil` when there is none.
    package static func distinctValue<Value: ColumnValue>(from original: Value) -> Value? {
        if let cases = Value.self as? any CaseIterable.Type,
           let different = cases.allCasesArray.compactMap({ $0 as? Value }).first(where: { !Value.isEquivalent($0, original) }) {
            return different
        }
        for probe in probes {
            if let value = try? Value.fromSQL(probe), !Value.isEquivalent(value, original) { return value }
        }
        return nil
    }
}

extension CaseIterable {
    fileprivate static var allCasesArray: [Any] { Array(allCases) }
}

/// Whether any thread is making an instance for reflection: one atomic load, checked (not
/// generic, so with no type metadata to reach) before ``ColumnDeclarations/declare(name:index:value:)``
/// by a `Column` initializer with a name or an index, for every record made. A function of no
/// argument: as a static method, its call went through a thunk passing the (unused) type on.
@usableFromInline @inline(never)
package func columnDeclarationsAreRecording() -> Bool { ColumnDeclarations.active.load(ordering: .relaxed) > 0 }
