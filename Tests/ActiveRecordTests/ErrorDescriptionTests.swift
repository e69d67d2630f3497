@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 31, point 9: `localizedDescription`, which servers log, is the error's description.
@Suite("An error's localizedDescription")
struct ErrorDescriptionTests {
    @Test func isTheDescription() {
        let error = ActiveRecordError(.notFound, "User with id 7 no longer exists")
        #expect(error.localizedDescription == "notFound: User with id 7 no longer exists")   // was "The operation could not be completed. (ARCore.ActiveRecordError error 1.)"
        #expect((error as any Error).localizedDescription == error.description)
        #expect(error.errorDescription == error.description)
    }

    @Test(arguments: TestEngine.all) func ofAnEngineErrorCarriesItsCodeAndSQL(engine: TestEngine) throws {
        try withDatabase(engine) { db throws in
            do {
                try db.execute("SELECT nothing FROM nowhere")
                Issue.record("expected an error")
            } catch {
                #expect(error.localizedDescription == "\(error)")
                #expect(error.localizedDescription.contains("[SQL: SELECT nothing FROM nowhere]"))
                #expect(!error.localizedDescription.contains("could not be completed"))
            }
        }
    }
}
