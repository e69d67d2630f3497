/// How a locking read (`query().lock()`, `reload(lock:)`) meets a row that another
/// transaction has locked.
///
/// A locking read locks the rows it returns until its transaction ends, so that no other
/// transaction changes them in between: read, change and save without losing another
/// transaction's update. On PostgreSQL it is `SELECT … FOR UPDATE`; on SQLite, the write
/// transaction holds the whole database's write lock from its start (`BEGIN IMMEDIATE`), so
/// the rows are locked already and nothing is added to the SQL (no row is ever locked by
/// another transaction there: every behaviour reads all the rows).
public enum RowLock: Sendable, Hashable {
    /// Waits until the other transaction ends (`FOR UPDATE`).
    case wait
    /// Fails at once with `.busy` instead of waiting (`FOR UPDATE NOWAIT`).
    case noWait
    /// Leaves out the rows other transactions have locked (`FOR UPDATE SKIP LOCKED`): a
    /// queue's workers each take rows no other worker holds.
    case skipLocked
}
