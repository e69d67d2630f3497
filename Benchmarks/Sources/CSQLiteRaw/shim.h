// The system sqlite3 header, for the benchmark's raw side.
#include <sqlite3.h>

/* sqlite3_config is variadic, which Swift cannot call. */
static inline int arbench_sqlite_memstatus(int enabled) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, enabled);
}
