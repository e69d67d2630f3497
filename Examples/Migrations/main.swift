// Migrations on a file that survives between two runs of the program, as an app's versions
// meet one database: version 1 creates its table (automatic migration); version 2 renamed a
// property, added one and dropped one, and ships a versioned migration for the rename.
//
//     swift run ActiveRecordExampleMigrations PATH 1     the first version's run
//     swift run ActiveRecordExampleMigrations PATH 2     the next version's, on the same file
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging

/// Version 1 of the app's note.
enum Version1 {
    final class Note: Model {
        override class var tableName: String { "Note" }
        @Column var title: String = ""
        @Column var body: String = ""                  // version 2 calls it text
        @Column var mood: String = "fine"              // version 2 no longer declares it
    }
}

/// Version 2: body renamed to text (a versioned migration moves the data), a new column
/// (automatic migration adds it), mood no longer declared (left alone, with its data).
final class Note: Model {
    @Column var title: String = ""
    @Column var text: String = ""
    @Column var starred: Bool = false
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let path = arguments.first, let version = Int(arguments.last!), (1...2).contains(version) else {
    print("usage: ActiveRecordExampleMigrations PATH 1|2")
    exit(2)
}

do {
    if version == 1 {
        let database = try Database(.file(path))
        try database.use {
            try Version1.Note.create(["title": "groceries", "body": "milk, bread"])
            try Version1.Note.create(["title": "ideas", "body": "an ORM in Swift", "mood": "curious"])
        }
        print("version 1: created \(try database.use { try Version1.Note.count() }) notes; columns: "
              + (try columns(database)).joined(separator: ", "))
    } else {
        var migrator = Migrator()
        migrator.register("rename Note.body to text") { try $0.renameColumn("body", to: "text", in: "Note") }
        // The app logs the library's steps (at .info; left alone, the library logs only
        // warnings): swift-log's default handler writes them to standard error.
        var logger = Logger(label: "notes.db")
        logger.logLevel = .info
        let database = try Database(.file(path))
        database.logger = logger
        // The steps this file has not run yet, before any model touches it.
        try migrator.apply(to: database)
        print("version 2: migrations applied: \(try migrator.appliedMigrations(in: database))")
        print("drift before use: \(try database.drift(of: [Note.self]).map(\.description))")
        database.logger = nil    // what automatic migration leaves alone (mood) is reported above
        try database.use {
            let notes = try Note.query().order(by: "title").fetch()
            for note in notes { print("  \(note.title): \(note.text) (starred: \(note.starred))") }
            if let ideas = notes.first(where: { $0.title == "ideas" }) {
                ideas.starred = true
                try ideas.save()
            }
        }
        print("columns now: " + (try columns(database)).joined(separator: ", "))
        print("mood kept for: \(try database.rows(#"SELECT "title", "mood" FROM "Note" ORDER BY "title""#).map { "\($0[0].textValue ?? "") \($0[1].textValue ?? "")" })")
    }
} catch {
    print("error: \(error)")
    exit(1)
}

func columns(_ database: Database) throws -> [String] {
    try database.rows(#"SELECT "name" FROM pragma_table_info('Note') ORDER BY "cid""#).map { $0[0].textValue ?? "" }
}
