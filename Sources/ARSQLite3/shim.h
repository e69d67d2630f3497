#ifndef ACTIVERECORD_SQLITE_SHIM_H
#define ACTIVERECORD_SQLITE_SHIM_H
#include <sqlite3.h>
#include <stdint.h>
#include <time.h>

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

/* A statement timeout: SQLite calls the progress handler every 1,000 virtual-machine steps,
 * and it interrupts the statement (SQLITE_INTERRUPT) once the deadline, a CLOCK_MONOTONIC
 * time in nanoseconds carried in the handler's context pointer itself, has passed. No
 * storage to own: the next call replaces it, and 0 nanoseconds removes the handler. */
static inline int ar_sqlite_deadline_passed(void *deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    unsigned long long nanoseconds = (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec;
    return nanoseconds >= (unsigned long long)(uintptr_t)deadline;
}
static inline void ar_sqlite_set_statement_timeout(sqlite3 *db, long long nanoseconds) {
    if (nanoseconds <= 0) {
        sqlite3_progress_handler(db, 0, (int (*)(void *))0, (void *)0);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    unsigned long long deadline = (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec
        + (unsigned long long)nanoseconds;
    sqlite3_progress_handler(db, 1000, ar_sqlite_deadline_passed, (void *)(uintptr_t)deadline);
}

#endif
