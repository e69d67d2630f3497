@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// The database of `use { }` is read straight from the Concurrency runtime on the compilers
/// that path was checked with, through `TaskLocal.get()` elsewhere: both must find the same
/// database, in nested blocks, in child and detached tasks and on other threads.
@Suite struct TaskLocalLookupTests {
    private static func address(_ database: Database?) -> UnsafeRawPointer? {
        database.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
    }

    private static func expectBothFind(_ expected: Database?, _ place: String) {
        #expect(Database.scopedAddressFromRuntime() == address(expected), "runtime look-up, \(place)")
        #expect(Database.scopedAddressPortably() == address(expected), "portable look-up, \(place)")
    }

    @Test func bothLookUpsFindTheDatabaseOfTheInnermostUse() async throws {
        let outer = try Database(.inMemory)
        let inner = try Database(.inMemory)
        Self.expectBothFind(nil, "outside any use")
        outer.use {
            Self.expectBothFind(outer, "in use")
            inner.use { Self.expectBothFind(inner, "in a nested use") }
            Self.expectBothFind(outer, "after the nested use")
            let thread = Thread { Self.expectBothFind(nil, "on another thread") }
            thread.start()
            while !thread.isFinished { usleep(1_000) }
        }
        await outer.use {
            await Task { Self.expectBothFind(outer, "in a child task") }.value
            await Task.detached { Self.expectBothFind(nil, "in a detached task") }.value
            await inner.use { () async in
                await Task.yield()
                Self.expectBothFind(inner, "in a nested async use")
            }
        }
        Self.expectBothFind(nil, "after every use")
    }
}
