// A child process for the tests that need several processes:
//
// A <path> of the form `postgres:<connection string>` names a PostgreSQL database instead.
//
//     ActiveRecordStressChild <path> <marker> <rows>
//         inserts `rows` rows tagged `marker` into the database at `path` in ONE transaction,
//         saying "inserting" once it has started, so that the parent can kill -9 it mid-way;
//     ActiveRecordStressChild migrate <path> <start>
//         waits until the clock reaches `start` (seconds since 1970), then uses a model whose
//         class has two columns the table lacks (automatic migration adds them) and saves one;
//     ActiveRecordStressChild saves <path> <marker> <rows> <start>
//         waits until `start`, then saves `rows` rows tagged `marker`, each on its own (autocommit);
//     ActiveRecordStressChild open <path>
//         opens `path` as given (relative to the working directory), saves a row, and prints
//         how many rows the writer and a reader connection see;
//     ActiveRecordStressChild bank <path> <tool> <transfers> <seed> <start>
//         waits until `start`, then makes `transfers` transfers between two random accounts
//         (BankAccount, or VersionedAccount for the optimistic tool): each loads both, changes
//         both balances and saves both in one transaction, protected by `tool` (`optimistic`,
//         `lock`, `reload-lock`, `serializable`, or `none`), retrying a transaction that fails
//         with a retryable error; prints "done <transfers> retries <n>";
//     ActiveRecordStressChild open-race <path> <start>
//         waits until `start`, then opens `path` (a new file, which other children open at the
//         same moment), saves a row and prints "ok";
//     ActiveRecordStressChild observed-commits <path> <note>
//         rolls a saved row back, then commits one noted `note` (see ObservedCommits.swift);
//     ActiveRecordStressChild quiet-migration <path> [drift]
//         configures no logging, makes a table with raw SQL (with `drift`, one more column
//         than the model declares), opens the database with a migrator whose rename step
//         runs, uses the model, and prints the steps that ran: the default logger prints
//         nothing on success, only the drift warning.
import ActiveRecord
import ActiveRecordPostgreSQL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A file path, or `postgres:<connection string>`.
func location(_ argument: String) -> DatabaseLocation {
    argument.hasPrefix("postgres:") ? .postgres(String(argument.dropFirst("postgres:".count))) : .file(argument)
}

final class CrashBatch: Model {
    @Column var marker: Int = 0
    @Column var n: Int = 0
}

/// The later version of a table the parent made with the columns `name` only.
final class Widened: Model {
    @Column var name: String = ""
    @Column var colour: String = "grey"
    @Column var size: Int = 0
}

final class Opened: Model {
    @Column var n: Int = 0
}

/// An account of the bank tests (the parent declares the same class).
final class BankAccount: Model {
    @Column var balance: Int = 0
}

/// The same, locked optimistically.
final class VersionedAccount: Model {
    @Column var balance: Int = 0
    @Column var lockVersion: Int = 0
}

/// A small deterministic generator (xorshift), so that a run can be repeated.
struct Xorshift {
    var state: UInt64
    mutating func next(_ bound: Int) -> Int {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return Int(state % UInt64(bound))
    }
}

/// One transfer of `amount` from `from` to `to`, in one transaction, as `tool` protects it.
func transfer(_ database: Database, _ tool: String, from: Int64, to: Int64, amount: Int) throws {
    func move<Account: Model>(_ first: Account, _ second: Account, _ balance: ReferenceWritableKeyPath<Account, Int>) throws {
        let (source, target) = first.id == from ? (first, second) : (second, first)
        source[keyPath: balance] -= amount
        target[keyPath: balance] += amount
        try source.save()
        try target.save()
    }
    let ids = [Swift.min(from, to), Swift.max(from, to)]  // every transaction reads them in one order
    switch tool {
    case "optimistic":
        try database.transaction {
            try move(try VersionedAccount.find(ids[0])!, try VersionedAccount.find(ids[1])!, \.balance)
        }
    case "lock":
        try database.transaction {
            let accounts = try BankAccount.query().where("id IN %@", ids).order(by: "id").lock().fetch()
            try move(accounts[0], accounts[1], \.balance)
        }
    case "reload-lock":
        try database.transaction {
            let first = try BankAccount.find(ids[0])!, second = try BankAccount.find(ids[1])!
            try first.reload(lock: true)
            try second.reload(lock: true)
            try move(first, second, \.balance)
        }
    case "serializable":
        try database.transaction(isolation: .serializable) {
            try move(try BankAccount.find(ids[0])!, try BankAccount.find(ids[1])!, \.balance)
        }
    case "none":
        try database.transaction { try move(try BankAccount.find(ids[0])!, try BankAccount.find(ids[1])!, \.balance) }
    default:
        fail("unknown tool \(tool)")
    }
}

/// The table after the rename the quiet migration runs.
final class Renamed: Model {
    @Column var text: String = ""
}

/// Writes `line` to standard output at once, unbuffered (the parent waits for it through a pipe).
func say(_ line: String) { write(line, to: 1) }

/// Writes `line` and a line break to file descriptor `descriptor`, unbuffered.
func write(_ line: String, to descriptor: Int32) {
    var text = line + "\n"
    text.withUTF8 { _ = write(descriptor, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    write(message, to: 2)
    exit(2)
}

let arguments = CommandLine.arguments
do {
    switch arguments.dropFirst().first {
    case "migrate":
        guard arguments.count == 4, let start = Double(arguments[3]) else { fail("usage: migrate <path> <start>") }
        let database = try Database(location(arguments[2]))
        while Date().timeIntervalSince1970 < start { usleep(200) }
        try database.use { try Widened.create(["name": "from \(getpid())", "colour": "red", "size": 3]) }
        print("migrated")
    case "saves":
        guard arguments.count == 6, let marker = Int(arguments[3]), let rows = Int(arguments[4]), let start = Double(arguments[5])
        else { fail("usage: saves <path> <marker> <rows> <start>") }
        let database = try Database(location(arguments[2]))
        while Date().timeIntervalSince1970 < start { usleep(200) }
        try database.use {
            for n in 0..<rows { try CrashBatch.create(["marker": marker, "n": n]) }
        }
        print("saved")
    case "bank":
        guard arguments.count == 7, let transfers = Int(arguments[4]), let seed = UInt64(arguments[5]),
              let start = Double(arguments[6]) else { fail("usage: bank <path> <tool> <transfers> <seed> <start>") }
        let tool = arguments[3]
        let database = try Database(location(arguments[2]))
        var random = Xorshift(state: seed | 1)
        var retries = 0
        try database.use {
            let ids = tool == "optimistic" ? try VersionedAccount.all().map(\.id) : try BankAccount.all().map(\.id)
            guard ids.count >= 2 else { fail("the bank has \(ids.count) accounts") }
            while Date().timeIntervalSince1970 < start { usleep(200) }
            for _ in 0..<transfers {
                let from = random.next(ids.count)
                let to = (from + 1 + random.next(ids.count - 1)) % ids.count
                let amount = 1 + random.next(50)
                while true {
                    do {
                        try transfer(database, tool, from: ids[from]!, to: ids[to]!, amount: amount)
                        break
                    } catch let error as ActiveRecordError where error.isRetryable {
                        retries += 1
                    }
                }
            }
        }
        print("done \(transfers) retries \(retries)")
    case "open":
        guard arguments.count == 3 else { fail("usage: open <path>") }
        let database = try Database(.file(arguments[2]))
        try database.use {
            try Opened.create(["n": 1])
            var writerCount = 0
            try database.transaction { writerCount = try Opened.count() }
            print("path \(database.path) writer \(writerCount) reader \(try Opened.count())")
        }
    case "observed-commits":
        try observedCommits(arguments)
    case "open-race":
        guard arguments.count == 4, let start = Double(arguments[3]) else { fail("usage: open-race <path> <start>") }
        while Date().timeIntervalSince1970 < start { usleep(100) }
        let database = try Database(.file(arguments[2]))
        try database.use { _ = try Opened.create(["n": 1]) }
        print("ok")
    case "quiet-migration":
        guard arguments.count == 3 || arguments.count == 4 && arguments[3] == "drift" else {
            fail("usage: quiet-migration <path> [drift]")
        }
        let extra = arguments.count == 4 ? #", "mood" TEXT"# : ""
        try Database(.file(arguments[2]), automaticMigrations: false)
            .execute(#"CREATE TABLE "Renamed" ("id" INTEGER PRIMARY KEY, "createdAt" REAL, "updatedAt" REAL, "body" TEXT"# + extra + ")")
        var migrator = Migrator()
        migrator.register("rename Renamed.body to text") { try $0.renameColumn("body", to: "text", in: "Renamed") }
        let database = try Database(.file(arguments[2]), migrator: migrator)
        try database.use { try Renamed.create(["text": "kept"]) }
        print("applied: \(try migrator.appliedMigrations(in: database))")
    case "cancel-latency":
        // cancel-latency <path> <rounds>: starts a query that runs for a minute in an awaited
        // read, cancels its task 50 ms later, and measures how long the task takes to throw
        // CancellationError; prints the median and the largest of `rounds`, in milliseconds.
        guard arguments.count == 4, let rounds = Int(arguments[3]) else { fail("usage: cancel-latency <path> <rounds>") }
        let database = try Database(location(arguments[2]))
        print(CancelLatency(database: database, rounds: rounds, postgres: arguments[2].hasPrefix("postgres:")).run())
    case "async-overhead":
        // async-overhead <path> <n>: n finds by id, synchronous then awaited, one after another;
        // prints the median of 5 rounds of each, in microseconds per find.
        guard arguments.count == 4, let n = Int(arguments[3]) else { fail("usage: async-overhead <path> <n>") }
        let database = try Database(location(arguments[2]))
        print(AsyncOverhead(database: database, finds: n).run())
    case "replica-cost":
        // replica-cost <conninfo> <n>: n creates (then n creates each followed by a find) on a
        // PostgreSQL database without replicas and on one with the same server as its replica;
        // prints the median of 5 rounds of each, in microseconds per create.
        guard arguments.count == 4, let n = Int(arguments[3]) else { fail("usage: replica-cost <conninfo> <n>") }
        let plain = try Database(.postgres(arguments[2]))
        let replicated = try Database(.postgres(arguments[2], replicas: [arguments[2]]))
        print(try ReplicaCost(plain: plain, replicated: replicated, writes: n).run())
    case "topology-writer":
        // The topology tests' writer: see Topology.swift.
        try TopologyWriter(arguments).run()
    case "async-load":
        // async-load <path> <tasks>: `tasks` concurrent tasks, each an awaited find and save;
        // prints how many completed and failed, and the process's thread count before and at
        // its peak (sampled every 2 ms), beside the database's thread bound.
        guard arguments.count == 4, let tasks = Int(arguments[3]) else { fail("usage: async-load <path> <tasks>") }
        let database = try Database(location(arguments[2]))
        let report = AsyncLoad(database: database, tasks: tasks).run()
        print(report)
    default:
        guard arguments.count == 4, let marker = Int(arguments[2]), let rows = Int(arguments[3]) else {
            fail("usage: ActiveRecordStressChild <path> <marker> <rows> | migrate <path> <start> | open <path> | open-race <path> <start>")
        }
        let database = try Database(location(arguments[1]))
        try database.use {
            try database.transaction {
                for n in 0..<rows {
                    let row = CrashBatch()
                    row.marker = marker
                    row.n = n
                    try row.save()
                    if n == 100 { say("inserting") }
                }
            }
        }
        say("committed")
    }
} catch {
    print("error: \(error)")
    exit(1)
}
