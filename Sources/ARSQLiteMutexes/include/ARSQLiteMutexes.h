#ifndef AR_SQLITE_MUTEXES_H
#define AR_SQLITE_MUTEXES_H

/* SQLite's mutexes, made to spin briefly before they sleep (glibc's adaptive pthread mutexes).
 *
 * SQLite's own pthread mutexes sleep in the kernel as soon as they find the mutex taken. Two
 * threads reading one WAL database through connections of their own meet on one mutex (the
 * shared-memory lock mutex of the database file) at the start and end of every read
 * transaction; on a virtual machine a sleeping thread is woken slowly, and two such readers
 * read no faster than one. Spinning for the few hundred instructions the holder keeps the mutex
 * lets them overlap.
 *
 * Installs the methods only before SQLite initializes (its first open in the process): returns
 * SQLITE_OK when installed; SQLITE_MISUSE when SQLite was initialized already (nothing
 * changes); SQLITE_NOTFOUND where the platform has no adaptive mutexes (SQLite's stay).
 *
 * Hidden: libactiverecord.so exports only the C API's ar_ functions. */
__attribute__((visibility("hidden"))) int arsqlite_use_spinning_mutexes(void);

/* Whether this process's SQLite hands out adaptive mutexes: these methods, or another copy of
 * them in the process (libactiverecord.so beside the Swift library). SQLite initializes if it
 * has not yet. */
__attribute__((visibility("hidden"))) int arsqlite_spinning_mutexes_installed(void);

#endif
