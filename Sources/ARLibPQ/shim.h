#ifndef ACTIVERECORD_LIBPQ_SHIM_H
#define ACTIVERECORD_LIBPQ_SHIM_H
#include <libpq-fe.h>

/* PostgreSQL's type OIDs the library reads results by (pg_type.h is a server header). */
enum {
    AR_PG_BOOL = 16, AR_PG_BYTEA = 17, AR_PG_NAME = 19, AR_PG_INT8 = 20, AR_PG_INT2 = 21, AR_PG_INT4 = 23,
    AR_PG_TEXT = 25, AR_PG_OID = 26, AR_PG_JSON = 114, AR_PG_FLOAT4 = 700, AR_PG_FLOAT8 = 701,
    AR_PG_BPCHAR = 1042, AR_PG_VARCHAR = 1043, AR_PG_NUMERIC = 1700, AR_PG_UUID = 2950, AR_PG_JSONB = 3802
};

/* Discards the server's notices ("relation already exists, skipping"), which libpq would
 * otherwise print on standard error. */
static inline void ar_pg_ignore_notice(void *arg, const char *message) { (void)arg; (void)message; }
static inline void ar_pg_silence_notices(PGconn *connection) {
    PQsetNoticeProcessor(connection, ar_pg_ignore_notice, (void *)0);
}

#endif
