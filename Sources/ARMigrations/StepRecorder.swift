@_spi(Engines) import ARCore
import Synchronization

/// The steps of one migration as ``Migrator/revert(last:on:)`` reads them: the migration runs
/// against a ``MigrationContext`` that records each step's inverse instead of running it
/// (Rails' command recorder). Steps with no inverse are listed by what they were.
final class StepRecorder: Sendable {
    typealias Step = @Sendable (MigrationContext) throws -> Void

    private let recorded = Mutex<(inverses: [Step], irreversible: [String])>(([], []))

    /// Records a step undone by `inverse`.
    func reversible(_ inverse: @escaping Step) {
        recorded.withLock { $0.inverses.append(inverse) }
    }

    /// Records a step that cannot be undone, as it was written (`dropColumn("legacy", from: "User")`).
    func irreversible(_ step: String) {
        recorded.withLock { $0.irreversible.append(step) }
    }

    /// The inverses, last step first (the order that undoes them).
    var inverses: [Step] { recorded.withLock { $0.inverses.reversed() } }

    /// The steps that cannot be undone, in order.
    var irreversibleSteps: [String] { recorded.withLock { $0.irreversible } }
}

extension ActiveRecordError.Code {
    /// A versioned migration cannot be reverted: one of its steps has no inverse (a dropped
    /// column, raw SQL, a table dropped without its description) and it has no `down`, or it
    /// is not registered in the migrator. Nothing was reverted.
    public static let irreversibleMigration = Self(rawValue: "irreversibleMigration")
    /// An index, CHECK constraint or foreign key that the table does not have (a migration
    /// step named it).
    public static let unknownConstraint = Self(rawValue: "unknownConstraint")
}
