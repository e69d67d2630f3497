// Threads and tasks: one Database shared by several tasks, writing in transactions and
// reading on reader connections at the same time; every write is kept, every read sees
// whole transactions.
//
//     swift run ActiveRecordExampleThreads [path]      a file in a temporary directory by default
import ActiveRecord
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

final class Account: Model {
    @Column(index: .unique) var owner: String = ""
    @Column var balance: Int = 0
}

final class Transfer: Model {
    @Column var fromOwner: String = ""
    @Column var toOwner: String = ""
    @Column var amount: Int = 0
}

let owners = ["ana", "ben", "cho", "dev"]

@main
struct ThreadsExample {
    static func main() async {
        do {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("activerecord-threads-\(getpid())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = CommandLine.arguments.dropFirst().first ?? directory.appendingPathComponent("bank.sqlite").path
            let db = try Database(.file(path))
            try db.use {
                _ = try Transfer.destroyAll()
                _ = try Account.destroyAll()
                for owner in owners { try Account.create(["owner": owner, "balance": 1_000]) }
            }
            print("4 accounts of 1000: total \(try await total(db))")

            // Four tasks, each moving money 50 times in transactions (a transfer moves money
            // between two accounts and records itself), while two tasks read the total.
            let readsSawTotal = try await withThrowingTaskGroup(of: Set<Int>.self) { group in
                for (index, owner) in owners.enumerated() {
                    let to = owners[(index + 1) % owners.count]
                    group.addTask {
                        for step in 0..<50 { try await transfer(db, from: owner, to: to, amount: step % 7 + 1) }
                        return []
                    }
                }
                for _ in 0..<2 {
                    group.addTask {
                        var seen = Set<Int>()
                        for _ in 0..<50 { seen.insert(try await total(db)) }
                        return seen
                    }
                }
                var seen = Set<Int>()
                for try await totals in group { seen.formUnion(totals) }
                return seen
            }
            print("every read during the transfers saw a total of \(readsSawTotal.sorted().map(String.init).joined(separator: ", "))")
            let (transfers, moved) = try await db.read {
                (try Transfer.count(), try Transfer.all().reduce(0) { $0 + $1.amount })
            }
            print("transfers recorded: \(transfers), money moved: \(moved)")
            let balances = try await db.read { try Account.query().order(by: "owner").fetch().map { "\($0.owner) \($0.balance)" } }
            print("balances: \(balances.joined(separator: ", ")); total \(try await total(db))")
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }

    /// Moves `amount` from one account to another, recording it, in one transaction.
    static func transfer(_ db: Database, from: String, to: String, amount: Int) async throws {
        try await db.write {
            let source = try Account.query().where("owner = %@", from).first()!
            let target = try Account.query().where("owner = %@", to).first()!
            source.balance -= amount
            target.balance += amount
            try source.save()
            try target.save()
            try Transfer.create(["fromOwner": from, "toOwner": to, "amount": amount])
        }
    }

    /// The sum of all balances, read in one read transaction.
    static func total(_ db: Database) async throws -> Int {
        try await db.read { try Account.all().reduce(0) { $0 + $1.balance } }
    }
}
