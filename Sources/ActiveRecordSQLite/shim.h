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

#endif
