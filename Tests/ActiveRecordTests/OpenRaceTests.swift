@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Opening an SQLite file that other processes are opening (and writing) at the same moment
/// waits for them, up to the busy timeout, instead of failing with "database is locked".
@Suite struct OpenRaceTests {
    /// Four processes open one new file at the same instant and each saves a row, 20 times
    /// over, each round a fresh file. The intended interleaving: every child reads the empty
    /// file (a shared lock each) and switches it to WAL, which needs the exclusive lock that
    /// the others' shared locks block; SQLite's busy handler does not wait for that upgrade, so
    /// before the fix about one round in seven had a child fail at open.
    @Test func fourProcessesOpenOneNewFileAtOnce() throws {
        for round in 1...20 {
            try withDatabaseLocation(.sqlite) { place in
                // Far enough ahead for four processes to start (about 50 ms each here).
                let start = Date().timeIntervalSince1970 + 0.2
                let children = try runStressChildren(Array(repeating: ["open-race", place.argument, String(start)], count: 4))
                for child in children {
                    #expect(child.status == 0 && child.output == "ok\n", "round \(round): status \(child.status), \(child.output)")
                }
                #expect(try Database(place.location).rows(#"SELECT count(*) FROM "Opened""#) == [[.integer(4)]], "round \(round)")
            }
        }
    }
}
