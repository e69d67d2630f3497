// expect-error: 'transaction(isolation:_:)' is unavailable: transaction { } returns how it ended (TransactionOutcome); use withTransaction { } to return the block's value
// A block that returns a value does not make transaction { } return it: that form would give
// the same-looking code another meaning (a Rollback then escapes the savepoint). withTransaction does.
import ActiveRecord

final class Note: Model {
    @Column var text: String = ""
}

let db = try Database(.inMemory)
let note = try db.transaction {
    let made = try Note.create(["text": "a"])
    return made
}
