@_spi(Engines) import ARCore
// Result codes and type tags of the C ABI.
import ActiveRecord

/// Result codes: every call that can fail returns one. `AR_OK` is 0.
@c public enum ar_result: Int32 {
    /// Success.
    case ok = 0
    /// Iteration finished: no more records (ar_query_next).
    case done = 1
    /// No such record (ar_find, ar_record_reload).
    case notFound = 2
    /// A NULL or wrong handle or argument, or a call out of order.
    case misuse = 3
    /// A column (or table) the model does not have.
    case unknownColumn = 4
    /// A value of the wrong type for the column, or a getter of the wrong type.
    case typeMismatch = 5
    /// A value that cannot be stored (NaN, a malformed decimal).
    case invalidValue = 6
    /// A predicate with a syntax error, or placeholders and values that do not match.
    case invalidPredicate = 7
    /// A UNIQUE, NOT NULL or foreign-key constraint failed.
    case constraint = 8
    /// The record failed its validations (see ar_record_error_count).
    case validationFailed = 9
    /// The database cannot be opened (missing directory, permissions).
    case cannotOpen = 10
    /// The file is not an SQLite database.
    case notADatabase = 11
    /// The database is read-only.
    case readOnly = 12
    /// Any other error (see ar_last_error).
    case error = 13
    /// The transaction lost to another one and may succeed if run again, reading its records
    /// anew: a conflict or deadlock (PostgreSQL), a record changed since it was loaded (its
    /// lockVersion column no longer matches), or a database that stayed busy. Roll back (when
    /// in ar_begin), then retry the whole transaction.
    case retry = 14
}

/// Column types of a model defined from C.
@c public enum ar_type: Int32 {
    /// UTF-8 text (SQLite TEXT).
    case text = 1
    /// 64-bit integer (SQLite INTEGER).
    case integer = 2
    /// 64-bit floating point (SQLite REAL).
    case real = 3
    /// Bytes (SQLite BLOB).
    case blob = 4
    /// 0 or 1 (SQLite INTEGER).
    case bool = 5
    /// Seconds since 1970 (SQLite REAL).
    case date = 6
    /// An exact decimal number as POSIX text, e.g. "1123.563" (SQLite TEXT).
    case decimal = 7
}

/// Primary key kinds for ar_model_set_primary_key.
@c public enum ar_key_kind: Int32 {
    /// A 64-bit integer the engine assigns (the default, column "id").
    case autoincrement = 0
    /// A UUID in a column of its own, generated on insert when left NULL.
    case uuid = 1
    /// A text the program sets before the first save.
    case text = 2
}

/// Column flags for ar_model_add_column, combined with `|`.
@c public enum ar_column_flag: Int32 {
    /// The column is required (NOT NULL); the default.
    case required = 0
    /// The column may hold NULL.
    case nullable = 1
    /// An index on the column.
    case indexed = 2
    /// A unique index on the column.
    case unique = 4
}

extension ar_result {
    /// The error code a result stands for (``init(_:)`` in reverse): for a result that C code
    /// returns without a library error behind it.
    var code: ActiveRecordError.Code {
        switch self {
        case .notFound: .notFound
        case .misuse: .misuse
        case .unknownColumn: .unknownColumn
        case .typeMismatch: .typeMismatch
        case .invalidValue: .invalidValue
        case .invalidPredicate: .invalidPredicate
        case .constraint: .constraint
        case .validationFailed: .validationFailed
        case .cannotOpen: .cannotOpen
        case .notADatabase: .notADatabase
        case .readOnly: .readOnly
        case .retry: .transactionConflict
        default: .engine
        }
    }

    /// The result's name in the header (`AR_RETRY`).
    var name: String {
        let names = [
            "AR_OK", "AR_DONE", "AR_NOT_FOUND", "AR_MISUSE", "AR_UNKNOWN_COLUMN", "AR_TYPE_MISMATCH", "AR_INVALID_VALUE",
            "AR_INVALID_PREDICATE", "AR_CONSTRAINT", "AR_VALIDATION_FAILED", "AR_CANNOT_OPEN", "AR_NOT_A_DATABASE",
            "AR_READ_ONLY", "AR_ERROR", "AR_RETRY",
        ]
        return names.indices.contains(Int(rawValue)) ? names[Int(rawValue)] : "result \(rawValue)"
    }

    /// The result code for an error.
    init(_ error: any Error) {
        guard let error = error as? ActiveRecordError else { self = .error; return }
        switch error.code {
        case .notFound: self = .notFound
        case .misuse: self = .misuse
        case .unknownColumn, .unknownTable: self = .unknownColumn
        case .typeMismatch: self = .typeMismatch
        case .invalidValue: self = .invalidValue
        case .invalidPredicate: self = .invalidPredicate
        case .constraint: self = .constraint
        case .validationFailed: self = .validationFailed
        case .cannotOpen: self = .cannotOpen
        case .notADatabase: self = .notADatabase
        case .readOnly: self = .readOnly
        case _ where error.isRetryable: self = .retry
        default: self = .error
        }
    }
}
