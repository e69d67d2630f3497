// A child process for the crash tests: inserts `rows` rows tagged `marker` into
// the database at `path` in ONE transaction, saying "inserting" once it has
// started, so that the parent can kill -9 it in the middle.
//
//     ActiveRecordStressChild <path> <marker> <rows>
import ActiveRecord
import Foundation

final class CrashBatch: Model {
    @Column var marker: Int = 0
    @Column var n: Int = 0
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let marker = Int(arguments[2]), let rows = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: ActiveRecordStressChild <path> <marker> <rows>\n".utf8))
    exit(2)
}
do {
    let database = try Database(.file(arguments[1]))
    try database.use {
        try database.transaction {
            for n in 0..<rows {
                let row = CrashBatch()
                row.marker = marker
                row.n = n
                try row.save()
                if n == 100 { FileHandle.standardOutput.write(Data("inserting\n".utf8)) }
            }
        }
    }
    FileHandle.standardOutput.write(Data("committed\n".utf8))
} catch {
    print("error: \(error)")
    exit(1)
}
