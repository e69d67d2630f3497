#ifndef ACTIVERECORD_SQLITE_SHIM_H
#define ACTIVERECORD_SQLITE_SHIM_H
#include <sqlite3.h>

/* Extended result codes are macros built from other macros, which Swift does not import;
 * as constants the C compiler evaluates them. */
static const int AR_SQLITE_CONSTRAINT_UNIQUE = SQLITE_CONSTRAINT_UNIQUE;
static const int AR_SQLITE_CONSTRAINT_PRIMARYKEY = SQLITE_CONSTRAINT_PRIMARYKEY;
static const int AR_SQLITE_CONSTRAINT_FOREIGNKEY = SQLITE_CONSTRAINT_FOREIGNKEY;
static const int AR_SQLITE_CONSTRAINT_NOTNULL = SQLITE_CONSTRAINT_NOTNULL;
static const int AR_SQLITE_CONSTRAINT_CHECK = SQLITE_CONSTRAINT_CHECK;

/* sqlite3_db_config is variadic, which Swift cannot call: whether a double-quoted name that
 * is no column is read as a string (SQLite's legacy "DQS" misfeature) in statements. */
static inline int ar_sqlite_set_double_quoted_strings(sqlite3 *db, int enabled) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, enabled, (int *)0);
}

/* sqlite3_config is variadic too: SQLite's process-wide memory statistics on or off. Only
 * before SQLite initializes (its first open); afterwards it returns SQLITE_MISUSE and
 * changes nothing. */
static inline int ar_sqlite_set_memory_statistics(int enabled) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, enabled);
}

#endif
