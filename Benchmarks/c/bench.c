/* bench.c: the C API of swift-activerecord (libactiverecord.so) against the raw sqlite3 C API.
 *
 *   make bench-c            100,000 rows, the release library
 *   make bench-c N=2000     a quick run
 *
 * Two workloads, each side on a fresh WAL database file in /tmp per round (the pragmas the
 * library sets: journal_mode=WAL, synchronous=NORMAL, foreign_keys=ON), best of 3 rounds per
 * side, the sides' order alternating between rounds:
 *
 *   insert  N records in one transaction. Library: ar_begin, then per row ar_record_new,
 *           ar_record_set_* for every column, ar_record_save, ar_record_free; ar_commit.
 *           Raw: BEGIN IMMEDIATE, one prepared INSERT reused with sqlite3_bind_* per column
 *           (createdAt and updatedAt: the current time in seconds, as the library writes),
 *           COMMIT.
 *   fetch   all N records in id order, every column of every row copied into a FetchedRow.
 *           Library: ar_query_new(model, NULL) + ar_query_order("id") + ar_query_next, the
 *           ar_record_get_* getters, ar_record_free. Raw: one prepared SELECT ... ORDER BY id
 *           stepped, sqlite3_column_* per column.
 *
 * Every run is checked on both sides: row counts, ids, every value against what was inserted,
 * and a checksum over ages and name lengths that must agree between the sides. A failed check
 * exits with 1; a ratio over its target is reported as MISSED (exit 0).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "activerecord.h"

#define ROUNDS 3
#define NOINLINE __attribute__((noinline))
#define DEFAULT_ROWS 100000L
#define TARGET_RATIO 1.8
#define TEXT_CAP 48
#define PAYLOAD_SIZE 16

/* The table the library creates for the model below (`sqlite3 file .schema`). */
static const char *const create_table_sql =
    "CREATE TABLE \"BenchUser\" (\"id\" INTEGER PRIMARY KEY, \"createdAt\" REAL, \"updatedAt\" REAL, "
    "\"name\" TEXT NOT NULL DEFAULT '', \"email\" TEXT NOT NULL DEFAULT '', \"age\" INTEGER NOT NULL DEFAULT 0, "
    "\"score\" REAL NOT NULL DEFAULT 0.0, \"active\" INTEGER NOT NULL DEFAULT 0, \"note\" TEXT, "
    "\"payload\" BLOB NOT NULL DEFAULT X'')";

static const char *const insert_sql =
    "INSERT INTO \"BenchUser\" (\"createdAt\", \"updatedAt\", \"name\", \"email\", \"age\", \"score\", "
    "\"active\", \"note\", \"payload\") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";

static const char *const select_sql =
    "SELECT \"id\", \"createdAt\", \"updatedAt\", \"name\", \"email\", \"age\", \"score\", \"active\", "
    "\"note\", \"payload\" FROM \"BenchUser\" ORDER BY \"id\"";

/* The values of one row to insert, generated before any timing. */
typedef struct {
    char name[TEXT_CAP];
    char email[TEXT_CAP];
    char note[TEXT_CAP];
    int has_note;
    int64_t age;
    double score;
    int active;
    unsigned char payload[PAYLOAD_SIZE];
} RowValues;

/* One fetched record: every column, text and blob copied. */
typedef struct {
    int64_t id;
    double created_at;
    double updated_at;
    char name[TEXT_CAP];
    char email[TEXT_CAP];
    int64_t age;
    double score;
    int active;
    int note_is_null;
    char note[TEXT_CAP];
    size_t payload_length;
    unsigned char payload[PAYLOAD_SIZE];
} FetchedRow;

/* What one fetch gave, for comparing the sides. */
typedef struct {
    long count;
    uint64_t checksum;
} FetchSummary;

static long row_count = DEFAULT_ROWS;
static RowValues *rows;
static FetchedRow *fetched;
static double run_started_at;

static void fail(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    fputs("bench-c: FAILED: ", stderr);
    vfprintf(stderr, format, arguments);
    fputc('\n', stderr);
    va_end(arguments);
    exit(1);
}

static double monotonic_seconds(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) fail("clock_gettime: %s", strerror(errno));
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Seconds since 1970, as the library stamps createdAt and updatedAt. */
static double wall_seconds(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) fail("clock_gettime: %s", strerror(errno));
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Row i (1-based) gets id i on both sides: a NULL note on even rows. */
static void make_rows(void) {
    long i;
    rows = calloc((size_t)row_count, sizeof *rows);
    fetched = calloc((size_t)row_count, sizeof *fetched);
    if (rows == NULL || fetched == NULL) fail("out of memory for %ld rows", row_count);
    for (i = 1; i <= row_count; i++) {
        RowValues *row = &rows[i - 1];
        uint64_t bits = (uint64_t)i, inverted = ~(uint64_t)i;
        int byte;
        snprintf(row->name, TEXT_CAP, "user%ld", i);
        snprintf(row->email, TEXT_CAP, "user%ld@example.com", i);
        row->has_note = i % 2 != 0;
        if (row->has_note) snprintf(row->note, TEXT_CAP, "note %ld", i);
        row->age = i % 90;
        row->score = (double)i * 0.5;
        row->active = i % 2 == 0;
        for (byte = 0; byte < 8; byte++) {
            row->payload[byte] = (unsigned char)(bits >> (8 * byte));
            row->payload[8 + byte] = (unsigned char)(inverted >> (8 * byte));
        }
    }
}

/* Copies length bytes of text into a fetched row's buffer; a failed check when too long. */
static void copy_text(char *destination, const char *source, size_t length, const char *side) {
    if (length >= TEXT_CAP) fail("%s fetch: a text of %zu bytes (buffers hold %d)", side, length, TEXT_CAP - 1);
    memcpy(destination, source, length);
    destination[length] = '\0';
}

static void copy_blob(FetchedRow *row, const void *bytes, size_t length, const char *side) {
    if (length > PAYLOAD_SIZE) fail("%s fetch: a payload of %zu bytes", side, length);
    if (length > 0) memcpy(row->payload, bytes, length);
    row->payload_length = length;
}

/* Checks the fetched rows against the inserted values; gives the count and the checksum
 * over ages and name lengths. */
static FetchSummary check_fetched(long count, const char *side) {
    FetchSummary summary = {0, 0};
    double now = wall_seconds();
    long i;
    if (count != row_count) fail("%s fetch: %ld records, expected %ld", side, count, row_count);
    for (i = 0; i < count; i++) {
        const FetchedRow *got = &fetched[i];
        const RowValues *want = &rows[i];
        if (got->id != i + 1) fail("%s fetch: record %ld has id %lld", side, i + 1, (long long)got->id);
        if (strcmp(got->name, want->name) != 0 || strcmp(got->email, want->email) != 0 || got->age != want->age
            || got->score != want->score || got->active != want->active || got->note_is_null != !want->has_note
            || (want->has_note && strcmp(got->note, want->note) != 0) || got->payload_length != PAYLOAD_SIZE
            || memcmp(got->payload, want->payload, PAYLOAD_SIZE) != 0)
            fail("%s fetch: record %ld (%s, %s, age %lld) differs from what was inserted", side, i + 1, got->name,
                 got->email, (long long)got->age);
        if (!(got->created_at >= run_started_at - 1 && got->created_at <= now + 1)
            || got->updated_at != got->created_at)
            fail("%s fetch: record %ld has createdAt %f, updatedAt %f", side, i + 1, got->created_at,
                 got->updated_at);
        summary.checksum = summary.checksum * 1000003u + (uint64_t)got->age * 64u + strlen(got->name);
    }
    summary.count = count;
    return summary;
}

static void remove_database(const char *path) {
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    char file[256];
    size_t i;
    for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(file, sizeof file, "%s%s", path, suffixes[i]);
        if (unlink(file) != 0 && errno != ENOENT) fail("cannot remove %s: %s", file, strerror(errno));
    }
}

/* ---- raw sqlite3 ---------------------------------------------------------------------- */

#define RAW(database, call, what)                                                                     \
    do {                                                                                              \
        int raw_code_ = (call);                                                                       \
        if (raw_code_ != SQLITE_OK) fail("raw %s: %s (%d)", what, sqlite3_errmsg(database), raw_code_); \
    } while (0)

static int64_t raw_integer(sqlite3 *database, const char *sql) {
    sqlite3_stmt *statement;
    int64_t value;
    RAW(database, sqlite3_prepare_v2(database, sql, -1, &statement, NULL), sql);
    if (sqlite3_step(statement) != SQLITE_ROW) fail("raw %s: no row: %s", sql, sqlite3_errmsg(database));
    value = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    return value;
}

static void raw_check_pragmas(sqlite3 *database) {
    sqlite3_stmt *statement;
    RAW(database, sqlite3_prepare_v2(database, "PRAGMA journal_mode", -1, &statement, NULL), "PRAGMA journal_mode");
    if (sqlite3_step(statement) != SQLITE_ROW
        || strcmp((const char *)sqlite3_column_text(statement, 0), "wal") != 0)
        fail("raw: journal_mode is not wal");
    sqlite3_finalize(statement);
    if (raw_integer(database, "PRAGMA synchronous") != 1) fail("raw: synchronous is not NORMAL");
    if (raw_integer(database, "PRAGMA foreign_keys") != 1) fail("raw: foreign_keys is off");
}

/* The raw side's measured insert: every row in one transaction through one prepared INSERT. */
NOINLINE static void raw_insert_rows(sqlite3 *database, sqlite3_stmt *insert) {
    long i;
    int code;
    RAW(database, sqlite3_exec(database, "BEGIN IMMEDIATE", NULL, NULL, NULL), "BEGIN");
    for (i = 0; i < row_count; i++) {
        const RowValues *row = &rows[i];
        double now = wall_seconds();
        code = sqlite3_bind_double(insert, 1, now);
        code |= sqlite3_bind_double(insert, 2, now);
        code |= sqlite3_bind_text(insert, 3, row->name, -1, SQLITE_STATIC);
        code |= sqlite3_bind_text(insert, 4, row->email, -1, SQLITE_STATIC);
        code |= sqlite3_bind_int64(insert, 5, row->age);
        code |= sqlite3_bind_double(insert, 6, row->score);
        code |= sqlite3_bind_int(insert, 7, row->active);
        code |= row->has_note ? sqlite3_bind_text(insert, 8, row->note, -1, SQLITE_STATIC)
                              : sqlite3_bind_null(insert, 8);
        code |= sqlite3_bind_blob(insert, 9, row->payload, PAYLOAD_SIZE, SQLITE_STATIC);
        if (code != SQLITE_OK) fail("raw: bind to INSERT: %s", sqlite3_errmsg(database));
        if (sqlite3_step(insert) != SQLITE_DONE) fail("raw: INSERT: %s", sqlite3_errmsg(database));
        if (sqlite3_reset(insert) != SQLITE_OK) fail("raw: reset INSERT: %s", sqlite3_errmsg(database));
        if (sqlite3_last_insert_rowid(database) != i + 1) fail("raw: row %ld got id %lld", i + 1,
                                                               (long long)sqlite3_last_insert_rowid(database));
    }
    RAW(database, sqlite3_exec(database, "COMMIT", NULL, NULL, NULL), "COMMIT");
}

/* The raw side's measured fetch: every row and column copied into `fetched`; gives the count. */
NOINLINE static long raw_fetch_rows(sqlite3 *database, sqlite3_stmt *select) {
    long count = 0;
    int code;
    while ((code = sqlite3_step(select)) == SQLITE_ROW) {
        FetchedRow *row;
        if (count == row_count) fail("raw fetch: more than %ld rows", row_count);
        row = &fetched[count++];
        row->id = sqlite3_column_int64(select, 0);
        row->created_at = sqlite3_column_double(select, 1);
        row->updated_at = sqlite3_column_double(select, 2);
        copy_text(row->name, (const char *)sqlite3_column_text(select, 3), (size_t)sqlite3_column_bytes(select, 3), "raw");
        copy_text(row->email, (const char *)sqlite3_column_text(select, 4), (size_t)sqlite3_column_bytes(select, 4), "raw");
        row->age = sqlite3_column_int64(select, 5);
        row->score = sqlite3_column_double(select, 6);
        row->active = sqlite3_column_int(select, 7) != 0;
        row->note_is_null = sqlite3_column_type(select, 8) == SQLITE_NULL;
        if (!row->note_is_null)
            copy_text(row->note, (const char *)sqlite3_column_text(select, 8), (size_t)sqlite3_column_bytes(select, 8), "raw");
        copy_blob(row, sqlite3_column_blob(select, 9), (size_t)sqlite3_column_bytes(select, 9), "raw");
    }
    if (code != SQLITE_DONE) fail("raw: SELECT: %s", sqlite3_errmsg(database));
    sqlite3_reset(select);
    return count;
}

/* One round of the raw side on a fresh file: the insert time, then the fetch time. */
static void raw_round(const char *path, double *insert_seconds, double *fetch_seconds, FetchSummary *summary) {
    sqlite3 *database = NULL;
    sqlite3_stmt *insert, *select;
    double started;
    long count;
    int code;

    remove_database(path);
    code = sqlite3_open_v2(path, &database, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (code != SQLITE_OK) fail("raw: cannot open %s: %s", path, database ? sqlite3_errmsg(database) : "no memory");
    RAW(database, sqlite3_exec(database, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), "PRAGMA journal_mode=WAL");
    RAW(database, sqlite3_exec(database, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL), "PRAGMA synchronous");
    RAW(database, sqlite3_exec(database, "PRAGMA foreign_keys=ON", NULL, NULL, NULL), "PRAGMA foreign_keys");
    raw_check_pragmas(database);
    RAW(database, sqlite3_exec(database, create_table_sql, NULL, NULL, NULL), "CREATE TABLE");
    RAW(database, sqlite3_prepare_v3(database, insert_sql, -1, SQLITE_PREPARE_PERSISTENT, &insert, NULL), "prepare INSERT");
    RAW(database, sqlite3_prepare_v3(database, select_sql, -1, SQLITE_PREPARE_PERSISTENT, &select, NULL), "prepare SELECT");

    /* insert */
    started = monotonic_seconds();
    raw_insert_rows(database, insert);
    *insert_seconds = monotonic_seconds() - started;
    if (raw_integer(database, "SELECT count(*) FROM \"BenchUser\"") != row_count) fail("raw: row count after insert");

    /* fetch */
    memset(fetched, 0, (size_t)row_count * sizeof *fetched);
    started = monotonic_seconds();
    count = raw_fetch_rows(database, select);
    *fetch_seconds = monotonic_seconds() - started;
    *summary = check_fetched(count, "raw");

    sqlite3_finalize(insert);
    sqlite3_finalize(select);
    if (sqlite3_close(database) != SQLITE_OK) fail("raw: close: %s", sqlite3_errmsg(database));
    remove_database(path);
}

/* ---- the library ---------------------------------------------------------------------- */

#define LIB(database, call, what)                                                                        \
    do {                                                                                                 \
        ar_result lib_code_ = (call);                                                                    \
        if (lib_code_ != AR_OK) fail("library %s: %s (ar_result %d)", what, ar_last_error(database), (int)lib_code_); \
    } while (0)

static ar_model *define_model(ar_database *database) {
    ar_model *model;
    LIB(database, ar_model_define(database, "BenchUser", &model), "ar_model_define");
    LIB(database, ar_model_add_column(model, "name", AR_TYPE_TEXT, AR_COLUMN_FLAG_REQUIRED), "add name");
    LIB(database, ar_model_add_column(model, "email", AR_TYPE_TEXT, AR_COLUMN_FLAG_REQUIRED), "add email");
    LIB(database, ar_model_add_column(model, "age", AR_TYPE_INTEGER, AR_COLUMN_FLAG_REQUIRED), "add age");
    LIB(database, ar_model_add_column(model, "score", AR_TYPE_REAL, AR_COLUMN_FLAG_REQUIRED), "add score");
    LIB(database, ar_model_add_column(model, "active", AR_TYPE_BOOL, AR_COLUMN_FLAG_REQUIRED), "add active");
    LIB(database, ar_model_add_column(model, "note", AR_TYPE_TEXT, AR_COLUMN_FLAG_NULLABLE), "add note");
    LIB(database, ar_model_add_column(model, "payload", AR_TYPE_BLOB, AR_COLUMN_FLAG_REQUIRED), "add payload");
    return model;
}

/* The library's file must have the pragmas the raw side sets (journal_mode is stored in it). */
static void library_check_file(const char *path) {
    sqlite3 *database = NULL;
    sqlite3_stmt *statement;
    if (sqlite3_open_v2(path, &database, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        fail("cannot open the library's file %s", path);
    RAW(database, sqlite3_prepare_v2(database, "PRAGMA journal_mode", -1, &statement, NULL), "PRAGMA journal_mode");
    if (sqlite3_step(statement) != SQLITE_ROW
        || strcmp((const char *)sqlite3_column_text(statement, 0), "wal") != 0)
        fail("library: journal_mode is not wal");
    sqlite3_finalize(statement);
    sqlite3_close(database);
}

/* The library's measured insert: every row in one transaction, a record per row. */
NOINLINE static void library_insert_rows(ar_database *database, ar_model *model) {
    ar_record *record;
    long i;
    LIB(database, ar_begin(database), "ar_begin");
    for (i = 0; i < row_count; i++) {
        const RowValues *row = &rows[i];
        LIB(database, ar_record_new(model, &record), "ar_record_new");
        LIB(database, ar_record_set_text(record, "name", row->name), "set name");
        LIB(database, ar_record_set_text(record, "email", row->email), "set email");
        LIB(database, ar_record_set_int64(record, "age", row->age), "set age");
        LIB(database, ar_record_set_double(record, "score", row->score), "set score");
        LIB(database, ar_record_set_bool(record, "active", row->active), "set active");
        LIB(database, ar_record_set_text(record, "note", row->has_note ? row->note : NULL), "set note");
        LIB(database, ar_record_set_blob(record, "payload", row->payload, PAYLOAD_SIZE), "set payload");
        LIB(database, ar_record_save(record), "ar_record_save");
        if (ar_record_id(record) != i + 1) fail("library: row %ld got id %lld", i + 1, (long long)ar_record_id(record));
        ar_record_free(record);
    }
    LIB(database, ar_commit(database), "ar_commit");
}

/* The library's measured fetch: every record's columns copied into `fetched`; gives the count. */
NOINLINE static long library_fetch_rows(ar_database *database, ar_model *model) {
    ar_query *query;
    ar_record *record;
    ar_result code;
    long count = 0;
    LIB(database, ar_query_new(model, NULL, &query), "ar_query_new");
    LIB(database, ar_query_order(query, "id", 1), "ar_query_order");
    while ((code = ar_query_next(query, &record)) == AR_OK) {
        FetchedRow *row;
        const char *text;
        const void *bytes;
        size_t length;
        int32_t active;
        if (count == row_count) fail("library fetch: more than %ld records", row_count);
        row = &fetched[count++];
        row->id = ar_record_id(record);
        LIB(database, ar_record_get_date(record, "createdAt", &row->created_at), "get createdAt");
        LIB(database, ar_record_get_date(record, "updatedAt", &row->updated_at), "get updatedAt");
        LIB(database, ar_record_get_text(record, "name", &text), "get name");
        if (text == NULL) fail("library fetch: record %ld has a NULL name", count);
        copy_text(row->name, text, strlen(text), "library");
        LIB(database, ar_record_get_text(record, "email", &text), "get email");
        if (text == NULL) fail("library fetch: record %ld has a NULL email", count);
        copy_text(row->email, text, strlen(text), "library");
        LIB(database, ar_record_get_int64(record, "age", &row->age), "get age");
        LIB(database, ar_record_get_double(record, "score", &row->score), "get score");
        LIB(database, ar_record_get_bool(record, "active", &active), "get active");
        row->active = active;
        LIB(database, ar_record_get_text(record, "note", &text), "get note");
        row->note_is_null = text == NULL;
        if (text != NULL) copy_text(row->note, text, strlen(text), "library");
        LIB(database, ar_record_get_blob(record, "payload", &bytes, &length), "get payload");
        copy_blob(row, bytes, length, "library");
        ar_record_free(record);
    }
    if (code != AR_DONE) fail("library: ar_query_next: %s (ar_result %d)", ar_last_error(database), (int)code);
    ar_query_free(query);
    return count;
}

/* One round of the library side on a fresh file: the insert time, then the fetch time. */
static void library_round(const char *path, double *insert_seconds, double *fetch_seconds, FetchSummary *summary) {
    ar_database *database = NULL;
    ar_model *model;
    double started;
    int64_t stored = -1;
    long count;

    remove_database(path);
    LIB(NULL, ar_open(path, &database), "ar_open");
    model = define_model(database);
    LIB(database, ar_count(model, &stored), "ar_count"); /* creates the table, untimed */
    if (stored != 0) fail("library: a fresh table holds %lld records", (long long)stored);
    library_check_file(path);

    /* insert */
    started = monotonic_seconds();
    library_insert_rows(database, model);
    *insert_seconds = monotonic_seconds() - started;
    LIB(database, ar_count(model, &stored), "ar_count");
    if (stored != row_count) fail("library: %lld records after insert, expected %ld", (long long)stored, row_count);

    /* fetch */
    memset(fetched, 0, (size_t)row_count * sizeof *fetched);
    started = monotonic_seconds();
    count = library_fetch_rows(database, model);
    *fetch_seconds = monotonic_seconds() - started;
    *summary = check_fetched(count, "library");

    ar_model_free(model);
    ar_close(database);
    remove_database(path);
}

/* ---- the run -------------------------------------------------------------------------- */

/* Rounds per side: ROUNDS, or BENCH_C_ROUNDS (1 to ROUNDS; scripts/bench-instructions.sh
 * runs one round under callgrind). */
static int rounds = ROUNDS;

static double best(const double *seconds) {
    double minimum = seconds[0];
    int i;
    for (i = 1; i < rounds; i++)
        if (seconds[i] < minimum) minimum = seconds[i];
    return minimum;
}

static int report_line(const char *workload, double raw, double library) {
    double ratio = library / raw;
    int met = ratio <= TARGET_RATIO;
    printf("| %-34s | %9.3f | %9.3f | %5.2f | <= %.1f | %-6s |\n", workload, raw, library, ratio, TARGET_RATIO,
           met ? "ok" : "MISSED");
    return met;
}

int main(int argc, char **argv) {
    double raw_insert[ROUNDS], raw_fetch[ROUNDS], library_insert[ROUNDS], library_fetch[ROUNDS];
    FetchSummary raw_summary = {0, 0}, library_summary = {0, 0};
    char raw_path[128], library_path[128], label[64];
    int round, met = 0;

    if (argc > 2) fail("usage: %s [rows]", argv[0]);
    if (argc == 2) {
        char *end;
        errno = 0;
        row_count = strtol(argv[1], &end, 10);
        if (errno != 0 || *end != '\0' || end == argv[1] || row_count < 1 || row_count > 100000000L)
            fail("usage: %s [rows]: rows must be a number from 1 to 100000000, not '%s'", argv[0], argv[1]);
    }
    if (getenv("BENCH_C_ROUNDS") != NULL) {
        rounds = atoi(getenv("BENCH_C_ROUNDS"));
        if (rounds < 1 || rounds > ROUNDS) fail("BENCH_C_ROUNDS must be 1 to %d", ROUNDS);
    }
    snprintf(raw_path, sizeof raw_path, "/tmp/ar-bench-c-%ld-raw.sqlite", (long)getpid());
    snprintf(library_path, sizeof library_path, "/tmp/ar-bench-c-%ld-library.sqlite", (long)getpid());

    printf("bench-c: raw sqlite3 vs the C API of swift-activerecord %s (libactiverecord.so); %ld rows, best of %d "
           "rounds per side (alternating order), SQLite %s, database files in /tmp with journal_mode=WAL, "
           "synchronous=NORMAL, foreign_keys=ON\n",
           ar_version(), row_count, rounds, sqlite3_libversion());
    fflush(stdout);
    run_started_at = wall_seconds();
    make_rows();

    for (round = 0; round < rounds; round++) {
        FetchSummary raw_this, library_this;
        if (round % 2 == 0) {
            raw_round(raw_path, &raw_insert[round], &raw_fetch[round], &raw_this);
            library_round(library_path, &library_insert[round], &library_fetch[round], &library_this);
        } else {
            library_round(library_path, &library_insert[round], &library_fetch[round], &library_this);
            raw_round(raw_path, &raw_insert[round], &raw_fetch[round], &raw_this);
        }
        if (raw_this.count != library_this.count || raw_this.checksum != library_this.checksum)
            fail("round %d: raw fetched %ld records (checksum %llu), the library %ld (checksum %llu)", round + 1,
                 raw_this.count, (unsigned long long)raw_this.checksum, library_this.count,
                 (unsigned long long)library_this.checksum);
        if (round > 0 && (raw_this.count != raw_summary.count || raw_this.checksum != raw_summary.checksum))
            fail("round %d: a different checksum from round 1", round + 1);
        raw_summary = raw_this;
        library_summary = library_this;
        fprintf(stderr, "bench-c: round %d: insert raw %.3f s, library %.3f s; fetch raw %.3f s, library %.3f s\n",
                round + 1, raw_insert[round], library_insert[round], raw_fetch[round], library_fetch[round]);
    }

    printf("\nchecked: %ld records on each side, checksum over ages and name lengths %llu on both\n\n",
           library_summary.count, (unsigned long long)library_summary.checksum);
    printf("| %-34s | %9s | %9s | %5s | %6s | %-6s |\n", "workload", "raw s", "library s", "ratio", "target", "result");
    printf("|%s|%s|%s|%s|%s|%s|\n", "------------------------------------", "----------:", "----------:", "------:",
           "-------:", "--------");
    snprintf(label, sizeof label, "insert %ld (one transaction)", row_count);
    met += report_line(label, best(raw_insert), best(library_insert));
    snprintf(label, sizeof label, "fetch all %ld (every column)", row_count);
    met += report_line(label, best(raw_fetch), best(library_fetch));
    printf("\n%s\n", met == 2 ? "every workload met its target (library/raw <= 1.8)"
                              : "some workloads MISSED their target (library/raw <= 1.8)");
    free(rows);
    free(fetched);
    return 0;
}
