import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A row of the cross-process observation tests (the parent declares the same class).
final class Sighting: Model {
    @Column var note: String = ""
}

/// `observed-commits <path> <note>`: for a parent observing `Sighting`, a transaction that
/// saves a row and rolls back (which no observer may hear of), then, 300 ms later (well apart
/// from it, so that a delivery for it would not be folded into the next), one that commits a
/// row noted `note`. Prints "committed".
func observedCommits(_ arguments: [String]) throws {
    guard arguments.count == 4 else { fail("usage: observed-commits <path> <note>") }
    let database = try Database(location(arguments[2]))
    try database.use {
        struct Undo: Error {}
        do {
            try database.transaction {
                try Sighting.create(["note": "rolled back"])
                throw Undo()
            }
        } catch is Undo {}
        usleep(300_000)
        try Sighting.create(["note": arguments[3]])
    }
    print("committed")
}
