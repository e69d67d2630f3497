@_spi(Engines) import ARCore
import ARConformance
import ActiveRecord
import Testing

/// Issue 32, point 4: both engines keep every promise of the engine contract, checked by the
/// suite a third engine would run (`ARConformance`), each check on a fresh database: a file in
/// a temporary directory for SQLite, a schema of its own for PostgreSQL.
@Suite("Engine conformance")
struct EngineConformanceTests {
    @Test(arguments: TestEngine.all) func theEngineKeepsEveryPromiseOfTheContract(engine: TestEngine) {
        EngineConformance(engine: engine.rawValue) { body in
            try withDatabaseLocation(engine) { try body($0.location) }
        }.runAll()
    }

    @Test func everyCheckHasAUniqueNameAndAPromise() {
        let names = EngineConformance.checks.map(\.name)
        #expect(Set(names).count == names.count, "\(names)")
        #expect(EngineConformance.checks.allSatisfy { !$0.promise.isEmpty })
    }
}
