@_spi(Engines) import ARCore
import ActiveRecord

/// `ar_database`: a database and its last error message.
final class DatabaseHandle: Handle {
    let database: Database
    /// Identifies the database's messages in ``LastErrors``.
    let serial = LastErrors.newSerial()
    init(_ database: Database) {
        self.database = database
        super.init(kind: .database)
    }

    /// Runs `body` with this database current, turning errors into result codes.
    func run(_ body: () throws -> ar_result) -> ar_result {
        do {
            return try database.use(body)
        } catch {
            return fail(error)
        }
    }

    /// Runs `body`, which does not touch the database (a getter or setter), turning errors
    /// into result codes without the cost of making the database current.
    func catching(_ body: () throws -> ar_result) -> ar_result {
        do {
            return try body()
        } catch {
            return fail(error)
        }
    }

    /// Records `error` as the last error and returns its code.
    func fail(_ error: any Error) -> ar_result {
        LastErrors.set(describe(error), for: serial, error: error)
        return ar_result(error)
    }

    func fail(_ code: ar_result, _ message: String) -> ar_result {
        LastErrors.set(message, for: serial)
        return code
    }
}

/// Records the last error of a call that has no database (ar_open, NULL handles).
func failWithoutDatabase(_ code: ar_result, _ message: String) -> ar_result {
    LastErrors.set(message, for: 0)
    return code
}

func describe(_ error: any Error) -> String {
    (error as? ActiveRecordError)?.description ?? "\(error)"
}
