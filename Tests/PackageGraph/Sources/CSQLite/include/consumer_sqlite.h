#ifndef CONSUMER_SQLITE_H
#define CONSUMER_SQLITE_H
/* The consumer's own C target named CSQLite: it only has to exist beside the library's. */
int consumer_sqlite_marker(void);
#endif
