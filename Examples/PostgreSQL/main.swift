// The same models on PostgreSQL: the switch is the one line that configures the database.
//
//   make run-postgres                       starts a throwaway server and runs this on it
//   ActiveRecordPostgreSQLExample <url>     on your server (or set DATABASE_URL)
//
// Four threads move money between two accounts at once, each transfer in a transaction of
// its own (each holds a pooled connection: PostgreSQL has no single writer). Each transfer
// changes the accounts in one order (by owner), so that two transfers in opposite directions
// cannot deadlock; should PostgreSQL still end one (a deadlock, or a serialization failure
// under a stricter isolation), the library reports `.transactionConflict` (retryable) and
// the transfer runs again.
import ActiveRecord
import ActiveRecordPostgreSQL
import Dispatch
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

/// Runs `body` again while it loses a conflict with a concurrent transaction.
func retrying(_ body: () throws -> Void) throws {
    while true {
        do {
            return try body()
        } catch let error as ActiveRecordError where error.isRetryable {
            continue
        }
    }
}

guard let url = CommandLine.arguments.dropFirst().first ?? ProcessInfo.processInfo.environment["DATABASE_URL"] else {
    var usage = "usage: ActiveRecordPostgreSQLExample <postgresql://…> (or set DATABASE_URL)\n"
    usage.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }  // to standard error
    exit(2)
}

do {
    let database = try Database.configure(.postgres(url))  // instead of .file(…): nothing else changes
    try Account.destroyAll()
    try Account.create(["owner": "alice", "balance": 100])
    try Account.create(["owner": "bob", "balance": 100])
    print("opened: \(try Account.count()) accounts, total \(Int(try Account.query().sum("balance")))")

    let failures = DispatchQueue(label: "failures")
    nonisolated(unsafe) var failed: [String] = []
    DispatchQueue.concurrentPerform(iterations: 4) { worker in
        let (from, to) = worker % 2 == 0 ? ("alice", "bob") : ("bob", "alice")
        do {
            for _ in 0..<25 {
                try retrying {
                    try database.transaction {
                        for owner in [from, to].sorted() {
                            let change: Int64 = owner == from ? -1 : 1
                            try database.execute(
                                #"UPDATE "Account" SET "balance" = "balance" + ? WHERE "owner" = ?"#, [.integer(change), .text(owner)])
                        }
                    }
                }
            }
        } catch {
            failures.sync { failed.append("\(error)") }
        }
    }
    guard failures.sync(execute: { failed.isEmpty }) else { throw ActiveRecordError(.misuse, failures.sync { failed.joined(separator: "; ") }) }
    let balances = try Account.query().order(by: "owner").fetch().map { "\($0.owner) \($0.balance)" }
    print("transferred: 100 transfers on 4 threads; \(balances.joined(separator: ", ")); total \(Int(try Account.query().sum("balance")))")
} catch {
    print("error: \(error)")
    exit(1)
}
