#include "consumer_sqlite.h"

int consumer_sqlite_marker(void) { return 42; }
