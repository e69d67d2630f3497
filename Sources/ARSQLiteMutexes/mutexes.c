#define _GNU_SOURCE
#include "ARSQLiteMutexes.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>

#if defined(__GLIBC__) && defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)

/* One mutex: SQLite allocates "fast" (not recursive) and recursive ones, and names twelve
 * static ones by number. */
struct sqlite3_mutex {
    pthread_mutex_t mutex;
    int kind;
};

#define STATIC_COUNT (SQLITE_MUTEX_STATIC_VFS3 - SQLITE_MUTEX_STATIC_MAIN + 1)

/* The static mutexes are never entered recursively (as in SQLite's own pthread version). */
static sqlite3_mutex static_mutexes[STATIC_COUNT] = {
#define S(kind) {PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, kind}
    S(2), S(3), S(4), S(5), S(6), S(7), S(8), S(9), S(10), S(11), S(12), S(13),
#undef S
};
_Static_assert(STATIC_COUNT == 12, "SQLite's static mutexes are numbered 2 to 13");

static int mutex_init(void) { return SQLITE_OK; }
static int mutex_end(void) { return SQLITE_OK; }

static sqlite3_mutex *mutex_alloc(int kind) {
    if (kind >= SQLITE_MUTEX_STATIC_MAIN) {
        return kind <= SQLITE_MUTEX_STATIC_VFS3 ? &static_mutexes[kind - SQLITE_MUTEX_STATIC_MAIN] : NULL;
    }
    if (kind != SQLITE_MUTEX_FAST && kind != SQLITE_MUTEX_RECURSIVE) return NULL;
    sqlite3_mutex *mutex = malloc(sizeof *mutex);
    if (mutex == NULL) return NULL;
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_settype(
        &attributes, kind == SQLITE_MUTEX_RECURSIVE ? PTHREAD_MUTEX_RECURSIVE : PTHREAD_MUTEX_ADAPTIVE_NP);
    int status = pthread_mutex_init(&mutex->mutex, &attributes);
    pthread_mutexattr_destroy(&attributes);
    if (status != 0) {
        free(mutex);
        return NULL;
    }
    mutex->kind = kind;
    return mutex;
}

static void mutex_free(sqlite3_mutex *mutex) {
    if (mutex->kind >= SQLITE_MUTEX_STATIC_MAIN) return;
    pthread_mutex_destroy(&mutex->mutex);
    free(mutex);
}

static void mutex_enter(sqlite3_mutex *mutex) { pthread_mutex_lock(&mutex->mutex); }

static int mutex_try(sqlite3_mutex *mutex) {
    return pthread_mutex_trylock(&mutex->mutex) == 0 ? SQLITE_OK : SQLITE_BUSY;
}

static void mutex_leave(sqlite3_mutex *mutex) { pthread_mutex_unlock(&mutex->mutex); }

/* Only SQLite's debug builds ask, in assertions; like SQLite's own release mutexes, these
 * cannot tell, and answer so that no assertion fails. */
static int mutex_held(sqlite3_mutex *mutex) { (void)mutex; return 1; }
static int mutex_not_held(sqlite3_mutex *mutex) { (void)mutex; return 1; }

static const sqlite3_mutex_methods methods = {
    mutex_init, mutex_end, mutex_alloc, mutex_free, mutex_enter, mutex_try, mutex_leave,
    mutex_held, mutex_not_held,
};

int arsqlite_use_spinning_mutexes(void) {
    /* A threadsafe SQLite only: a single-thread build has no mutexes to replace. */
    if (sqlite3_threadsafe() == 0) return SQLITE_NOTFOUND;
    return sqlite3_config(SQLITE_CONFIG_MUTEX, &methods);
}

int arsqlite_spinning_mutexes_installed(void) {
    /* What SQLite hands out (it initializes here if it has not yet) is an adaptive pthread
     * mutex: ours, or another copy of this code's in the process (a program that loads
     * libactiverecord.so beside the Swift library, as the tests do). A later sqlite3_config
     * by someone else, before SQLite initialized, would have replaced them. SQLite's own
     * pthread mutexes start with the pthread_mutex_t as these do, and its static ones are
     * plain (PTHREAD_MUTEX_INITIALIZER). */
    const pthread_mutex_t *mutex = (const pthread_mutex_t *)sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_APP1);
    return mutex != NULL && mutex->__data.__kind == PTHREAD_MUTEX_ADAPTIVE_NP;
}

#else

int arsqlite_use_spinning_mutexes(void) { return SQLITE_NOTFOUND; }
int arsqlite_spinning_mutexes_installed(void) { return 0; }

#endif
