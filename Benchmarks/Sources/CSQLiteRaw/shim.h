// The system sqlite3 header, for the benchmark's raw side.
#include <sqlite3.h>
