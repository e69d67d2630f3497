@_spi(Engines) import ARCore
import ActiveRecord
import Testing

extension EngineConformance {
    /// Transactions, savepoints, and what a failed statement does to them.
    static let transactionChecks: [Check] = [
        check("commitAndRollback", "a committed transaction is seen by another connection; a rolled back one leaves nothing") { c in
            try c.createTable("ledger", [("n", .integer, "")])
            let other = try Database(c.location)
            other.logger = nil
            func count(_ database: Database) throws -> DatabaseValue {
                try database.withConnection { try $0.rows(#"SELECT count(*) FROM "ledger""#)[0][0] }
            }
            c.expect(try c.database.transaction { _ = try c.insert(into: "ledger", ["n": .integer(1)]) }, .committed, "the outcome")
            c.expect(try count(other), .integer(1), "another connection's count after a commit")
            struct Failure: Error {}
            do {
                try c.database.transaction {
                    try c.insert(into: "ledger", ["n": .integer(2)])
                    throw Failure()
                }
                c.fail("the transaction's error was not rethrown")
            } catch is Failure {}
            c.expect(try c.database.transaction { _ = try c.insert(into: "ledger", ["n": .integer(3)]); throw Rollback() }, .rolledBack, "the outcome")
            c.expect(try count(c.database), .integer(1), "the count after two rollbacks")
            c.expect(try count(other), .integer(1), "another connection's count after two rollbacks")
            for isolation in [TransactionIsolation.readCommitted, .repeatableRead, .serializable] {
                try c.database.transaction(isolation: isolation) { _ = try c.insert(into: "ledger", ["n": .integer(4)]) }
            }
            c.expect(try count(other), .integer(4), "after a transaction at each isolation level")
        },
        check("nestedTransactions", "a transaction inside a transaction is a savepoint: it rolls back alone, and its commit waits for the outer one") { c in
            try c.createTable("ledger", [("n", .integer, "")])
            let database = c.database
            try database.transaction {
                try c.insert(into: "ledger", ["n": .integer(1)])
                c.expect(try database.transaction { _ = try c.insert(into: "ledger", ["n": .integer(2)]); throw Rollback() }, .rolledBack, "inner")
                try database.transaction {
                    try c.insert(into: "ledger", ["n": .integer(3)])
                    try database.transaction {
                        try c.insert(into: "ledger", ["n": .integer(4)])
                        try database.transaction { _ = try c.insert(into: "ledger", ["n": .integer(5)]) }
                        throw Rollback()
                    }
                }
            }
            c.expect(try c.rows(#"SELECT "n" FROM "ledger" ORDER BY "n""#).map { $0[0] }, [.integer(1), .integer(3)], "what was committed")
            try database.transaction {
                try database.transaction { _ = try c.insert(into: "ledger", ["n": .integer(6)]) }
                throw Rollback()
            }
            c.expect(try c.scalar(#"SELECT count(*) FROM "ledger""#), .integer(2), "a savepoint released in a rolled back transaction")
        },
        check("openTransactionState", "hasOpenTransaction is true from BEGIN to its end, in savepoints too, and false outside") { c in
            try c.createTable("ledger", [("n", .integer, "")])
            let database = c.database
            c.expect(try c.withConnection { $0.hasOpenTransaction }, false, "outside a transaction")
            try database.transaction {
                c.expect(try c.withConnection { $0.hasOpenTransaction }, true, "in a transaction")
                try database.transaction {
                    try c.insert(into: "ledger", ["n": .integer(1)])
                    c.expect(try c.withConnection { $0.hasOpenTransaction }, true, "in a savepoint")
                }
                c.expect(try c.withConnection { $0.hasOpenTransaction }, true, "after the savepoint")
            }
            c.expect(try c.withConnection { $0.hasOpenTransaction }, false, "after the commit")
            try database.transaction { throw Rollback() }
            c.expect(try c.withConnection { $0.hasOpenTransaction }, false, "after a rollback")
        },
        check("failedStatementInTransaction", "after a failed statement, isInFailedTransaction is failedStatementAbortsTransaction, and commit agrees") { c in
            try c.createTable("ledger", [("n", .integer, "UNIQUE")])
            let aborts = c.dialect.failedStatementAbortsTransaction
            c.expect(try c.withConnection { $0.isInFailedTransaction }, false, "outside a transaction")
            do {
                try c.database.transaction {
                    try c.insert(into: "ledger", ["n": .integer(1)])
                    c.expect(try c.withConnection { $0.isInFailedTransaction }, false, "before the failure")
                    c.expectError("a duplicate in the transaction", matching: \.isUniqueViolation) {
                        try c.insert(into: "ledger", ["n": .integer(1)])
                    }
                    try c.withConnection { connection in
                        c.expect(connection.isInFailedTransaction, aborts, "isInFailedTransaction after the failure")
                        c.expect(connection.hasOpenTransaction, true, "hasOpenTransaction after the failure (even aborted)")
                    }
                }
                c.expect(aborts, false, "the commit of an aborted transaction succeeded")
            } catch let error as ActiveRecordError where error.code == .transactionAborted {
                c.expect(aborts, true, "the commit of a transaction that survives a failed statement threw .transactionAborted")
            }
            c.expect(try c.scalar(#"SELECT count(*) FROM "ledger""#), .integer(aborts ? 0 : 1), "the rows committed")
            c.expect(try c.withConnection { $0.isInFailedTransaction }, false, "after the transaction")
        },
        check("failedStatementInSavepoint", "a statement that fails in a savepoint rolls back only the savepoint, on every engine") { c in
            try c.createTable("ledger", [("n", .integer, "UNIQUE")])
            try c.database.transaction {
                try c.insert(into: "ledger", ["n": .integer(1)])
                c.expectError("a duplicate in a savepoint", matching: \.isUniqueViolation) {
                    try c.database.transaction { _ = try c.insert(into: "ledger", ["n": .integer(1)]) }
                }
                c.expect(try c.withConnection { $0.isInFailedTransaction }, false, "after the savepoint's rollback")
                try c.insert(into: "ledger", ["n": .integer(2)])
            }
            c.expect(try c.rows(#"SELECT "n" FROM "ledger" ORDER BY "n""#).map { $0[0] }, [.integer(1), .integer(2)], "the rows committed")
        },
        check("lockStatements", "the row lock clause and the schema lock statements run in a transaction, and the locked query returns its rows") { c in
            try c.createTable("accounts", [("balance", .integer, "")])
            for balance in [10, 20] { _ = try c.insert(into: "accounts", ["balance": .integer(Int64(balance))]) }
            try c.database.transaction {
                for statement in c.dialect.schemaLockSQL() { try c.execute(statement) }
                for lock in [RowLock.wait, .noWait, .skipLocked] {
                    let sql = #"SELECT "accounts"."id" FROM "accounts" ORDER BY "accounts"."id" LIMIT ? OFFSET ?"#
                        + c.dialect.rowLockClause(lock, of: "accounts")
                    c.expect(try c.rows(sql, [c.dialect.unlimited, .integer(0)]).map { $0[0] }, [.integer(1), .integer(2)], "\(lock)")
                }
            }
        },
    ]
}
