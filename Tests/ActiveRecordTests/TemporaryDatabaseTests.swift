import ActiveRecord
import Foundation
import Testing

@Suite struct TemporaryDatabaseTests {
    final class Note: Model {
        @Column var text: String = ""
    }

    /// `.temporary` leaves nothing behind: its directory goes with the database.
    @Test func aTemporaryDatabasesDirectoryIsRemovedWithTheDatabase() throws {
        var path = ""
        do {
            let db = try Database(.temporary)
            path = db.path
            try db.use {
                let note = Note(); note.text = "kept while open"; try note.save()
                // A reader connection too (WAL files beside the database).
                #expect(try db.read { try Note.count() } == 1)
            }
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(path.hasSuffix("/test.sqlite"))
        }
        let directory = (path as NSString).deletingLastPathComponent
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    /// A file the caller names is never removed.
    @Test func aNamedFileStays() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kept.sqlite").path
        do {
            let db = try Database(.file(path))
            try db.use { let note = Note(); note.text = "x"; try note.save() }
        }
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
