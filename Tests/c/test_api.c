/* Tests of the C API (include/activerecord.h, libactiverecord.so), in plain C99.
 *
 *   make c-test          builds this with the strict flags and runs it under valgrind
 *   test_api [dir]       scratch files go in dir (default: a new directory under /tmp)
 *
 * With AR_TEST_POSTGRES_URL set (a postgresql:// URL; make test starts a throwaway server),
 * the tests that are not about SQLite files run a second time on PostgreSQL, each database a
 * schema of its own (made and dropped here through libpq).
 *
 * Each CHECK counts a pass or prints the failure; the last line is "N passed, M failed"
 * and the exit status is 1 when anything failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "activerecord.h"

static int passed, failed;
/* The database whose last error a failing CHECK_RC prints. */
static ar_database *current_db;

static void check(int ok, const char *what, int line) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL test_api.c:%d: %s\n", line, what);
    }
}

static void check_rc(ar_result got, ar_result expected, const char *what, int line) {
    if (got == expected) {
        passed++;
    } else {
        failed++;
        printf("FAIL test_api.c:%d: %s returned %d, expected %d\n    last error: %s\n    global error: %s\n",
               line, what, (int)got, (int)expected, current_db ? ar_last_error(current_db) : "-", ar_last_error(NULL));
    }
}

#define CHECK(cond) check((cond) != 0, #cond, __LINE__)
#define CHECK_RC(call, expected) check_rc((call), (expected), #call, __LINE__)
#define CHECK_OK(call) CHECK_RC(call, AR_OK)

/* Text equality that treats NULL as its own value. */
static int same_text(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

/* Scratch files. */
static char scratch[512];

static void scratch_path(char *out, size_t size, const char *name) {
    snprintf(out, size, "%s/%s", scratch, name);
}

/* PostgreSQL: the server of the second pass, and a connection to make schemas with. */
static const char *postgres_url;
static int on_postgres;
static PGconn *admin;

static void admin_run(const char *sql) {
    PGresult *result = PQexec(admin, sql);
    if (PQresultStatus(result) != PGRES_COMMAND_OK) {
        failed++;
        printf("FAIL %s: %s", sql, PQerrorMessage(admin));
    }
    PQclear(result);
}

/* A new PostgreSQL schema, and the URL that opens it (search_path set to it) into url. */
static void new_postgres_database(char *url, size_t size) {
    static int made;
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE SCHEMA c_%ld_%d", (long)getpid(), ++made);
    admin_run(sql);
    snprintf(url, size, "%s%coptions=-csearch_path%%3Dc_%ld_%d", postgres_url, strchr(postgres_url, '?') ? '&' : '?',
             (long)getpid(), made);
}

/* Removes a database: a file and SQLite's companions of it, or a PostgreSQL schema. */
static void remove_database(const char *path) {
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    char name[600];
    size_t i;
    const char *schema = strstr(path, "search_path%3D");
    if (strncmp(path, "postgresql://", 13) == 0 && schema) {
        snprintf(name, sizeof name, "DROP SCHEMA IF EXISTS %s CASCADE", schema + strlen("search_path%3D"));
        admin_run(name);
        return;
    }
    for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
        unlink(name);
    }
}

/* Opens a new database, current: the file `name` in the scratch directory, or on the
 * PostgreSQL pass a new schema. Its path (or URL) goes into path, to open it again. */
static void open_scratch_db(char *path, size_t size, const char *name, ar_database **db) {
    if (on_postgres) {
        new_postgres_database(path, size);
    } else {
        scratch_path(path, size, name);
        remove_database(path);
    }
    CHECK_OK(ar_open(path, db));
    current_db = *db;
}

/* Where the tests that run several times put their database: 0, ":memory:" (a query reads
 * all its records at the first ar_query_next); 1, a new file in the scratch directory (a
 * query steps a cursor on a reader connection, its records reading the cursor's row); 2, a
 * new PostgreSQL schema (a query steps a server cursor in batches). */
static int on_file;
static char test_db_path[600];

static ar_result open_test_db(ar_database **db) {
    static int opened;
    if (!on_file) return ar_open(":memory:", db);
    if (on_file == 2) {
        new_postgres_database(test_db_path, sizeof test_db_path);
    } else {
        snprintf(test_db_path, sizeof test_db_path, "%s/run-%d.sqlite", scratch, ++opened);
        remove_database(test_db_path);
    }
    return ar_open(test_db_path, db);
}

static void close_test_db(ar_database *db) {
    ar_close(db);
    if (on_file) remove_database(test_db_path);
}

/* The number of rows query matches (and releases it). */
static int64_t count_and_free(ar_query *query) {
    int64_t count = -1;
    CHECK_OK(ar_query_count(query, &count));
    ar_query_free(query);
    return count;
}

/* ---- version ---------------------------------------------------------------------- */

static void test_version(void) {
    const char *version = ar_version();
    int major = -1, minor = -1, patch = -1;
    CHECK(version != NULL);
    CHECK(version && sscanf(version, "%d.%d.%d", &major, &minor, &patch) == 3);
    CHECK(major >= 0 && minor >= 0 && patch >= 0);
    CHECK(version == ar_version()); /* static */
}

/* ---- opening ---------------------------------------------------------------------- */

static void test_open(void) {
    ar_database *db = NULL, *again = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL;
    char path[600], missing[600], garbage[600];
    static const char junk[] = "this is not an SQLite database, only some text that fills the header page. ";
    char readback[sizeof junk];
    FILE *file;
    int64_t count = -1;

    /* In memory: private to each handle. */
    CHECK_OK(ar_open(":memory:", &db));
    CHECK(db != NULL);
    CHECK(ar_last_error(db) != NULL && ar_last_error(db)[0] == '\0');
    CHECK_OK(ar_open(":memory:", &again));
    CHECK(again != NULL && again != db);
    ar_close(again);
    ar_close(db);

    /* A file: created, then reopened with its rows. */
    scratch_path(path, sizeof path, "open.sqlite");
    remove_database(path);
    CHECK_OK(ar_open(path, &db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Thing", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_set_text(record, "name", "kept"));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);
    ar_model_free(model);
    /* The library opened the process's first SQLite connection with SQLite's memory
     * statistics off (no global mutex per allocation): the process's SQLite reports none. */
    CHECK(sqlite3_memory_used() == 0);
    ar_close(db);
    CHECK(access(path, F_OK) == 0);
    CHECK_OK(ar_open(path, &db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Thing", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 1);
    ar_model_free(model);
    ar_close(db);
    current_db = NULL;
    remove_database(path);

    /* A missing directory: AR_CANNOT_OPEN, a NULL handle and a message. */
    scratch_path(missing, sizeof missing, "no/such/directory/x.sqlite");
    db = (ar_database *)&count; /* must be reset to NULL */
    CHECK_RC(ar_open(missing, &db), AR_CANNOT_OPEN);
    CHECK(db == NULL);
    CHECK(ar_last_error(NULL) != NULL && ar_last_error(NULL)[0] != '\0');
    CHECK(strstr(ar_last_error(NULL), "no/such/directory") != NULL);

    /* A file that is not a database: AR_NOT_A_DATABASE, and the file is left untouched. */
    scratch_path(garbage, sizeof garbage, "garbage.sqlite");
    file = fopen(garbage, "wb");
    CHECK(file != NULL);
    if (file) {
        int i;
        for (i = 0; i < 64; i++) fwrite(junk, 1, sizeof junk - 1, file);
        fclose(file);
    }
    db = (ar_database *)&count;
    CHECK_RC(ar_open(garbage, &db), AR_NOT_A_DATABASE);
    CHECK(db == NULL);
    CHECK(ar_last_error(NULL)[0] != '\0');
    file = fopen(garbage, "rb");
    CHECK(file != NULL);
    if (file) {
        memset(readback, 0, sizeof readback);
        CHECK(fread(readback, 1, sizeof junk - 1, file) == sizeof junk - 1);
        CHECK(memcmp(readback, junk, sizeof junk - 1) == 0);
        fclose(file);
    }
    remove_database(garbage);

    /* A directory where the file should be. */
    db = NULL;
    CHECK(ar_open(scratch, &db) != AR_OK);
    CHECK(db == NULL);
}

/* ---- a model with every type ------------------------------------------------------ */

/* Every ar_type and flag:
 * t TEXT, tn TEXT nullable, i INTEGER indexed, r REAL, b BLOB nullable, flag BOOL,
 * d DATE, dec DECIMAL, decn DECIMAL nullable, code TEXT unique nullable. */
static ar_model *define_everything(ar_database *db, const char *name) {
    ar_model *model = NULL;
    CHECK_OK(ar_model_define(db, name, &model));
    CHECK_OK(ar_model_add_column(model, "t", AR_TYPE_TEXT, AR_COLUMN_FLAG_REQUIRED));
    CHECK_OK(ar_model_add_column(model, "tn", AR_TYPE_TEXT, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_add_column(model, "i", AR_TYPE_INTEGER, AR_COLUMN_FLAG_INDEXED));
    CHECK_OK(ar_model_add_column(model, "r", AR_TYPE_REAL, 0));
    CHECK_OK(ar_model_add_column(model, "b", AR_TYPE_BLOB, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_add_column(model, "flag", AR_TYPE_BOOL, 0));
    CHECK_OK(ar_model_add_column(model, "d", AR_TYPE_DATE, AR_COLUMN_FLAG_INDEXED));
    CHECK_OK(ar_model_add_column(model, "dec", AR_TYPE_DECIMAL, 0));
    CHECK_OK(ar_model_add_column(model, "decn", AR_TYPE_DECIMAL, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_add_column(model, "code", AR_TYPE_TEXT, AR_COLUMN_FLAG_NULLABLE | AR_COLUMN_FLAG_UNIQUE));
    return model;
}

static void test_model_definition(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL;
    CHECK_OK(ar_open(":memory:", &db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Defined", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    /* Reserved, duplicate, empty, unknown type. */
    CHECK_RC(ar_model_add_column(model, "id", AR_TYPE_INTEGER, 0), AR_MISUSE);
    CHECK_RC(ar_model_add_column(model, "createdAt", AR_TYPE_REAL, 0), AR_MISUSE);
    CHECK_RC(ar_model_add_column(model, "updatedAt", AR_TYPE_REAL, 0), AR_MISUSE);
    CHECK_RC(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0), AR_MISUSE);
    CHECK_RC(ar_model_add_column(model, "NAME", AR_TYPE_TEXT, 0), AR_MISUSE);
    CHECK_RC(ar_model_add_column(model, "", AR_TYPE_TEXT, 0), AR_MISUSE);
    CHECK_RC(ar_model_add_column(model, "odd", (ar_type)99, 0), AR_MISUSE);
    CHECK_RC(ar_model_add_column(model, "zero", (ar_type)0, 0), AR_MISUSE);
    CHECK(strstr(ar_last_error(db), "ar_type") != NULL);
    ar_model_free(model);
    model = (ar_model *)(void *)&record; /* a failed define resets the out pointer */
    CHECK_RC(ar_model_define(db, "", &model), AR_MISUSE);
    CHECK(model == NULL);
    /* After the first record the schema is frozen. */
    CHECK_OK(ar_model_define(db, "Frozen", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_record_new(model, &record));
    CHECK_RC(ar_model_add_column(model, "late", AR_TYPE_TEXT, 0), AR_MISUSE);
    CHECK(ar_last_error(db)[0] != '\0');
    ar_record_free(record);
    ar_model_free(model);
    ar_close(db);
    current_db = NULL;
}

static void test_types(void) {
    static const unsigned char small[] = {0x00, 0x01, 0xFE, 0x00, 0xFF};
    unsigned char big[3000];
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL, *found = NULL;
    const char *text = NULL;
    const void *bytes = NULL;
    size_t length = 99;
    int64_t integer = 0;
    double real = 0;
    int32_t flag = -1, is_null = -1;
    size_t i;

    for (i = 0; i < sizeof big; i++) big[i] = (unsigned char)(i * 7 + 3);
    CHECK_OK(open_test_db(&db));
    current_db = db;
    model = define_everything(db, "Everything");

    CHECK_OK(ar_record_new(model, &record));
    CHECK(ar_record_id(record) == 0);
    /* Defaults: required columns hold their type's zero, nullable ones NULL. */
    CHECK_OK(ar_record_get_text(record, "t", &text));
    CHECK(same_text(text, ""));
    CHECK_OK(ar_record_is_null(record, "tn", &is_null));
    CHECK(is_null == 1);
    CHECK_OK(ar_record_is_null(record, "t", &is_null));
    CHECK(is_null == 0);
    CHECK_OK(ar_record_get_int64(record, "i", &integer));
    CHECK(integer == 0);
    CHECK_OK(ar_record_is_null(record, "id", &is_null));
    CHECK(is_null == 1);

    /* Text: Unicode and quotes. */
    CHECK_OK(ar_record_set_text(record, "t", "\xD0\x90\xD0\xBB\xD0\xB5\xD0\xBA\xD1\x81\xD0\xB5\xD0\xB9")); /* Алексей */
    CHECK_OK(ar_record_set_text(record, "tn", "Al'ex \"the\" `great`"));
    CHECK_OK(ar_record_set_int64(record, "i", INT64_MIN));
    CHECK_OK(ar_record_set_double(record, "r", 0.1));
    CHECK_OK(ar_record_set_blob(record, "b", small, sizeof small));
    CHECK_OK(ar_record_set_bool(record, "flag", 7));
    CHECK_OK(ar_record_set_date(record, "d", 0.0));
    CHECK_OK(ar_record_set_decimal(record, "dec", "1123.563"));
    CHECK_OK(ar_record_set_decimal(record, "decn", "-0.000001"));
    CHECK_OK(ar_record_save(record));
    CHECK(ar_record_id(record) > 0);
    CHECK_OK(ar_record_get_int64(record, "id", &integer));
    CHECK(integer == ar_record_id(record));
    CHECK_OK(ar_record_get_double(record, "createdAt", &real));
    CHECK(real > 1.6e9);

    /* Read back from a fresh handle (the row as stored). */
    CHECK_OK(ar_find(model, ar_record_id(record), &found));
    CHECK(found != NULL && found != record);
    CHECK(ar_record_id(found) == ar_record_id(record));
    CHECK_OK(ar_record_get_text(found, "t", &text));
    CHECK(same_text(text, "\xD0\x90\xD0\xBB\xD0\xB5\xD0\xBA\xD1\x81\xD0\xB5\xD0\xB9"));
    CHECK_OK(ar_record_get_text(found, "tn", &text));
    CHECK(same_text(text, "Al'ex \"the\" `great`"));
    CHECK_OK(ar_record_get_int64(found, "i", &integer));
    CHECK(integer == INT64_MIN);
    CHECK_OK(ar_record_get_double(found, "r", &real));
    CHECK(real == 0.1);
    CHECK_OK(ar_record_get_blob(found, "b", &bytes, &length));
    CHECK(length == sizeof small);
    /* The bytes must stay valid until the next call on the record, not only inside the call. */
    CHECK(bytes != NULL && length == sizeof small && memcmp(bytes, small, sizeof small) == 0);
    CHECK_OK(ar_record_get_bool(found, "flag", &flag));
    CHECK(flag == 1);
    CHECK_OK(ar_record_get_int64(found, "flag", &integer)); /* a bool is an integer */
    CHECK(integer == 1);
    CHECK_OK(ar_record_get_date(found, "d", &real));
    CHECK(real == 0.0);
    CHECK_OK(ar_record_get_text(found, "dec", &text));
    CHECK(same_text(text, "1123.563"));
    CHECK_OK(ar_record_get_text(found, "decn", &text));
    CHECK(same_text(text, "-0.000001"));
    CHECK_OK(ar_record_is_null(found, "code", &is_null));
    CHECK(is_null == 1);
    ar_record_free(found);

    /* Extremes, sub-second dates, a big blob, NULLs. */
    CHECK_OK(ar_record_set_int64(record, "i", INT64_MAX));
    CHECK_OK(ar_record_set_double(record, "r", -1e300));
    CHECK_OK(ar_record_set_date(record, "d", 1700000000.123456));
    CHECK_OK(ar_record_set_blob(record, "b", big, sizeof big));
    CHECK_OK(ar_record_set_bool(record, "flag", 0));
    CHECK_OK(ar_record_set_decimal(record, "dec", "12345678901234567890.123456789"));
    CHECK_OK(ar_record_set_text(record, "tn", NULL));
    CHECK_OK(ar_record_set_null(record, "decn"));
    CHECK_OK(ar_record_save(record));
    CHECK_OK(ar_find(model, ar_record_id(record), &found));
    CHECK_OK(ar_record_get_int64(found, "i", &integer));
    CHECK(integer == INT64_MAX);
    CHECK_OK(ar_record_get_double(found, "r", &real));
    CHECK(real == -1e300);
    CHECK_OK(ar_record_get_date(found, "d", &real));
    CHECK(real == 1700000000.123456);
    CHECK_OK(ar_record_get_blob(found, "b", &bytes, &length));
    CHECK(length == sizeof big && bytes != NULL && memcmp(bytes, big, sizeof big) == 0);
    CHECK_OK(ar_record_get_bool(found, "flag", &flag));
    CHECK(flag == 0);
    CHECK_OK(ar_record_get_text(found, "dec", &text));
    CHECK(same_text(text, "12345678901234567890.123456789"));
    text = "not reset";
    CHECK_OK(ar_record_get_text(found, "tn", &text));
    CHECK(text == NULL);
    CHECK_OK(ar_record_is_null(found, "tn", &is_null));
    CHECK(is_null == 1);
    text = "not reset";
    CHECK_OK(ar_record_get_text(found, "decn", &text));
    CHECK(text == NULL);
    CHECK_RC(ar_record_get_int64(found, "decn", &integer), AR_TYPE_MISMATCH);
    ar_record_free(found);

    /* Empty blob vs NULL. */
    CHECK_OK(ar_record_set_blob(record, "b", NULL, 0));
    CHECK_OK(ar_record_save(record));
    CHECK_OK(ar_find(model, ar_record_id(record), &found));
    length = 99;
    CHECK_OK(ar_record_get_blob(found, "b", &bytes, &length));
    CHECK(length == 0);
    CHECK_OK(ar_record_is_null(found, "b", &is_null));
    CHECK(is_null == 0);
    ar_record_free(found);
    CHECK_OK(ar_record_set_null(record, "b"));
    CHECK_OK(ar_record_save(record));
    CHECK_OK(ar_find(model, ar_record_id(record), &found));
    length = 99;
    CHECK_OK(ar_record_get_blob(found, "b", &bytes, &length));
    CHECK(length == 0 && bytes == NULL);
    CHECK_OK(ar_record_is_null(found, "b", &is_null));
    CHECK(is_null == 1);
    ar_record_free(found);

    /* Negative and sub-second dates, infinities. */
    CHECK_OK(ar_record_set_date(record, "d", -86400.25));
    CHECK_OK(ar_record_set_double(record, "r", INFINITY));
    CHECK_OK(ar_record_save(record));
    CHECK_OK(ar_record_reload(record));
    CHECK_OK(ar_record_get_date(record, "d", &real));
    CHECK(real == -86400.25);
    CHECK_OK(ar_record_get_double(record, "r", &real));
    CHECK(isinf(real) && real > 0);

    /* Values that cannot be stored. */
    CHECK_RC(ar_record_set_double(record, "r", NAN), AR_INVALID_VALUE);
    CHECK(strstr(ar_last_error(db), "SQLite would store it as NULL, so no engine stores it") != NULL);
    CHECK_RC(ar_record_set_date(record, "d", NAN), AR_INVALID_VALUE);
    CHECK_RC(ar_record_set_double(record, "r", -0.0), AR_INVALID_VALUE); /* SQLite keeps 0.0: refused everywhere */
    CHECK(strstr(ar_last_error(db), "-0.0 cannot be stored") != NULL);
    CHECK_OK(ar_record_get_double(record, "r", &real));
    CHECK(isinf(real) && real > 0); /* unchanged */
    {
        ar_query *zero = NULL;
        CHECK_OK(ar_query_new(model, "r = ?", &zero));
        CHECK_OK(ar_query_bind_double(zero, 1, -0.0)); /* a query argument: compares equal to 0.0 */
        CHECK_RC(ar_query_set_double(zero, "r", -0.0), AR_INVALID_VALUE);
        CHECK(strstr(ar_last_error(db), "ar_query_set_double: -0.0 cannot be stored") != NULL);
        CHECK_RC(ar_query_set_double(zero, "r", NAN), AR_INVALID_VALUE);
        ar_query_free(zero);
    }
    CHECK_RC(ar_record_set_decimal(record, "dec", "abc"), AR_INVALID_VALUE);
    CHECK_RC(ar_record_set_decimal(record, "dec", "1,5"), AR_INVALID_VALUE);
    CHECK_RC(ar_record_set_decimal(record, "dec", ""), AR_INVALID_VALUE);
    CHECK_RC(ar_record_set_decimal(record, "dec", "1e5"), AR_INVALID_VALUE); /* plain decimal text only */
    CHECK(strstr(ar_last_error(db), "1e5") == NULL);                         /* never the value */
    CHECK_RC(ar_record_set_decimal(record, "dec", "1-5"), AR_INVALID_VALUE);
    CHECK(ar_last_error(db)[0] != '\0');
    CHECK_OK(ar_record_get_text(record, "dec", &text)); /* unchanged by the failures */
    CHECK(same_text(text, "12345678901234567890.123456789"));

    /* Setters of the wrong type. */
    CHECK_RC(ar_record_set_text(record, "i", "12"), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_double(record, "i", 1.5), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_int64(record, "t", 1), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_blob(record, "t", "x", 1), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_text(record, "b", "x"), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_date(record, "t", 1.0), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_decimal(record, "i", "1.5"), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_null(record, "t"), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_text(record, "t", NULL), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_set_decimal(record, "dec", NULL), AR_TYPE_MISMATCH); /* NULL: required */
    CHECK_OK(ar_record_set_decimal(record, "decn", NULL));
    CHECK_OK(ar_record_is_null(record, "decn", &is_null));
    CHECK(is_null == 1);
    integer = ar_record_id(record);
    CHECK(ar_record_set_int64(record, "id", integer + 1) != AR_OK); /* the library's column */
    CHECK(ar_record_set_double(record, "createdAt", 0) != AR_OK);
    CHECK(ar_record_id(record) == integer);
    CHECK_OK(ar_record_set_int64(record, "r", 3)); /* an integer in a real column */
    CHECK_OK(ar_record_get_double(record, "r", &real));
    CHECK(real == 3.0);

    /* Getters of the wrong type. */
    CHECK_RC(ar_record_get_int64(record, "t", &integer), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_get_int64(record, "r", &integer), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_get_text(record, "i", &text), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_get_double(record, "t", &real), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_get_date(record, "t", &real), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_get_bool(record, "r", &flag), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_get_blob(record, "t", &bytes, &length), AR_TYPE_MISMATCH);
    CHECK(strstr(ar_last_error(db), "t") != NULL);

    /* Unknown columns. */
    CHECK_RC(ar_record_set_text(record, "nope", "x"), AR_UNKNOWN_COLUMN);
    CHECK_RC(ar_record_set_int64(record, "nope", 1), AR_UNKNOWN_COLUMN);
    CHECK_RC(ar_record_set_null(record, "nope"), AR_UNKNOWN_COLUMN);
    CHECK_RC(ar_record_get_text(record, "nope", &text), AR_UNKNOWN_COLUMN);
    CHECK_RC(ar_record_get_int64(record, "nope", &integer), AR_UNKNOWN_COLUMN);
    CHECK_RC(ar_record_get_blob(record, "nope", &bytes, &length), AR_UNKNOWN_COLUMN);
    CHECK_RC(ar_record_is_null(record, "nope", &is_null), AR_UNKNOWN_COLUMN);
    CHECK(strstr(ar_last_error(db), "nope") != NULL);
    CHECK_RC(ar_model_validate_presence(model, "nope"), AR_UNKNOWN_COLUMN);
    CHECK_RC(ar_model_validate_uniqueness(model, "nope"), AR_UNKNOWN_COLUMN);

    ar_record_free(record);
    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* ---- copy_text --------------------------------------------------------------------- */

static void test_copy_text(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL;
    char *copy = NULL;
    const char *text = NULL;
    CHECK_OK(open_test_db(&db));
    current_db = db;
    model = define_everything(db, "Copied");
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_set_text(record, "t", "\xD0\x90\xD0\xBB\xD0\xB5\xD0\xBA\xD1\x81\xD0\xB5\xD0\xB9"));
    CHECK_OK(ar_record_set_decimal(record, "dec", "1123.563"));
    CHECK_OK(ar_record_copy_text(record, "t", &copy));
    CHECK(same_text(copy, "\xD0\x90\xD0\xBB\xD0\xB5\xD0\xBA\xD1\x81\xD0\xB5\xD0\xB9"));
    if (copy) copy[0] = 'X'; /* the caller's own memory */
    CHECK_OK(ar_record_get_text(record, "t", &text));
    CHECK(text && (unsigned char)text[0] == 0xD0);
    ar_free(copy);
    copy = NULL;
    CHECK_OK(ar_record_copy_text(record, "dec", &copy));
    CHECK(same_text(copy, "1123.563"));
    ar_record_free(record); /* the copy outlives the record */
    CHECK(same_text(copy, "1123.563"));
    ar_free(copy);
    CHECK_OK(ar_record_new(model, &record));
    copy = (char *)"not reset";
    CHECK_OK(ar_record_copy_text(record, "tn", &copy));
    CHECK(copy == NULL);
    ar_free(copy);
    CHECK_RC(ar_record_copy_text(record, "i", &copy), AR_TYPE_MISMATCH);
    CHECK_RC(ar_record_copy_text(record, "nope", &copy), AR_UNKNOWN_COLUMN);
    ar_free(NULL);
    ar_record_free(record);
    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* ---- save, reload, destroy, find, count ------------------------------------------------ */

static void test_lifecycle(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL, *other = NULL, *found = NULL;
    const char *text = NULL;
    int64_t count = -1, id;
    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Person", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_add_column(model, "age", AR_TYPE_INTEGER, 0));
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 0);

    CHECK_OK(ar_record_new(model, &record));
    CHECK_RC(ar_record_reload(record), AR_NOT_FOUND); /* never saved */
    CHECK_OK(ar_record_set_text(record, "name", "Alex"));
    CHECK_OK(ar_record_save(record));
    id = ar_record_id(record);
    CHECK(id == 1);
    CHECK_OK(ar_record_new(model, &other));
    CHECK_OK(ar_record_set_text(other, "name", "Maria"));
    CHECK_OK(ar_record_save(other));
    CHECK(ar_record_id(other) == 2);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 2);

    /* Reload discards unsaved changes; an update is visible through find. */
    CHECK_OK(ar_record_set_text(record, "name", "Unsaved"));
    CHECK_OK(ar_record_reload(record));
    CHECK_OK(ar_record_get_text(record, "name", &text));
    CHECK(same_text(text, "Alex"));
    CHECK_OK(ar_record_set_text(record, "name", "John"));
    CHECK_OK(ar_record_save(record));
    CHECK(ar_record_id(record) == id);
    CHECK_OK(ar_find(model, id, &found));
    CHECK_OK(ar_record_get_text(found, "name", &text));
    CHECK(same_text(text, "John"));
    ar_record_free(found);
    CHECK_OK(ar_record_save(record)); /* nothing changed: still fine */

    /* Find: missing ids. */
    found = (ar_record *)&count;
    CHECK_RC(ar_find(model, 999, &found), AR_NOT_FOUND);
    CHECK(found == NULL);
    CHECK(ar_last_error(db)[0] != '\0');
    CHECK_RC(ar_find(model, 0, &found), AR_NOT_FOUND);
    CHECK_RC(ar_find(model, -1, &found), AR_NOT_FOUND);

    /* Destroy: the row goes, the handle stays valid to release. */
    CHECK_OK(ar_record_destroy(record));
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 1);
    CHECK_RC(ar_find(model, id, &found), AR_NOT_FOUND);
    CHECK(ar_record_reload(record) != AR_OK);
    CHECK(ar_record_destroy(record) != AR_OK); /* destroyed already */
    ar_record_free(record);

    /* Destroyed elsewhere: reload reports AR_NOT_FOUND. */
    CHECK_OK(ar_find(model, ar_record_id(other), &found));
    CHECK_OK(ar_record_destroy(found));
    ar_record_free(found);
    CHECK_RC(ar_record_reload(other), AR_NOT_FOUND);
    ar_record_free(other);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 0);

    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* ---- queries ------------------------------------------------------------------------ */

/* Item(name TEXT, n INTEGER, x REAL, data BLOB nullable, note TEXT nullable): ten rows,
 * name "item0".."item9", n = i, x = i / 4, data = {i}, note NULL for odd i. */
static ar_model *make_items(ar_database *db) {
    ar_model *model = NULL;
    ar_record *record = NULL;
    int i;
    CHECK_OK(ar_model_define(db, "Item", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_add_column(model, "n", AR_TYPE_INTEGER, AR_COLUMN_FLAG_INDEXED));
    CHECK_OK(ar_model_add_column(model, "x", AR_TYPE_REAL, 0));
    CHECK_OK(ar_model_add_column(model, "data", AR_TYPE_BLOB, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_add_column(model, "note", AR_TYPE_TEXT, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_begin(db));
    for (i = 0; i < 10; i++) {
        char name[16];
        unsigned char byte[2];
        byte[0] = (unsigned char)i;
        byte[1] = 0xAB;
        snprintf(name, sizeof name, "item%d", i);
        CHECK_OK(ar_record_new(model, &record));
        CHECK_OK(ar_record_set_text(record, "name", name));
        CHECK_OK(ar_record_set_int64(record, "n", i));
        CHECK_OK(ar_record_set_double(record, "x", i / 4.0));
        CHECK_OK(ar_record_set_blob(record, "data", byte, sizeof byte));
        if (i % 2 == 0) CHECK_OK(ar_record_set_text(record, "note", "even"));
        CHECK_OK(ar_record_save(record));
        ar_record_free(record);
    }
    CHECK_OK(ar_commit(db));
    return model;
}

/* The n of each record the query returns, into out (at most size); returns how many. */
static int collect(ar_query *query, int64_t *out, int size) {
    ar_record *record = NULL;
    ar_result rc;
    int count = 0;
    while ((rc = ar_query_next(query, &record)) == AR_OK) {
        int64_t n = -1;
        CHECK(record != NULL);
        CHECK_OK(ar_record_get_int64(record, "n", &n));
        if (count < size) out[count] = n;
        count++;
        ar_record_free(record);
    }
    CHECK_RC(rc, AR_DONE);
    CHECK(record == NULL);
    return count;
}

static void test_queries(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_query *query = NULL;
    ar_record *record = NULL;
    int64_t n[16], count = -1;
    unsigned char byte[2];
    int got;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    model = make_items(db);

    /* All, in id order by default; AR_DONE repeats after the end. */
    CHECK_OK(ar_query_new(model, NULL, &query));
    got = collect(query, n, 16);
    CHECK(got == 10 && n[0] == 0 && n[9] == 9);
    record = (ar_record *)&count;
    CHECK_RC(ar_query_next(query, &record), AR_DONE);
    CHECK(record == NULL);
    CHECK_RC(ar_query_bind_int64(query, 1, 1), AR_INVALID_PREDICATE); /* no placeholders */
    ar_query_free(query);

    /* Text. */
    CHECK_OK(ar_query_new(model, "name = ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, "item7"));
    got = collect(query, n, 16);
    CHECK(got == 1 && n[0] == 7);
    CHECK_RC(ar_query_bind_text(query, 1, "item8"), AR_MISUSE); /* it already ran */
    ar_query_free(query);

    /* Integers, with %@ placeholders too. */
    CHECK_OK(ar_query_new(model, "n >= %@ AND n < ?", &query));
    CHECK_OK(ar_query_bind_int64(query, 1, 3));
    CHECK_OK(ar_query_bind_int64(query, 2, 6));
    got = collect(query, n, 16);
    CHECK(got == 3 && n[0] == 3 && n[1] == 4 && n[2] == 5);
    ar_query_free(query);

    /* Reals. */
    CHECK_OK(ar_query_new(model, "x > ?", &query));
    CHECK_OK(ar_query_bind_double(query, 1, 1.6));
    got = collect(query, n, 16);
    CHECK(got == 3 && n[0] == 7);
    ar_query_free(query);
    CHECK_OK(ar_query_new(model, "x = ?", &query));
    CHECK_RC(ar_query_bind_double(query, 1, NAN), AR_INVALID_VALUE);
    ar_query_free(query);

    /* Blobs. */
    byte[0] = 4;
    byte[1] = 0xAB;
    CHECK_OK(ar_query_new(model, "data = ?", &query));
    CHECK_OK(ar_query_bind_blob(query, 1, byte, sizeof byte));
    byte[0] = 5; /* copied when bound */
    got = collect(query, n, 16);
    CHECK(got == 1 && n[0] == 4);
    ar_query_free(query);
    CHECK_OK(ar_query_new(model, "data = ?", &query));
    CHECK_OK(ar_query_bind_blob(query, 1, NULL, 0)); /* an empty blob: no row has one */
    CHECK(count_and_free(query) == 0);

    /* NULL: bind_null and bind_text(NULL) mean IS NULL; != means IS NOT NULL. */
    CHECK_OK(ar_query_new(model, "note = ?", &query));
    CHECK_OK(ar_query_bind_null(query, 1));
    got = collect(query, n, 16);
    CHECK(got == 5 && n[0] == 1 && n[4] == 9);
    ar_query_free(query);
    CHECK_OK(ar_query_new(model, "note = ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, NULL));
    CHECK(count_and_free(query) == 5);
    CHECK_OK(ar_query_new(model, "note != ?", &query));
    CHECK_OK(ar_query_bind_null(query, 1));
    CHECK(count_and_free(query) == 5);

    /* Every bind type in one predicate; a later bind replaces an earlier one. */
    byte[0] = 6;
    byte[1] = 0xAB;
    CHECK_OK(ar_query_new(model, "name = ? AND n = ? AND x = ? AND data = ? AND note = ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, "wrong"));
    CHECK_OK(ar_query_bind_text(query, 1, "item6"));
    CHECK_OK(ar_query_bind_int64(query, 2, 6));
    CHECK_OK(ar_query_bind_double(query, 3, 1.5));
    CHECK_OK(ar_query_bind_blob(query, 4, byte, sizeof byte));
    CHECK_OK(ar_query_bind_text(query, 5, "even"));
    CHECK_OK(ar_query_count(query, &count));
    CHECK(count == 1);
    got = collect(query, n, 16);
    CHECK(got == 1 && n[0] == 6);
    ar_query_free(query);

    /* Order, limit, offset and count. */
    CHECK_OK(ar_query_new(model, "n >= ?", &query));
    CHECK_OK(ar_query_bind_int64(query, 1, 2));
    CHECK_OK(ar_query_order(query, "n", 0));
    CHECK_OK(ar_query_limit(query, 3));
    CHECK_OK(ar_query_offset(query, 1));
    CHECK_OK(ar_query_count(query, &count));
    CHECK(count == 3);
    got = collect(query, n, 16);
    CHECK(got == 3 && n[0] == 8 && n[1] == 7 && n[2] == 6);
    ar_query_free(query);
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_offset(query, 8));
    CHECK_OK(ar_query_count(query, &count));
    CHECK(count == 2);
    got = collect(query, n, 16);
    CHECK(got == 2 && n[0] == 8 && n[1] == 9);
    ar_query_free(query);
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_limit(query, 0));
    CHECK(count_and_free(query) == 0);
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_offset(query, 100));
    CHECK(count_and_free(query) == 0);
    /* Two orderings: note (NULLs first ascending), then n descending. */
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_order(query, "note", 1));
    CHECK_OK(ar_query_order(query, "n", 0));
    got = collect(query, n, 16);
    CHECK(got == 10 && n[0] == 9 && n[4] == 1 && n[5] == 8 && n[9] == 0);
    ar_query_free(query);
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_RC(ar_query_limit(query, -1), AR_INVALID_VALUE);
    CHECK_RC(ar_query_offset(query, -5), AR_INVALID_VALUE);
    ar_query_free(query);

    /* Bad predicates: syntax errors (with a position), unknown columns. */
    query = (ar_query *)&count;
    CHECK_RC(ar_query_new(model, "name = = ?", &query), AR_INVALID_PREDICATE);
    CHECK(query == NULL);
    CHECK(strstr(ar_last_error(db), "position") != NULL);
    CHECK_RC(ar_query_new(model, "(name = ?", &query), AR_INVALID_PREDICATE);
    CHECK_RC(ar_query_new(model, "name = ? AND", &query), AR_INVALID_PREDICATE);
    CHECK_RC(ar_query_new(model, "name = 'a'; DROP TABLE Item", &query), AR_INVALID_PREDICATE);
    CHECK_RC(ar_query_new(model, "name = 'unterminated", &query), AR_INVALID_PREDICATE);
    CHECK_RC(ar_query_new(model, "nmae = ?", &query), AR_UNKNOWN_COLUMN);
    CHECK(strstr(ar_last_error(db), "nmae") != NULL);
    CHECK_RC(ar_query_new(model, "Other.name = ?", &query), AR_UNKNOWN_COLUMN);
    CHECK(query == NULL);

    /* Placeholders and values that do not match. */
    CHECK_OK(ar_query_new(model, "n > ? AND n < ?", &query));
    CHECK_RC(ar_query_bind_int64(query, 0, 1), AR_INVALID_PREDICATE);
    CHECK_RC(ar_query_bind_int64(query, 3, 1), AR_INVALID_PREDICATE);
    CHECK_RC(ar_query_bind_text(query, -1, "x"), AR_INVALID_PREDICATE);
    CHECK_RC(ar_query_bind_null(query, 3), AR_INVALID_PREDICATE);
    CHECK_OK(ar_query_bind_int64(query, 1, 1));
    CHECK_RC(ar_query_count(query, &count), AR_INVALID_PREDICATE); /* placeholder 2 unbound */
    CHECK(strstr(ar_last_error(db), "2") != NULL);
    CHECK_RC(ar_query_next(query, &record), AR_INVALID_PREDICATE);
    CHECK(record == NULL);
    CHECK_OK(ar_query_bind_int64(query, 2, 4));
    got = collect(query, n, 16);
    CHECK(got == 2 && n[0] == 2 && n[1] == 3);
    ar_query_free(query);

    /* An unknown ordering column is refused at once. */
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_RC(ar_query_order(query, "nope", 1), AR_UNKNOWN_COLUMN);
    CHECK(strstr(ar_last_error(db), "nope") != NULL);
    ar_query_free(query);

    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* Values that look like SQL are data: bound, stored and matched literally. */
static void test_injection(void) {
    static const char *const evil[] = {
        "'; DROP TABLE \"Item\"; --",
        "Robert'); DROP TABLE Students;--",
        "\" OR 1=1 --",
        "x' OR '1'='1",
        "%' OR 1=1 --",
        "?",
        "%@",
    };
    const size_t n_evil = sizeof evil / sizeof evil[0];
    ar_database *db = NULL;
    ar_model *model = NULL, *weird = NULL;
    ar_record *record = NULL;
    ar_query *query = NULL;
    const char *text = NULL;
    int64_t count = -1;
    size_t i;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    model = make_items(db);
    for (i = 0; i < n_evil; i++) {
        CHECK_OK(ar_record_new(model, &record));
        CHECK_OK(ar_record_set_text(record, "name", evil[i]));
        CHECK_OK(ar_record_set_text(record, "note", evil[i]));
        CHECK_OK(ar_record_save(record));
        ar_record_free(record);
    }
    for (i = 0; i < n_evil; i++) {
        CHECK_OK(ar_query_new(model, "name = ? AND note = ?", &query));
        CHECK_OK(ar_query_bind_text(query, 1, evil[i]));
        CHECK_OK(ar_query_bind_text(query, 2, evil[i]));
        CHECK_OK(ar_query_next(query, &record));
        CHECK_OK(ar_record_get_text(record, "name", &text));
        CHECK(same_text(text, evil[i]));
        ar_record_free(record);
        CHECK_RC(ar_query_next(query, &record), AR_DONE);
        ar_query_free(query);
    }
    /* Patterns are data too: only the rows whose text matches the pattern. */
    CHECK_OK(ar_query_new(model, "name LIKE ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, "' OR 1=1 --"));
    CHECK(count_and_free(query) == 0);
    CHECK_OK(ar_query_new(model, "name = ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, "x' OR '1'='1"));
    CHECK(count_and_free(query) == 1);
    /* The table is intact. */
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 10 + (int64_t)n_evil);

    /* Names that look like SQL are quoted identifiers. */
    CHECK_OK(ar_model_define(db, "Robert\"); DROP TABLE \"Item\"; --", &weird));
    CHECK_OK(ar_model_add_column(weird, "a\"b; DROP TABLE Item", AR_TYPE_TEXT, AR_COLUMN_FLAG_UNIQUE));
    CHECK_OK(ar_record_new(weird, &record));
    CHECK_OK(ar_record_set_text(record, "a\"b; DROP TABLE Item", "'); DROP TABLE Item; --"));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);
    CHECK_OK(ar_query_new(weird, "\"a\"\"b; DROP TABLE Item\" = ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, "'); DROP TABLE Item; --"));
    CHECK(count_and_free(query) == 1);
    CHECK_OK(ar_query_new(weird, NULL, &query));
    CHECK_OK(ar_query_order(query, "a\"b; DROP TABLE Item", 0));
    CHECK(count_and_free(query) == 1);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 10 + (int64_t)n_evil);
    ar_model_free(weird);

    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* ---- transactions -------------------------------------------------------------------- */

static int64_t count_of(ar_model *model) {
    int64_t count = -1;
    CHECK_OK(ar_count(model, &count));
    return count;
}

static void add_named(ar_model *model, const char *name) {
    ar_record *record = NULL;
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_set_text(record, "name", name));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);
}

static int64_t count_named(ar_model *model, const char *name) {
    ar_query *query = NULL;
    CHECK_OK(ar_query_new(model, "name = ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, name));
    return count_and_free(query);
}

/* ---- query cursors on a file --------------------------------------------------------- */

/* Checks that record holds item i of make_items: id i + 1, name "item<i>", n = i, data {i, 0xAB},
 * note "even" or NULL. */
static void check_item(ar_record *record, int i) {
    const char *text = NULL;
    const void *bytes = NULL;
    size_t length = 0;
    int64_t n = -1;
    int32_t is_null = -1;
    char name[16];
    snprintf(name, sizeof name, "item%d", i);
    CHECK(ar_record_id(record) == i + 1);
    CHECK_OK(ar_record_get_text(record, "name", &text));
    CHECK(same_text(text, name));
    CHECK_OK(ar_record_get_int64(record, "n", &n));
    CHECK(n == i);
    CHECK_OK(ar_record_get_blob(record, "data", &bytes, &length));
    CHECK(length == 2 && bytes && ((const unsigned char *)bytes)[0] == i && ((const unsigned char *)bytes)[1] == 0xAB);
    CHECK_OK(ar_record_is_null(record, "note", &is_null));
    CHECK(is_null == (i % 2 != 0));
}

/* On a file database outside a transaction, ar_query_next steps a cursor on a reader
 * connection and each record reads the cursor's row: until it is changed, or C still holds
 * it when the cursor moves on or the query is released. */
static void test_cursor(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_query *query = NULL, *queries[6];
    ar_record *held[12], *record = NULL, *extra = NULL;
    const char *text = NULL, *first = NULL;
    int64_t n = -1, count = -1;
    int i, j, got;
    char path[600];
    open_scratch_db(path, sizeof path, "cursor.sqlite", &db);
    model = make_items(db);

    /* Every record held to the end keeps its values; a text returned before the cursor
     * moved stays valid (owned by the record); the query is released before the records. */
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_next(query, &held[0]));
    CHECK_OK(ar_record_get_text(held[0], "name", &first));
    for (i = 1; i < 10; i++) CHECK_OK(ar_query_next(query, &held[i]));
    CHECK(same_text(first, "item0"));
    CHECK_RC(ar_query_next(query, &record), AR_DONE);
    for (i = 0; i < 10; i++) check_item(held[i], i);
    ar_query_free(query);
    for (i = 0; i < 10; i++) {
        check_item(held[i], i);
        ar_record_free(held[i]);
    }

    /* Every other record released at once (its handle is reused), the others kept. */
    CHECK_OK(ar_query_new(model, NULL, &query));
    for (i = 0; i < 10; i++) {
        CHECK_OK(ar_query_next(query, &record));
        check_item(record, i);
        if (i % 2 == 0) {
            ar_record_free(record);
        } else {
            held[i / 2] = record;
        }
    }
    CHECK_RC(ar_query_next(query, &record), AR_DONE);
    for (i = 0; i < 5; i++) {
        check_item(held[i], 2 * i + 1);
        ar_record_free(held[i]);
    }
    ar_query_free(query);

    /* A query released with its record still held, before the rows ran out. */
    CHECK_OK(ar_query_new(model, "n >= ?", &query));
    CHECK_OK(ar_query_bind_int64(query, 1, 4));
    CHECK_OK(ar_query_next(query, &record));
    ar_query_free(query);
    check_item(record, 4);
    ar_record_free(record);

    /* A getter of the wrong type on a row. */
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_next(query, &record));
    CHECK_RC(ar_record_get_int64(record, "name", &n), AR_TYPE_MISMATCH);
    CHECK(strstr(ar_last_error(db), "TEXT") != NULL);
    CHECK_RC(ar_record_get_text(record, "nope", &text), AR_UNKNOWN_COLUMN);
    check_item(record, 0);
    ar_record_free(record);
    ar_query_free(query);

    /* Writes while a cursor is open are committed at once (a new query and ar_count see
     * them); the open cursor reads the rows as they were when it started. */
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_next(query, &record));
    check_item(record, 0);
    ar_record_free(record);
    CHECK_OK(ar_record_new(model, &extra));
    CHECK_OK(ar_record_set_text(extra, "name", "extra"));
    CHECK_OK(ar_record_set_int64(extra, "n", 100));
    CHECK_OK(ar_record_save(extra));
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 11);
    got = 1;
    while (ar_query_next(query, &record) == AR_OK) {
        check_item(record, got++);
        ar_record_free(record);
    }
    CHECK(got == 10);
    ar_query_free(query);

    /* A row record changed and saved, reloaded, or destroyed in the middle of a loop. */
    CHECK_OK(ar_query_new(model, "n < ?", &query));
    CHECK_OK(ar_query_bind_int64(query, 1, 100));
    for (i = 0; ar_query_next(query, &record) == AR_OK; i++) {
        if (i == 2) {
            CHECK_OK(ar_record_set_text(record, "name", "renamed"));
            CHECK_OK(ar_record_get_text(record, "name", &text));
            CHECK(same_text(text, "renamed"));
            CHECK_OK(ar_record_reload(record));
            check_item(record, 2);
            CHECK_OK(ar_record_set_int64(record, "n", 102));
            CHECK_OK(ar_record_save(record));
        } else if (i == 3) {
            CHECK_OK(ar_record_destroy(record));
        } else {
            check_item(record, i);
        }
        ar_record_free(record);
    }
    CHECK(i == 10);
    ar_query_free(query);
    CHECK(count_named(model, "item3") == 0);
    CHECK_OK(ar_find(model, 3, &record));
    CHECK_OK(ar_record_get_int64(record, "n", &n));
    CHECK(n == 102);
    ar_record_free(record);

    /* More queries open at once than there are reader connections: each gives its records
     * (the later ones read all at once), interleaved. */
    for (j = 0; j < 6; j++) {
        CHECK_OK(ar_query_new(model, "n < ?", &queries[j]));
        CHECK_OK(ar_query_bind_int64(queries[j], 1, 2));
        CHECK_OK(ar_query_next(queries[j], &held[j]));
    }
    for (j = 0; j < 6; j++) {
        check_item(held[j], 0);
        ar_record_free(held[j]);
        CHECK_OK(ar_query_next(queries[j], &record));
        check_item(record, 1);
        ar_record_free(record);
        CHECK_RC(ar_query_next(queries[j], &record), AR_DONE);
        ar_query_free(queries[j]);
    }

    /* In a transaction a query reads the transaction's own writes. */
    CHECK_OK(ar_begin(db));
    CHECK_OK(ar_record_set_text(extra, "name", "inside"));
    CHECK_OK(ar_record_save(extra));
    CHECK(count_named(model, "inside") == 1);
    CHECK_OK(ar_query_new(model, "name = ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, "inside"));
    CHECK_OK(ar_query_next(query, &record));
    CHECK(ar_record_id(record) == ar_record_id(extra));
    ar_record_free(record);
    ar_query_free(query);
    CHECK_OK(ar_rollback(db));
    CHECK(count_named(model, "inside") == 0);
    CHECK(count_named(model, "extra") == 1);
    ar_record_free(extra);

    ar_model_free(model);
    ar_close(db);
    current_db = NULL;
    remove_database(path);
}

static void test_transactions(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    char path[600];
    open_scratch_db(path, sizeof path, "transactions.sqlite", &db);
    CHECK_OK(ar_model_define(db, "Entry", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));

    /* Out of order. */
    CHECK_RC(ar_commit(db), AR_MISUSE);
    CHECK(ar_last_error(db)[0] != '\0');
    CHECK_RC(ar_rollback(db), AR_MISUSE);

    /* Commit keeps, rollback discards. */
    CHECK_OK(ar_begin(db));
    add_named(model, "committed");
    CHECK_OK(ar_commit(db));
    CHECK(count_of(model) == 1);
    CHECK_OK(ar_begin(db));
    add_named(model, "rolled back");
    CHECK(count_of(model) == 2);
    CHECK_OK(ar_rollback(db));
    CHECK(count_of(model) == 1);
    CHECK(count_named(model, "rolled back") == 0);

    /* A savepoint rolled back alone (the VinylRecord scenario: A kept, B rolled back). */
    CHECK_OK(ar_begin(db));
    add_named(model, "A");
    CHECK_OK(ar_begin(db));
    add_named(model, "B");
    CHECK(count_of(model) == 3);
    CHECK_OK(ar_rollback(db));
    CHECK(count_of(model) == 2);
    add_named(model, "A2");
    CHECK_OK(ar_commit(db));
    CHECK(count_named(model, "A") == 1);
    CHECK(count_named(model, "A2") == 1);
    CHECK(count_named(model, "B") == 0);

    /* A committed savepoint is undone by rolling back the outer transaction. */
    CHECK_OK(ar_begin(db));
    add_named(model, "C");
    CHECK_OK(ar_begin(db));
    add_named(model, "D");
    CHECK_OK(ar_begin(db));
    add_named(model, "E");
    CHECK_OK(ar_commit(db));
    CHECK_OK(ar_commit(db));
    CHECK(count_of(model) == 6);
    CHECK_OK(ar_rollback(db));
    CHECK(count_of(model) == 3);
    CHECK_RC(ar_commit(db), AR_MISUSE); /* nothing left open */

    ar_model_free(model);
    ar_close(db);

    /* Committed rows are on disk. */
    CHECK_OK(ar_open(path, &db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Entry", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK(count_of(model) == 3);
    ar_model_free(model);
    ar_close(db);
    current_db = NULL;
    remove_database(path);
}

/* ---- lost updates: a lockVersion column ------------------------------------------------- */

/* A model with an integer lockVersion column is locked optimistically: of two records loaded at
 * the same version, the second save finds the row changed (AR_RETRY, retryable) and writes
 * nothing; reloaded, it saves. */
static void test_stale_record(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL, *first = NULL, *second = NULL;
    int64_t id = 0, value = -1;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Wallet", &model));
    CHECK_OK(ar_model_add_column(model, "cents", AR_TYPE_INTEGER, 0));
    CHECK_OK(ar_model_add_column(model, "lockVersion", AR_TYPE_INTEGER, 0));
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_set_int64(record, "cents", 100));
    CHECK_OK(ar_record_save(record));
    id = ar_record_id(record);
    CHECK_OK(ar_find(model, id, &first));
    CHECK_OK(ar_find(model, id, &second));

    CHECK_OK(ar_record_set_int64(first, "cents", 150));
    CHECK_OK(ar_record_save(first));
    CHECK_OK(ar_record_get_int64(first, "lockVersion", &value));
    CHECK(value == 1);
    CHECK_OK(ar_record_set_int64(second, "cents", 90));
    CHECK_RC(ar_record_save(second), AR_RETRY);
    CHECK(strstr(ar_last_error(db), "changed by another transaction") != NULL);
    CHECK_RC(ar_record_destroy(second), AR_RETRY);
    CHECK_OK(ar_record_reload(second));
    CHECK_OK(ar_record_get_int64(second, "cents", &value));
    CHECK(value == 150);
    CHECK_OK(ar_record_set_int64(second, "cents", 90));
    CHECK_OK(ar_record_save(second));
    CHECK_OK(ar_record_get_int64(second, "lockVersion", &value));
    CHECK(value == 2);

    ar_record_free(record);
    ar_record_free(first);
    ar_record_free(second);
    ar_model_free(model);
    close_test_db(db);
}

/* ---- ar_db_retrying: a whole transaction run again on a retryable error ---------------- */

struct retry_context {
    ar_model *model;
    int runs;
    int fail_until; /* runs before this one return AR_RETRY after their write */
    ar_record *stale; /* saved on the first run, when set: a lost update (AR_RETRY) */
};

static ar_result retry_body(ar_database *db, void *context) {
    struct retry_context *retry = context;
    ar_record *record = NULL;
    ar_result rc;
    (void)db;
    retry->runs++;
    if (retry->stale != NULL) {
        if (retry->runs > 1 && (rc = ar_record_reload(retry->stale)) != AR_OK) return rc;
        if ((rc = ar_record_set_int64(retry->stale, "cents", 7)) != AR_OK) return rc;
        return ar_record_save(retry->stale); /* AR_RETRY the first time: reloaded, it saves */
    }
    if ((rc = ar_record_new(retry->model, &record)) != AR_OK) return rc;
    rc = ar_record_set_int64(record, "cents", retry->runs);
    if (rc == AR_OK) rc = ar_record_save(record);
    ar_record_free(record);
    if (rc != AR_OK) return rc;
    if (retry->runs < retry->fail_until) return AR_RETRY;
    if (retry->fail_until < 0) return ar_record_set_int64(NULL, "cents", 1); /* not retryable */
    return AR_OK;
}

static void test_retrying(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL, *stale = NULL, *fresh = NULL;
    int64_t count = -1, value = -1, id = 0;
    struct retry_context retry;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Retried", &model));
    CHECK_OK(ar_model_add_column(model, "cents", AR_TYPE_INTEGER, 0));
    CHECK_OK(ar_model_add_column(model, "lockVersion", AR_TYPE_INTEGER, 0));

    /* Two attempts ask for another; the third commits: one row, the third's. */
    memset(&retry, 0, sizeof retry);
    retry.model = model;
    retry.fail_until = 3;
    CHECK_OK(ar_db_retrying(db, 5, retry_body, &retry));
    CHECK(retry.runs == 3);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 1);

    /* A call that fails for good: its result, after one attempt, nothing written. */
    memset(&retry, 0, sizeof retry);
    retry.model = model;
    retry.fail_until = -1;
    CHECK_RC(ar_db_retrying(db, 5, retry_body, &retry), AR_MISUSE);
    CHECK(retry.runs == 1);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 1);

    /* Out of attempts: AR_RETRY, nothing written. */
    memset(&retry, 0, sizeof retry);
    retry.model = model;
    retry.fail_until = 100;
    CHECK_RC(ar_db_retrying(db, 2, retry_body, &retry), AR_RETRY);
    CHECK(retry.runs == 2);
    CHECK(strstr(ar_last_error(db), "returned AR_RETRY") != NULL);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 1);

    /* A lost update inside the body (the library's own AR_RETRY): reloaded on the next attempt. */
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_set_int64(record, "cents", 100));
    CHECK_OK(ar_record_save(record));
    id = ar_record_id(record);
    CHECK_OK(ar_find(model, id, &stale));
    CHECK_OK(ar_record_set_int64(record, "cents", 150));
    CHECK_OK(ar_record_save(record));
    memset(&retry, 0, sizeof retry);
    retry.model = model;
    retry.stale = stale;
    CHECK_OK(ar_db_retrying(db, 3, retry_body, &retry));
    CHECK(retry.runs == 2);
    CHECK_OK(ar_find(model, id, &fresh));
    CHECK_OK(ar_record_get_int64(fresh, "cents", &value));
    CHECK(value == 7);

    /* Misuse: no body, no attempts, inside a transaction. */
    CHECK_RC(ar_db_retrying(db, 3, NULL, NULL), AR_MISUSE);
    CHECK_RC(ar_db_retrying(db, 0, retry_body, &retry), AR_MISUSE);
    CHECK_RC(ar_db_retrying(NULL, 3, retry_body, &retry), AR_MISUSE);
    CHECK_OK(ar_begin(db));
    CHECK_RC(ar_db_retrying(db, 3, retry_body, &retry), AR_MISUSE);
    CHECK(strstr(ar_last_error(db), "outside any transaction") != NULL);
    CHECK_OK(ar_rollback(db));

    ar_record_free(record);
    ar_record_free(stale);
    ar_record_free(fresh);
    ar_model_free(model);
    close_test_db(db);
}

/* ---- text that is not UTF-8 ----------------------------------------------------------- */

/* C hands bytes: text, names and paths that are not UTF-8 are refused, not repaired (repaired,
 * "T\xff" and "T\xfe" would be one table, and a column could not be named as it was given). */
static void test_invalid_text(void) {
    ar_database *db = NULL, *other = NULL;
    ar_model *model = NULL, *bad = NULL;
    ar_record *record = NULL;
    ar_query *query = NULL;
    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_RC(ar_model_define(db, "T\xff", &bad), AR_INVALID_VALUE);
    CHECK(bad == NULL);
    CHECK(strstr(ar_last_error(db), "UTF-8") != NULL);
    CHECK_OK(ar_model_define(db, "Words", &model));
    CHECK_RC(ar_model_add_column(model, "caf\xc3", AR_TYPE_TEXT, 0), AR_INVALID_VALUE);
    CHECK_OK(ar_model_add_column(model, "word", AR_TYPE_TEXT, 0));
    CHECK_RC(ar_model_validate_presence(model, "wor\xc3"), AR_INVALID_VALUE);
    CHECK_OK(ar_record_new(model, &record));
    CHECK_RC(ar_record_set_text(record, "word", "caf\xc3"), AR_INVALID_VALUE);
    CHECK_RC(ar_record_set_text(record, "word", "\xff\xfe"), AR_INVALID_VALUE);
    CHECK_OK(ar_record_set_text(record, "word", "caf\xc3\xa9")); /* café, valid */
    CHECK_OK(ar_record_save(record));
    CHECK_RC(ar_query_new(model, "word = '\xff'", &query), AR_INVALID_VALUE);
    CHECK(query == NULL);
    CHECK_OK(ar_query_new(model, "word = ?", &query));
    CHECK_RC(ar_query_bind_text(query, 1, "\xfe"), AR_INVALID_VALUE);
    CHECK_OK(ar_query_bind_text(query, 1, "caf\xc3\xa9"));
    CHECK(count_and_free(query) == 1);
    CHECK_RC(ar_open("scratch-\xff.sqlite", &other), AR_INVALID_VALUE);
    CHECK(other == NULL);
    ar_record_free(record);
    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* ---- a transaction ends on the thread that began it ------------------------------------ */

typedef struct {
    ar_database *db;
    ar_model *model;
    ar_result commit;
    ar_result save;
} WrongThread;

static void *commit_from_another_thread(void *argument) {
    WrongThread *work = argument;
    work->commit = ar_commit(work->db);
    return NULL;
}

static void *save_from_another_thread(void *argument) {
    WrongThread *work = argument;
    ar_record *record = NULL;
    if (ar_record_new(work->model, &record) == AR_OK) {
        ar_record_set_text(record, "name", "other thread");
        work->save = ar_record_save(record);
    }
    ar_record_free(record);
    return NULL;
}

/* ar_begin on one thread and ar_commit on another would leave the transaction open and every
 * other writer waiting forever: it is AR_MISUSE, and the transaction stays its thread's. */
static void test_transaction_on_another_thread(void) {
    ar_database *db = NULL;
    WrongThread work;
    pthread_t thread;
    char path[600];
    open_scratch_db(path, sizeof path, "wrong-thread.sqlite", &db);
    memset(&work, 0, sizeof work);
    work.db = db;
    CHECK_OK(ar_model_define(db, "Entry", &work.model));
    CHECK_OK(ar_model_add_column(work.model, "name", AR_TYPE_TEXT, 0));
    CHECK(count_of(work.model) == 0);
    CHECK_OK(ar_begin(db));
    add_named(work.model, "mine");
    CHECK(pthread_create(&thread, NULL, commit_from_another_thread, &work) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(work.commit == AR_MISUSE);
    CHECK_OK(ar_commit(db)); /* its own thread ends it */
    /* Nobody waits forever: another thread saves. */
    CHECK(pthread_create(&thread, NULL, save_from_another_thread, &work) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(work.save == AR_OK);
    CHECK(count_of(work.model) == 2);
    ar_model_free(work.model);
    ar_close(db);
    current_db = NULL;
    remove_database(path);
}

/* ---- a quote followed by a combining mark ------------------------------------------- */

/* `"` followed by U+0301 is one Swift Character but two UTF-8 sequences to SQLite: names
 * holding it must be quoted byte by byte everywhere — in the uniqueness validation's query
 * and in ar_query_children's key — or the SQL breaks (or worse). */
static void test_quote_with_combining_mark(void) {
    ar_database *db = NULL;
    ar_model *parents = NULL, *kids = NULL;
    ar_record *parent = NULL, *twin = NULL, *kid = NULL;
    ar_query *query = NULL;
    const char *column = "x\"\xCC\x81y";           /* x, ", U+0301, y */
    const char *parent_name = "P\"\xCC\x81" "arent";
    const char *parent_key = "p\"\xCC\x81" "arentId";  /* ar_model_belongs_to's key */
    const char *key = NULL, *property = NULL, *text = NULL;
    int64_t id = -1;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, parent_name, &parents));
    CHECK_OK(ar_model_add_column(parents, column, AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_validate_uniqueness(parents, column));
    CHECK_OK(ar_model_define(db, "Kid", &kids));
    CHECK_OK(ar_model_add_column(kids, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_belongs_to(kids, parents));

    CHECK_OK(ar_record_new(parents, &parent));
    CHECK_OK(ar_record_set_text(parent, column, "same"));
    CHECK_OK(ar_record_save(parent));
    CHECK_OK(ar_record_get_text(parent, column, &text));
    CHECK(same_text(text, "same"));
    /* The uniqueness validation's query runs and finds the first one. */
    CHECK_OK(ar_record_new(parents, &twin));
    CHECK_OK(ar_record_set_text(twin, column, "same"));
    CHECK_RC(ar_record_save(twin), AR_VALIDATION_FAILED);
    CHECK_OK(ar_record_error(twin, 0, &property, &key, NULL));
    CHECK(same_text(property, column));
    CHECK(same_text(key, "already_exists"));
    CHECK_OK(ar_record_set_text(twin, column, "other"));
    CHECK_OK(ar_record_save(twin));

    /* The children's query names the key column, quoted. */
    CHECK_OK(ar_record_new(kids, &kid));
    CHECK_OK(ar_record_set_text(kid, "name", "Ann"));
    CHECK_OK(ar_record_set_int64(kid, parent_key, ar_record_id(parent)));
    CHECK_OK(ar_record_save(kid));
    ar_record_free(kid);
    CHECK_OK(ar_query_children(parent, kids, &query));
    CHECK_OK(ar_query_next(query, &kid));
    CHECK_OK(ar_record_get_int64(kid, parent_key, &id));
    CHECK(id == ar_record_id(parent));
    ar_record_free(kid);
    CHECK_RC(ar_query_next(query, &kid), AR_DONE);
    ar_query_free(query);
    CHECK_OK(ar_query_children(twin, kids, &query));
    CHECK(count_and_free(query) == 0);

    ar_record_free(parent);
    ar_record_free(twin);
    ar_model_free(kids);
    ar_model_free(parents);
    close_test_db(db);
    current_db = NULL;
}

/* ---- validations and constraints ---------------------------------------------------- */

static void test_validations(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL, *other = NULL;
    const char *property = NULL, *key = NULL, *message = NULL;
    int64_t count = -1;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Account", &model));
    CHECK_OK(ar_model_add_column(model, "login", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_add_column(model, "nick", AR_TYPE_TEXT, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_add_column(model, "key", AR_TYPE_BLOB, 0));
    CHECK_OK(ar_model_add_column(model, "email", AR_TYPE_TEXT, AR_COLUMN_FLAG_UNIQUE));
    CHECK_OK(ar_model_validate_presence(model, "login"));
    CHECK_OK(ar_model_validate_presence(model, "nick"));
    CHECK_OK(ar_model_validate_presence(model, "key"));
    CHECK_OK(ar_model_validate_uniqueness(model, "login"));

    /* Presence: empty text, NULL, an empty blob; nothing is written. */
    CHECK_OK(ar_record_new(model, &record));
    CHECK(ar_record_error_count(record) == 0);
    CHECK_OK(ar_record_set_text(record, "login", " \t"));
    CHECK_OK(ar_record_set_blob(record, "key", NULL, 0));
    CHECK_OK(ar_record_set_text(record, "email", "a@example.com"));
    CHECK_RC(ar_record_save(record), AR_VALIDATION_FAILED);
    CHECK(ar_record_id(record) == 0);
    CHECK(strstr(ar_last_error(db), "blank") != NULL);
    CHECK(ar_record_error_count(record) == 3);
    CHECK_OK(ar_record_error(record, 0, &property, &key, &message));
    CHECK(same_text(property, "login"));
    CHECK(same_text(key, "cant_be_blank"));
    CHECK(same_text(message, "can't be blank"));
    CHECK_OK(ar_record_error(record, 1, &property, NULL, NULL));
    CHECK(same_text(property, "nick"));
    CHECK_OK(ar_record_error(record, 2, NULL, &key, NULL));
    CHECK(same_text(key, "cant_be_blank"));
    CHECK_OK(ar_record_error(record, 2, &property, NULL, NULL));
    CHECK(same_text(property, "key"));
    CHECK_RC(ar_record_error(record, 3, &property, &key, &message), AR_MISUSE);
    CHECK_RC(ar_record_error(record, -1, &property, &key, &message), AR_MISUSE);
    CHECK_OK(ar_record_error(record, 0, NULL, NULL, NULL));
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 0);

    /* Fixed: saved, no errors left. */
    CHECK_OK(ar_record_set_text(record, "login", "alex"));
    CHECK_OK(ar_record_set_text(record, "nick", "Al"));
    CHECK_OK(ar_record_set_blob(record, "key", "k", 1));
    CHECK_OK(ar_record_save(record));
    CHECK(ar_record_error_count(record) == 0);
    CHECK(ar_record_id(record) > 0);

    /* Uniqueness: another record with the same login; the record itself may be saved again. */
    CHECK_OK(ar_record_new(model, &other));
    CHECK_OK(ar_record_set_text(other, "login", "alex"));
    CHECK_OK(ar_record_set_text(other, "nick", "Other"));
    CHECK_OK(ar_record_set_blob(other, "key", "k", 1));
    CHECK_OK(ar_record_set_text(other, "email", "b@example.com"));
    CHECK_RC(ar_record_save(other), AR_VALIDATION_FAILED);
    CHECK(ar_record_error_count(other) == 1);
    CHECK_OK(ar_record_error(other, 0, &property, &key, &message));
    CHECK(same_text(property, "login"));
    CHECK(same_text(key, "already_exists"));
    CHECK(same_text(message, "already exists"));
    CHECK_OK(ar_record_set_text(record, "nick", "Alexander"));
    CHECK_OK(ar_record_save(record));

    /* A unique index without a validation: the database refuses (AR_CONSTRAINT). */
    CHECK_OK(ar_record_set_text(other, "login", "maria"));
    CHECK_OK(ar_record_set_text(other, "email", "a@example.com"));
    CHECK_RC(ar_record_save(other), AR_CONSTRAINT);
    CHECK(ar_last_error(db)[0] != '\0');
    CHECK(ar_record_id(other) == 0);
    CHECK(ar_record_error_count(other) == 0);
    CHECK_OK(ar_record_set_text(other, "email", "m@example.com"));
    CHECK_OK(ar_record_save(other));
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 2);

    /* An update into a taken value too. */
    CHECK_OK(ar_record_set_text(other, "email", "a@example.com"));
    CHECK_RC(ar_record_save(other), AR_CONSTRAINT);

    /* A destroyed record of a model with validations cannot be saved again, as without. */
    CHECK_OK(ar_record_destroy(other));
    CHECK_RC(ar_record_save(other), AR_MISUSE);
    CHECK(strstr(ar_last_error(db), "destroyed") != NULL);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 1);

    ar_record_free(other);
    ar_record_free(record);
    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* ---- relations ---------------------------------------------------------------------- */

static void test_children(void) {
    ar_database *db = NULL;
    ar_model *groups = NULL, *members = NULL;
    ar_record *group = NULL, *other = NULL, *member = NULL, *unsaved = NULL;
    ar_query *query = NULL;
    int i;
    int64_t group_id = -1;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Group", &groups));
    CHECK_OK(ar_model_add_column(groups, "title", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_define(db, "Member", &members));
    CHECK_OK(ar_model_add_column(members, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_belongs_to(members, groups));
    CHECK_RC(ar_model_belongs_to(members, groups), AR_MISUSE); /* groupId twice */
    CHECK_OK(ar_record_new(groups, &group));
    CHECK_OK(ar_record_save(group));
    CHECK_OK(ar_record_new(groups, &other));
    CHECK_OK(ar_record_save(other));
    for (i = 0; i < 5; i++) {
        CHECK_OK(ar_record_new(members, &member));
        CHECK_OK(ar_record_set_int64(member, "groupId", i < 3 ? ar_record_id(group) : ar_record_id(other)));
        CHECK_OK(ar_record_save(member));
        ar_record_free(member);
    }
    CHECK_OK(ar_record_new(members, &member)); /* no group: NULL */
    CHECK_OK(ar_record_save(member));
    ar_record_free(member);

    CHECK_OK(ar_query_children(group, members, &query));
    CHECK(count_and_free(query) == 3);
    CHECK_OK(ar_query_children(other, members, &query));
    CHECK_OK(ar_query_order(query, "id", 0));
    CHECK_OK(ar_query_next(query, &member));
    CHECK_OK(ar_record_get_int64(member, "groupId", &group_id));
    CHECK(group_id == ar_record_id(other));
    CHECK(ar_record_id(member) == 5);
    ar_record_free(member);
    ar_query_free(query);

    /* An unsaved parent; a child model without the key. */
    CHECK_OK(ar_record_new(groups, &unsaved));
    query = (ar_query *)&group_id;
    CHECK_RC(ar_query_children(unsaved, members, &query), AR_MISUSE);
    CHECK(query == NULL);
    CHECK_RC(ar_query_children(group, groups, &query), AR_UNKNOWN_COLUMN);
    CHECK(query == NULL);

    ar_record_free(unsaved);
    ar_record_free(other);
    ar_record_free(group);
    ar_model_free(members);
    ar_model_free(groups);
    close_test_db(db);
    current_db = NULL;
}

/* ---- attach: the shared engine -------------------------------------------------------- */

static void test_attach(void) {
    static const unsigned char bytes[] = {1, 2, 3, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    ar_database *db = NULL;
    ar_model *defined = NULL, *attached = NULL, *again = NULL;
    ar_record *record = NULL;
    ar_query *query = NULL;
    const char *text = NULL;
    const void *blob = NULL;
    size_t length = 0;
    int64_t integer = -1, count = -1;
    double real = 0;
    int32_t flag = -1, is_null = -1;
    char path[600];

    open_scratch_db(path, sizeof path, "attach.sqlite", &db);
    defined = define_everything(db, "Shared");
    CHECK_OK(ar_record_new(defined, &record));
    CHECK_OK(ar_record_set_text(record, "t", "written in C"));
    CHECK_OK(ar_record_set_int64(record, "i", -42));
    CHECK_OK(ar_record_set_double(record, "r", 2.5));
    CHECK_OK(ar_record_set_blob(record, "b", bytes, sizeof bytes));
    CHECK_OK(ar_record_set_bool(record, "flag", 1));
    CHECK_OK(ar_record_set_date(record, "d", 1234567890.5));
    CHECK_OK(ar_record_set_decimal(record, "dec", "1123.563"));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);

    /* The same handle: attached to the table the defined model created. */
    CHECK_OK(ar_model_attach(db, "Shared", &attached));
    CHECK_OK(ar_count(attached, &count));
    CHECK(count == 1);
    ar_model_free(attached);
    attached = NULL;
    ar_model_free(defined);
    ar_close(db);

    /* Reopened: the table's columns and types come from the file. */
    CHECK_OK(ar_open(path, &db));
    current_db = db;
    CHECK_OK(ar_model_attach(db, "Shared", &attached));
    CHECK(attached != NULL);
    CHECK_OK(ar_query_new(attached, "t = ?", &query));
    CHECK_OK(ar_query_bind_text(query, 1, "written in C"));
    CHECK_OK(ar_query_next(query, &record));
    ar_query_free(query);
    CHECK(ar_record_id(record) == 1);
    CHECK_OK(ar_record_get_text(record, "t", &text));
    CHECK(same_text(text, "written in C"));
    CHECK_OK(ar_record_get_int64(record, "i", &integer));
    CHECK(integer == -42);
    CHECK_OK(ar_record_get_double(record, "r", &real));
    CHECK(real == 2.5);
    CHECK_OK(ar_record_get_blob(record, "b", &blob, &length));
    CHECK(length == sizeof bytes && blob && memcmp(blob, bytes, sizeof bytes) == 0);
    CHECK_OK(ar_record_get_bool(record, "flag", &flag));
    CHECK(flag == 1);
    CHECK_OK(ar_record_get_date(record, "d", &real));
    CHECK(real == 1234567890.5);
    CHECK_OK(ar_record_get_text(record, "dec", &text));
    CHECK(same_text(text, "1123.563"));
    CHECK_OK(ar_record_is_null(record, "tn", &is_null));
    CHECK(is_null == 1);
    CHECK_OK(ar_record_get_double(record, "createdAt", &real));
    CHECK(real > 1.6e9);
    /* Nullability comes from the table. */
    CHECK_RC(ar_record_set_null(record, "t"), AR_TYPE_MISMATCH);
    CHECK_OK(ar_record_set_null(record, "tn"));
    CHECK_RC(ar_record_set_text(record, "nope", "x"), AR_UNKNOWN_COLUMN);
    /* Written through the attached model, read through a defined one. */
    CHECK_OK(ar_record_set_text(record, "t", "updated through attach"));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);
    CHECK_OK(ar_record_new(attached, &record));
    CHECK_OK(ar_record_set_text(record, "t", "inserted through attach"));
    CHECK_OK(ar_record_set_text(record, "code", "X1"));
    CHECK_OK(ar_record_save(record));
    CHECK(ar_record_id(record) == 2);
    ar_record_free(record);
    again = define_everything(db, "Shared");
    CHECK_OK(ar_count(again, &count));
    CHECK(count == 2);
    CHECK_OK(ar_find(again, 1, &record));
    CHECK_OK(ar_record_get_text(record, "t", &text));
    CHECK(same_text(text, "updated through attach"));
    ar_record_free(record);
    CHECK_OK(ar_find(again, 2, &record));
    CHECK_OK(ar_record_get_text(record, "code", &text));
    CHECK(same_text(text, "X1"));
    ar_record_free(record);
    /* The unique index the defined model declared holds for the attached one. */
    CHECK_OK(ar_record_new(attached, &record));
    CHECK_OK(ar_record_set_text(record, "code", "X1"));
    CHECK_RC(ar_record_save(record), AR_CONSTRAINT);
    ar_record_free(record);
    ar_model_free(again);

    /* A table that does not exist. */
    ar_model_free(attached);
    attached = (ar_model *)&count;
    CHECK(ar_model_attach(db, "NoSuchTable", &attached) != AR_OK);
    CHECK(attached == NULL);
    CHECK(strstr(ar_last_error(db), "NoSuchTable") != NULL);
    ar_close(db);
    current_db = NULL;
    remove_database(path);
}

/* ---- bad inputs ------------------------------------------------------------------------ */

/* Every function with a NULL handle, and with each NULL out or name pointer. */
static void test_null_arguments(void) {
    ar_database *db = NULL;
    ar_model *model = NULL, *out_model = NULL;
    ar_record *record = NULL, *out_record = NULL;
    ar_query *query = NULL, *out_query = NULL;
    const char *text = NULL;
    char *copy = NULL;
    const void *bytes = NULL;
    size_t length = 0;
    int64_t integer = 0;
    double real = 0;
    int32_t flag = 0;
    const char *property = NULL, *key = NULL, *message = NULL;

    /* NULL handles. */
    CHECK_RC(ar_open(NULL, &db), AR_MISUSE);
    CHECK(ar_last_error(NULL)[0] != '\0');
    CHECK_RC(ar_open(":memory:", NULL), AR_MISUSE);
    CHECK_RC(ar_begin(NULL), AR_MISUSE);
    CHECK(strstr(ar_last_error(NULL), "ar_begin") != NULL);
    CHECK_RC(ar_commit(NULL), AR_MISUSE);
    CHECK_RC(ar_rollback(NULL), AR_MISUSE);
    CHECK_RC(ar_model_define(NULL, "X", &out_model), AR_MISUSE);
    CHECK_RC(ar_model_attach(NULL, "X", &out_model), AR_MISUSE);
    CHECK_RC(ar_model_add_column(NULL, "x", AR_TYPE_TEXT, 0), AR_MISUSE);
    CHECK_RC(ar_model_belongs_to(NULL, NULL), AR_MISUSE);
    CHECK_RC(ar_model_validate_presence(NULL, "x"), AR_MISUSE);
    CHECK_RC(ar_model_validate_uniqueness(NULL, "x"), AR_MISUSE);
    CHECK_RC(ar_count(NULL, &integer), AR_MISUSE);
    CHECK_RC(ar_find(NULL, 1, &out_record), AR_MISUSE);
    CHECK_RC(ar_record_new(NULL, &out_record), AR_MISUSE);
    CHECK_RC(ar_query_new(NULL, NULL, &out_query), AR_MISUSE);
    CHECK_RC(ar_query_children(NULL, NULL, &out_query), AR_MISUSE);
    CHECK_RC(ar_query_bind_text(NULL, 1, "x"), AR_MISUSE);
    CHECK_RC(ar_query_bind_int64(NULL, 1, 1), AR_MISUSE);
    CHECK_RC(ar_query_bind_double(NULL, 1, 1.0), AR_MISUSE);
    CHECK_RC(ar_query_bind_blob(NULL, 1, "x", 1), AR_MISUSE);
    CHECK_RC(ar_query_bind_null(NULL, 1), AR_MISUSE);
    CHECK_RC(ar_query_order(NULL, "x", 1), AR_MISUSE);
    CHECK_RC(ar_query_limit(NULL, 1), AR_MISUSE);
    CHECK_RC(ar_query_offset(NULL, 1), AR_MISUSE);
    CHECK_RC(ar_query_count(NULL, &integer), AR_MISUSE);
    CHECK_RC(ar_query_next(NULL, &out_record), AR_MISUSE);
    CHECK_RC(ar_record_set_text(NULL, "x", "x"), AR_MISUSE);
    CHECK_RC(ar_record_set_int64(NULL, "x", 1), AR_MISUSE);
    CHECK_RC(ar_record_set_double(NULL, "x", 1.0), AR_MISUSE);
    CHECK_RC(ar_record_set_bool(NULL, "x", 1), AR_MISUSE);
    CHECK_RC(ar_record_set_date(NULL, "x", 1.0), AR_MISUSE);
    CHECK_RC(ar_record_set_decimal(NULL, "x", "1"), AR_MISUSE);
    CHECK_RC(ar_record_set_blob(NULL, "x", "x", 1), AR_MISUSE);
    CHECK_RC(ar_record_set_null(NULL, "x"), AR_MISUSE);
    CHECK_RC(ar_record_get_text(NULL, "x", &text), AR_MISUSE);
    CHECK_RC(ar_record_copy_text(NULL, "x", &copy), AR_MISUSE);
    CHECK_RC(ar_record_get_int64(NULL, "x", &integer), AR_MISUSE);
    CHECK_RC(ar_record_get_double(NULL, "x", &real), AR_MISUSE);
    CHECK_RC(ar_record_get_bool(NULL, "x", &flag), AR_MISUSE);
    CHECK_RC(ar_record_get_date(NULL, "x", &real), AR_MISUSE);
    CHECK_RC(ar_record_get_blob(NULL, "x", &bytes, &length), AR_MISUSE);
    CHECK_RC(ar_record_is_null(NULL, "x", &flag), AR_MISUSE);
    CHECK_RC(ar_record_save(NULL), AR_MISUSE);
    CHECK_RC(ar_record_reload(NULL), AR_MISUSE);
    CHECK_RC(ar_record_destroy(NULL), AR_MISUSE);
    CHECK_RC(ar_record_error(NULL, 0, &property, &key, &message), AR_MISUSE);
    CHECK(ar_record_error_count(NULL) == 0);
    CHECK(ar_record_id(NULL) == 0);
    CHECK(ar_last_error(NULL) != NULL);
    /* The free functions ignore NULL. */
    ar_close(NULL);
    ar_model_free(NULL);
    ar_query_free(NULL);
    ar_record_free(NULL);
    ar_free(NULL);
    CHECK(out_model == NULL && out_record == NULL && out_query == NULL);

    /* NULL out pointers and names, with valid handles. */
    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_RC(ar_model_define(db, NULL, &model), AR_MISUSE);
    CHECK(ar_last_error(db)[0] != '\0');
    CHECK_RC(ar_model_define(db, "Thing", NULL), AR_MISUSE);
    CHECK_RC(ar_model_attach(db, NULL, &model), AR_MISUSE);
    CHECK_RC(ar_model_attach(db, "Thing", NULL), AR_MISUSE);
    CHECK_OK(ar_model_define(db, "Thing", &model));
    CHECK_RC(ar_model_add_column(model, NULL, AR_TYPE_TEXT, 0), AR_MISUSE);
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_add_column(model, "n", AR_TYPE_INTEGER, 0));
    CHECK_OK(ar_model_add_column(model, "b", AR_TYPE_BLOB, 0));
    CHECK_RC(ar_model_belongs_to(model, NULL), AR_MISUSE);
    CHECK_RC(ar_model_validate_presence(model, NULL), AR_MISUSE);
    CHECK_RC(ar_model_validate_uniqueness(model, NULL), AR_MISUSE);
    CHECK_RC(ar_count(model, NULL), AR_MISUSE);
    CHECK_RC(ar_find(model, 1, NULL), AR_MISUSE);
    CHECK_RC(ar_record_new(model, NULL), AR_MISUSE);
    CHECK_RC(ar_query_new(model, "name = ?", NULL), AR_MISUSE);
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_save(record));
    CHECK_RC(ar_query_children(record, NULL, &query), AR_MISUSE);
    CHECK_RC(ar_query_children(record, model, NULL), AR_MISUSE);
    CHECK_RC(ar_record_set_text(record, NULL, "x"), AR_MISUSE);
    CHECK_RC(ar_record_set_int64(record, NULL, 1), AR_MISUSE);
    CHECK_RC(ar_record_set_double(record, NULL, 1.0), AR_MISUSE);
    CHECK_RC(ar_record_set_bool(record, NULL, 1), AR_MISUSE);
    CHECK_RC(ar_record_set_date(record, NULL, 1.0), AR_MISUSE);
    CHECK_RC(ar_record_set_decimal(record, NULL, "1"), AR_MISUSE);
    CHECK_RC(ar_record_set_blob(record, NULL, "x", 1), AR_MISUSE);
    CHECK_RC(ar_record_set_blob(record, "b", NULL, 5), AR_MISUSE); /* NULL bytes, nonzero length */
    CHECK_RC(ar_record_set_null(record, NULL), AR_MISUSE);
    CHECK_RC(ar_record_get_text(record, NULL, &text), AR_MISUSE);
    CHECK_RC(ar_record_get_text(record, "name", NULL), AR_MISUSE);
    CHECK_RC(ar_record_copy_text(record, NULL, &copy), AR_MISUSE);
    CHECK_RC(ar_record_copy_text(record, "name", NULL), AR_MISUSE);
    CHECK_RC(ar_record_get_int64(record, NULL, &integer), AR_MISUSE);
    CHECK_RC(ar_record_get_int64(record, "n", NULL), AR_MISUSE);
    CHECK_RC(ar_record_get_double(record, NULL, &real), AR_MISUSE);
    CHECK_RC(ar_record_get_double(record, "n", NULL), AR_MISUSE);
    CHECK_RC(ar_record_get_bool(record, NULL, &flag), AR_MISUSE);
    CHECK_RC(ar_record_get_bool(record, "n", NULL), AR_MISUSE);
    CHECK_RC(ar_record_get_date(record, NULL, &real), AR_MISUSE);
    CHECK_RC(ar_record_get_date(record, "n", NULL), AR_MISUSE);
    CHECK_RC(ar_record_get_blob(record, NULL, &bytes, &length), AR_MISUSE);
    CHECK_RC(ar_record_get_blob(record, "b", NULL, &length), AR_MISUSE);
    CHECK_RC(ar_record_get_blob(record, "b", &bytes, NULL), AR_MISUSE);
    CHECK_RC(ar_record_is_null(record, NULL, &flag), AR_MISUSE);
    CHECK_RC(ar_record_is_null(record, "name", NULL), AR_MISUSE);
    CHECK(ar_last_error(db)[0] != '\0');
    CHECK_OK(ar_query_new(model, "name = ? AND b = ?", &query));
    CHECK_RC(ar_query_bind_blob(query, 2, NULL, 3), AR_MISUSE);
    CHECK_OK(ar_query_bind_text(query, 1, NULL)); /* binds NULL: allowed */
    CHECK_RC(ar_query_order(query, NULL, 1), AR_MISUSE);
    CHECK_RC(ar_query_count(query, NULL), AR_MISUSE);
    CHECK_RC(ar_query_next(query, NULL), AR_MISUSE);
    ar_query_free(query);
    ar_record_free(record);
    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* A handle of one kind where another is expected: AR_MISUSE, and the free functions
 * leave it alone. */
static void test_wrong_handles(void) {
    ar_database *db = NULL;
    ar_model *model = NULL, *out_model = NULL;
    ar_record *record = NULL, *out_record = NULL;
    ar_query *query = NULL, *out_query = NULL;
    const char *text = NULL;
    int64_t integer = 0;
    ar_database *record_as_db, *model_as_db;
    ar_model *record_as_model, *db_as_model, *query_as_model;
    ar_record *model_as_record, *query_as_record, *db_as_record;
    ar_query *record_as_query, *model_as_query;

    CHECK_OK(ar_open(":memory:", &db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Kind", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_set_text(record, "name", "still here"));
    CHECK_OK(ar_record_save(record));
    CHECK_OK(ar_query_new(model, NULL, &query));

    record_as_db = (ar_database *)(void *)record;
    model_as_db = (ar_database *)(void *)model;
    record_as_model = (ar_model *)(void *)record;
    db_as_model = (ar_model *)(void *)db;
    query_as_model = (ar_model *)(void *)query;
    model_as_record = (ar_record *)(void *)model;
    query_as_record = (ar_record *)(void *)query;
    db_as_record = (ar_record *)(void *)db;
    record_as_query = (ar_query *)(void *)record;
    model_as_query = (ar_query *)(void *)model;

    CHECK_RC(ar_record_new(record_as_model, &out_record), AR_MISUSE);
    CHECK(strstr(ar_last_error(NULL), "model") != NULL);
    CHECK_RC(ar_count(db_as_model, &integer), AR_MISUSE);
    CHECK_RC(ar_find(query_as_model, 1, &out_record), AR_MISUSE);
    CHECK_RC(ar_query_new(record_as_model, NULL, &out_query), AR_MISUSE);
    CHECK_RC(ar_model_add_column(record_as_model, "x", AR_TYPE_TEXT, 0), AR_MISUSE);
    CHECK_RC(ar_model_belongs_to(model, record_as_model), AR_MISUSE);
    CHECK_RC(ar_model_validate_presence(db_as_model, "name"), AR_MISUSE);
    CHECK_RC(ar_model_define(record_as_db, "X", &out_model), AR_MISUSE);
    CHECK_RC(ar_model_attach(model_as_db, "Kind", &out_model), AR_MISUSE);
    CHECK_RC(ar_begin(model_as_db), AR_MISUSE);
    CHECK_RC(ar_commit(record_as_db), AR_MISUSE);
    CHECK_RC(ar_record_save(model_as_record), AR_MISUSE);
    CHECK_RC(ar_record_get_text(query_as_record, "name", &text), AR_MISUSE);
    CHECK_RC(ar_record_set_text(db_as_record, "name", "x"), AR_MISUSE);
    CHECK_RC(ar_query_children(model_as_record, model, &out_query), AR_MISUSE);
    CHECK_RC(ar_query_children(record, record_as_model, &out_query), AR_MISUSE);
    CHECK_RC(ar_query_next(record_as_query, &out_record), AR_MISUSE);
    CHECK_RC(ar_query_count(model_as_query, &integer), AR_MISUSE);
    CHECK_RC(ar_query_bind_int64(record_as_query, 1, 1), AR_MISUSE);
    CHECK(ar_record_id(model_as_record) == 0);
    CHECK(ar_record_error_count(query_as_record) == 0);
    /* ar_last_error with another kind of handle: the global message, not a crash. */
    CHECK(ar_last_error(record_as_db) != NULL);
    CHECK(out_model == NULL && out_record == NULL && out_query == NULL);

    /* Freeing with the wrong function does nothing: every handle still works. */
    ar_close(record_as_db);
    ar_close(model_as_db);
    ar_model_free(record_as_model);
    ar_model_free(db_as_model);
    ar_record_free(model_as_record);
    ar_record_free(query_as_record);
    ar_query_free(record_as_query);
    ar_query_free(model_as_query);
    CHECK_OK(ar_record_get_text(record, "name", &text));
    CHECK(same_text(text, "still here"));
    CHECK_OK(ar_query_count(query, &integer));
    CHECK(integer == 1);
    CHECK_OK(ar_count(model, &integer));
    CHECK(integer == 1);
    CHECK_OK(ar_begin(db));
    CHECK_OK(ar_commit(db));

    ar_query_free(query);
    ar_record_free(record);
    ar_model_free(model);
    ar_close(db);
    current_db = NULL;
}

/* Batch writes: many records inserted with one call, every record a query matches deleted
   or updated with one statement; validations first, nothing half done. */
static void test_batch(void) {
    ar_database *db = NULL;
    ar_model *model = NULL, *other_model = NULL;
    ar_record *records[5] = {NULL, NULL, NULL, NULL, NULL}, *bad[2] = {NULL, NULL}, *stranger = NULL, *found = NULL;
    ar_query *query = NULL;
    const char *text = NULL;
    int64_t count = -1, value = 0;
    int i;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Item", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, AR_COLUMN_FLAG_UNIQUE));
    CHECK_OK(ar_model_add_column(model, "qty", AR_TYPE_INTEGER, 0));
    CHECK_OK(ar_model_add_column(model, "done", AR_TYPE_BOOL, 0));
    CHECK_OK(ar_model_add_column(model, "note", AR_TYPE_TEXT, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_validate_presence(model, "name"));

    /* Five records, one call: each gets its id. */
    for (i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "item %d", i + 1);
        CHECK_OK(ar_record_new(model, &records[i]));
        CHECK_OK(ar_record_set_text(records[i], "name", name));
        CHECK_OK(ar_record_set_int64(records[i], "qty", (i + 1) * 10));
    }
    CHECK_OK(ar_record_insert_all(records, 5));
    for (i = 0; i < 5; i++) CHECK(ar_record_id(records[i]) == i + 1);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 5);
    CHECK_RC(ar_record_insert_all(records, 1), AR_MISUSE); /* not new any more */
    CHECK_OK(ar_record_insert_all(NULL, 0));

    /* An invalid record: nothing inserted, its errors readable, its position named. */
    CHECK_OK(ar_record_new(model, &bad[0]));
    CHECK_OK(ar_record_set_text(bad[0], "name", "fine"));
    CHECK_OK(ar_record_new(model, &bad[1]));
    CHECK_OK(ar_record_set_text(bad[1], "name", ""));
    CHECK_RC(ar_record_insert_all(bad, 2), AR_VALIDATION_FAILED);
    CHECK(strstr(ar_last_error(db), "record 2 of 2") != NULL);
    CHECK(ar_record_error_count(bad[1]) == 1);
    CHECK(ar_record_id(bad[0]) == 0 && ar_record_id(bad[1]) == 0);
    /* A unique violation rolls the whole batch back. */
    CHECK_OK(ar_record_set_text(bad[1], "name", "item 1"));
    CHECK_RC(ar_record_insert_all(bad, 2), AR_CONSTRAINT);
    CHECK(ar_record_id(bad[0]) == 0 && ar_record_id(bad[1]) == 0);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 5);
    /* Records of another model are refused. */
    CHECK_OK(ar_model_define(db, "Other", &other_model));
    CHECK_OK(ar_model_add_column(other_model, "x", AR_TYPE_INTEGER, 0));
    CHECK_OK(ar_record_new(other_model, &stranger));
    ar_record_free(bad[1]);
    bad[1] = stranger;
    CHECK_RC(ar_record_insert_all(bad, 2), AR_MISUSE);

    /* Update every match with one statement: typed values, bound; counted. */
    CHECK_OK(ar_query_new(model, "qty >= ?", &query));
    CHECK_OK(ar_query_bind_int64(query, 1, 30));
    CHECK_RC(ar_query_update_all(query, &count), AR_MISUSE); /* nothing set yet */
    CHECK_OK(ar_query_set_int64(query, "done", 1));
    CHECK_OK(ar_query_set_text(query, "note", "x'); DROP TABLE \"Item\"; --"));
    CHECK_RC(ar_query_set_int64(query, "done", 2), AR_TYPE_MISMATCH);
    CHECK_RC(ar_query_set_text(query, "nmae", "x"), AR_UNKNOWN_COLUMN);
    CHECK_RC(ar_query_set_int64(query, "id", 9), AR_MISUSE);
    CHECK_OK(ar_query_update_all(query, &count));
    CHECK(count == 3);
    CHECK_RC(ar_query_update_all(query, NULL), AR_MISUSE); /* the values were used */
    CHECK_OK(ar_query_set_null(query, "name"));
    CHECK_RC(ar_query_update_all(query, &count), AR_TYPE_MISMATCH); /* name is required */
    ar_query_free(query);
    query = NULL;
    CHECK_OK(ar_find(model, 4, &found));
    CHECK_OK(ar_record_get_int64(found, "done", &value));
    CHECK(value == 1);
    CHECK_OK(ar_record_get_text(found, "note", &text));
    CHECK(same_text(text, "x'); DROP TABLE \"Item\"; --"));
    ar_record_free(found);
    found = NULL;
    /* Records in memory keep their values until reloaded. */
    CHECK_OK(ar_record_get_int64(records[3], "done", &value));
    CHECK(value == 0);
    CHECK_OK(ar_record_reload(records[3]));
    CHECK_OK(ar_record_get_int64(records[3], "done", &value));
    CHECK(value == 1);

    /* Delete every match with one statement; order and limit apply. */
    CHECK_OK(ar_query_new(model, "done = ?", &query));
    CHECK_OK(ar_query_bind_int64(query, 1, 1));
    CHECK_OK(ar_query_order(query, "qty", 0));
    CHECK_OK(ar_query_limit(query, 2));
    CHECK_OK(ar_query_delete_all(query, &count));
    CHECK(count == 2);
    ar_query_free(query);
    query = NULL;
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 3);
    CHECK_RC(ar_find(model, 5, &found), AR_NOT_FOUND);
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_delete_all(query, NULL));
    ar_query_free(query);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 0);

    for (i = 0; i < 5; i++) ar_record_free(records[i]);
    ar_record_free(bad[0]);
    ar_record_free(stranger);
    ar_model_free(other_model);
    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* Handles released in any order: records and queries keep their model and database. */
static void test_release_order(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL;
    ar_query *query = NULL;
    const char *text = NULL;
    int64_t count = -1;
    CHECK_OK(open_test_db(&db));
    CHECK_OK(ar_model_define(db, "Order", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_query_new(model, NULL, &query));
    ar_model_free(model);
    ar_close(db); /* the file is removed at the end: the records and query still use it */
    CHECK_OK(ar_record_set_text(record, "name", "after close"));
    CHECK_OK(ar_record_save(record));
    CHECK_OK(ar_query_count(query, &count));
    CHECK(count == 1);
    CHECK_OK(ar_record_get_text(record, "name", &text));
    CHECK(same_text(text, "after close"));
    ar_query_free(query);
    ar_record_free(record);
    if (on_file) remove_database(test_db_path);
}

/* ---- threads -------------------------------------------------------------------------- */

#define THREADS 4
#define SAVES_PER_THREAD 150

typedef struct {
    ar_database *db;
    ar_model *model;
    int number;
    int failures; /* checks failed on this thread (CHECK's counters are not thread-safe) */
} ThreadWork;

/* Each thread saves its records, finds each again with a query (a cursor on a reader), and
 * fails a call with its own unknown column after each save, while the other threads fail
 * theirs: ar_last_error(db) must show the thread's own message (it is per thread). */
static void *thread_work(void *argument) {
    ThreadWork *work = argument;
    char name[32], column[32];
    int i;
    snprintf(column, sizeof column, "missing_%d", work->number);
    for (i = 0; i < SAVES_PER_THREAD; i++) {
        ar_record *record = NULL, *found = NULL, *none = NULL;
        ar_query *query = NULL;
        int64_t id;
        snprintf(name, sizeof name, "thread%d-%d", work->number, i);
        if (ar_record_new(work->model, &record) != AR_OK || ar_record_set_text(record, "name", name) != AR_OK
            || ar_record_save(record) != AR_OK) {
            work->failures++;
            ar_record_free(record);
            continue;
        }
        id = ar_record_id(record);
        if (ar_record_set_text(record, column, "x") != AR_UNKNOWN_COLUMN) work->failures++;
        sched_yield();
        if (strstr(ar_last_error(work->db), column) == NULL) work->failures++;
        if (ar_query_new(work->model, "name = ?", &query) != AR_OK || ar_query_bind_text(query, 1, name) != AR_OK
            || ar_query_next(query, &found) != AR_OK || ar_record_id(found) != id
            || ar_query_next(query, &none) != AR_DONE || none != NULL)
            work->failures++;
        ar_record_free(found);
        ar_query_free(query);
        ar_record_free(record);
    }
    return NULL;
}

static void test_threads(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL;
    ThreadWork work[THREADS];
    pthread_t threads[THREADS];
    int64_t count = -1;
    int i;
    char path[600];
    open_scratch_db(path, sizeof path, "threads.sqlite", &db);
    CHECK_OK(ar_model_define(db, "Worker", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, AR_COLUMN_FLAG_INDEXED));
    CHECK_OK(ar_count(model, &count)); /* the model is complete before threads share it */
    for (i = 0; i < THREADS; i++) {
        work[i].db = db;
        work[i].model = model;
        work[i].number = i;
        work[i].failures = 0;
        CHECK(pthread_create(&threads[i], NULL, thread_work, &work[i]) == 0);
    }
    /* A validation added while the threads save (each sets a name, so all still pass). */
    CHECK_OK(ar_model_validate_presence(model, "name"));
    for (i = 0; i < THREADS; i++) {
        CHECK(pthread_join(threads[i], NULL) == 0);
        CHECK(work[i].failures == 0);
    }
    CHECK_OK(ar_count(model, &count));
    CHECK(count == THREADS * SAVES_PER_THREAD);
    /* The main thread's own last error is untouched by the threads' failures. */
    CHECK_RC(ar_record_new(model, NULL), AR_MISUSE);
    CHECK(strstr(ar_last_error(db), "record_out") != NULL);
    /* The validation holds from now on. */
    CHECK_OK(ar_record_new(model, &record));
    CHECK_RC(ar_record_save(record), AR_VALIDATION_FAILED);
    CHECK(ar_record_error_count(record) == 1);
    ar_record_free(record);
    ar_model_free(model);
    ar_close(db);
    current_db = NULL;
    remove_database(path);
}

/* ---- misuse: handles given back twice, out parameters on failure ------------------------ */

/* Sets the calling thread's last error without a database to a known message, so that a
 * check can tell whether a void call (ar_close, ar_*_free) refused its argument. */
static void mark_last_error(void) {
    CHECK_RC(ar_begin(NULL), AR_MISUSE);
}

/* Whether the last error without a database is the refusal of `function` (see mark_last_error). */
static int refused_by(const char *function) {
    return strncmp(ar_last_error(NULL), function, strlen(function)) == 0
           && strstr(ar_last_error(NULL), "nothing was released") != NULL;
}

/* A second ar_close or ar_*_free of one handle is refused with a message in ar_last_error(NULL),
 * releasing nothing and reading nothing through the pointer (valgrind: no invalid read). */
static void test_handles_given_back_twice(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL, *row = NULL, *next = NULL;
    ar_query *query = NULL;
    int64_t count = -1;
    int i;
    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Twice", &model));
    CHECK_OK(ar_model_add_column(model, "n", AR_TYPE_INTEGER, 0));
    for (i = 1; i <= 3; i++) {
        CHECK_OK(ar_record_new(model, &record));
        CHECK_OK(ar_record_set_int64(record, "n", i));
        CHECK_OK(ar_record_save(record));
        mark_last_error();
        ar_record_free(record);
        CHECK(!refused_by("ar_record_free")); /* the first release is not refused */
        ar_record_free(record);
        CHECK(refused_by("ar_record_free"));
    }

    /* A record from ar_query_next, released twice during the iteration: the query keeps its
     * own reference to it (to reuse it for the next row), which the second release must not
     * take: the iteration goes on with the right rows. */
    CHECK_OK(ar_query_new(model, NULL, &query));
    CHECK_OK(ar_query_order(query, "n", 1));
    CHECK_OK(ar_query_next(query, &row));
    CHECK(ar_record_id(row) == 1);
    ar_record_free(row);
    mark_last_error();
    ar_record_free(row);
    CHECK(refused_by("ar_record_free"));
    CHECK_OK(ar_query_next(query, &next));
    CHECK_OK(ar_record_get_int64(next, "n", &count));
    CHECK(count == 2);
    ar_record_free(next);
    CHECK_OK(ar_query_next(query, &row));
    CHECK(ar_record_id(row) == 3);
    ar_query_free(query); /* the record C still holds keeps its values */
    mark_last_error();
    ar_query_free(query);
    CHECK(refused_by("ar_query_free"));
    CHECK_OK(ar_record_get_int64(row, "n", &count));
    CHECK(count == 3);
    ar_record_free(row);
    mark_last_error();
    ar_record_free(row);
    CHECK(refused_by("ar_record_free"));

    /* The wrong release function: refused, naming the right one; the handle still works. */
    mark_last_error();
    ar_record_free((ar_record *)(void *)model);
    CHECK(strstr(ar_last_error(NULL), "ar_record_free: that is a model handle") != NULL);
    CHECK(strstr(ar_last_error(NULL), "ar_model_free") != NULL);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 3);

    /* A model released twice while a record of it lives (which keeps the model alive). */
    CHECK_OK(ar_record_new(model, &record));
    ar_model_free(model);
    mark_last_error();
    ar_model_free(model);
    CHECK(refused_by("ar_model_free"));
    CHECK_OK(ar_record_set_int64(record, "n", 4));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);

    /* A database closed twice; ar_last_error on the closed handle reads no freed memory and
     * gives the message of the calls without a database: the refusal. */
    ar_close(db);
    mark_last_error();
    ar_close(db);
    CHECK(refused_by("ar_close"));
    CHECK(refused_by("ar_close") && strstr(ar_last_error(db), "ar_close") == ar_last_error(db));
    current_db = NULL;
    if (on_file) remove_database(test_db_path);
}

/* A database closed twice while a model of it lives (which keeps the database's memory):
 * before the registry, the second ar_close released the database the model still used. */
static void test_close_twice_with_model_alive(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL;
    int64_t count = -1;
    CHECK_OK(open_test_db(&db));
    CHECK_OK(ar_model_define(db, "Kept", &model));
    CHECK_OK(ar_model_add_column(model, "n", AR_TYPE_INTEGER, 0));
    ar_close(db);
    mark_last_error();
    ar_close(db);
    CHECK(refused_by("ar_close"));
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);
    CHECK_OK(ar_count(model, &count));
    CHECK(count == 1);
    ar_model_free(model);
    if (on_file) remove_database(test_db_path);
}

/* More records held at once than the registry's table has slots (16,384): the rest go to its
 * locked overflow, and each is still released once and refused the second time. */
#define MANY_HANDLES 20000

static void test_many_handles_given_back_twice(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record **records = calloc(MANY_HANDLES, sizeof *records);
    int i, refused = 0, values_ok = 0;
    int64_t n = -1;
    CHECK(records != NULL);
    if (!records) return;
    CHECK_OK(ar_open(":memory:", &db));
    CHECK_OK(ar_model_define(db, "Many", &model));
    CHECK_OK(ar_model_add_column(model, "n", AR_TYPE_INTEGER, 0));
    for (i = 0; i < MANY_HANDLES; i++) {
        if (ar_record_new(model, &records[i]) == AR_OK && ar_record_set_int64(records[i], "n", i) == AR_OK) values_ok++;
    }
    CHECK(values_ok == MANY_HANDLES);
    CHECK_OK(ar_record_get_int64(records[MANY_HANDLES - 1], "n", &n));
    CHECK(n == MANY_HANDLES - 1);
    for (i = 0; i < MANY_HANDLES; i++) ar_record_free(records[i]);
    for (i = 0; i < MANY_HANDLES; i++) {
        mark_last_error();
        ar_record_free(records[i]);
        refused += refused_by("ar_record_free");
    }
    CHECK(refused == MANY_HANDLES);
    free(records);
    ar_model_free(model);
    ar_close(db);
}

/* Two threads release the same records at once: each record is released exactly once (the
 * other thread's call is refused), with no invalid read or double release under valgrind. */
#define RACED_RECORDS 300

typedef struct {
    ar_record **records;
    pthread_barrier_t *barrier;
    int refused;
} RacingFree;

static void *race_frees(void *argument) {
    RacingFree *work = argument;
    int i;
    pthread_barrier_wait(work->barrier);
    for (i = 0; i < RACED_RECORDS; i++) {
        (void)ar_begin(NULL); /* mark_last_error, without CHECK's counters (not thread-safe) */
        ar_record_free(work->records[i]);
        work->refused += refused_by("ar_record_free");
    }
    return NULL;
}

static void test_racing_frees(void) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *records[RACED_RECORDS];
    RacingFree work[2];
    pthread_t threads[2];
    pthread_barrier_t barrier;
    int i;
    CHECK_OK(ar_open(":memory:", &db));
    CHECK_OK(ar_model_define(db, "Raced", &model));
    CHECK_OK(ar_model_add_column(model, "n", AR_TYPE_INTEGER, 0));
    for (i = 0; i < RACED_RECORDS; i++) CHECK_OK(ar_record_new(model, &records[i]));
    CHECK(pthread_barrier_init(&barrier, NULL, 2) == 0);
    for (i = 0; i < 2; i++) {
        work[i].records = records;
        work[i].barrier = &barrier;
        work[i].refused = 0;
        CHECK(pthread_create(&threads[i], NULL, race_frees, &work[i]) == 0);
    }
    for (i = 0; i < 2; i++) CHECK(pthread_join(threads[i], NULL) == 0);
    pthread_barrier_destroy(&barrier);
    CHECK(work[0].refused + work[1].refused == RACED_RECORDS);
    ar_model_free(model);
    ar_close(db);
}

/* An address C holds nothing at, which a failing call must overwrite with NULL. */
static int stale_target;
#define STALE ((void *)&stale_target)

/* `call` fails with `rc` and leaves the out pointer `out` NULL (it held STALE before). */
#define CHECK_CLEARED(call, rc, out) \
    do {                             \
        out = STALE;                 \
        CHECK_RC(call, rc);          \
        CHECK(out == NULL);          \
    } while (0)

/* `call` fails with `rc` and leaves the out number `out` 0 (it held 12345 before). */
#define CHECK_ZEROED(call, rc, out) \
    do {                            \
        out = 12345;                \
        CHECK_RC(call, rc);         \
        CHECK(out == 0);            \
    } while (0)

/* The text getters fail on `column` of `record` with `rc`, their out NULL. */
static void check_text_getters_fail(ar_record *record, const char *column, ar_result rc) {
    const char *text;
    char *copy;
    CHECK_CLEARED(ar_record_get_text(record, column, &text), rc, text);
    CHECK_CLEARED(ar_record_copy_text(record, column, &copy), rc, copy);
}

/* The other getters fail on `column` of `record` with `rc`, their outs 0 or NULL. */
static void check_number_getters_fail(ar_record *record, const char *column, ar_result rc) {
    const void *bytes;
    size_t length;
    int64_t integer;
    double real;
    int32_t flag;
    CHECK_ZEROED(ar_record_get_int64(record, column, &integer), rc, integer);
    CHECK_ZEROED(ar_record_get_double(record, column, &real), rc, real);
    CHECK_ZEROED(ar_record_get_date(record, column, &real), rc, real);
    CHECK_ZEROED(ar_record_get_bool(record, column, &flag), rc, flag);
    bytes = STALE;
    CHECK_ZEROED(ar_record_get_blob(record, column, &bytes, &length), rc, length);
    CHECK(bytes == NULL);
}

/* Every getter and ar_record_error fail on `record`, their outs 0 or NULL: a record
 * (is_record: in memory or a row of a cursor, with the model of test_out_parameters_cleared),
 * or NULL or another kind of handle (AR_MISUSE). */
static void check_getters_clear(ar_record *record, int is_record) {
    const void *bytes;
    size_t length;
    int64_t integer;
    int32_t flag;
    const char *text, *property, *key, *message;
    check_text_getters_fail(record, is_record ? "n" : "name", is_record ? AR_TYPE_MISMATCH : AR_MISUSE);
    check_number_getters_fail(record, is_record ? "name" : "n", is_record ? AR_TYPE_MISMATCH : AR_MISUSE);
    check_text_getters_fail(record, "missing", is_record ? AR_UNKNOWN_COLUMN : AR_MISUSE);
    check_number_getters_fail(record, "missing", is_record ? AR_UNKNOWN_COLUMN : AR_MISUSE);
    CHECK_ZEROED(ar_record_is_null(record, "missing", &flag), is_record ? AR_UNKNOWN_COLUMN : AR_MISUSE, flag);
    CHECK_CLEARED(ar_record_get_text(record, NULL, &text), AR_MISUSE, text);
    CHECK_CLEARED(ar_record_get_blob(record, "payload", &bytes, NULL), AR_MISUSE, bytes);
    CHECK_ZEROED(ar_record_get_blob(record, "payload", NULL, &length), AR_MISUSE, length);
    if (is_record) CHECK_ZEROED(ar_record_get_int64(record, "nothing", &integer), AR_TYPE_MISMATCH, integer); /* SQL NULL */
    property = key = message = STALE;
    CHECK_RC(ar_record_error(record, 7, &property, &key, &message), AR_MISUSE);
    CHECK(property == NULL && key == NULL && message == NULL);
}

/* Every out parameter is NULL (or 0) after each failing call: with a NULL handle, a handle of
 * another kind, and the failures a valid handle can meet. */
static void test_out_parameters_cleared(void) {
    ar_database *db = NULL, *out_db;
    ar_model *model = NULL, *out_model;
    ar_record *record = NULL, *out_record, *unsaved = NULL, *row = NULL;
    ar_query *query = NULL, *out_query;
    int64_t integer;
    ar_database *record_as_db;
    ar_model *record_as_model, *db_as_model;
    ar_record *model_as_record, *query_as_record;
    ar_query *record_as_query, *model_as_query;
    char path[600];

    CHECK_OK(open_test_db(&db));
    current_db = db;
    CHECK_OK(ar_model_define(db, "Cleared", &model));
    CHECK_OK(ar_model_add_column(model, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_add_column(model, "n", AR_TYPE_INTEGER, 0));
    CHECK_OK(ar_model_add_column(model, "nothing", AR_TYPE_INTEGER, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_add_column(model, "payload", AR_TYPE_BLOB, 0));
    CHECK_OK(ar_record_new(model, &record));
    CHECK_OK(ar_record_set_text(record, "name", "saved"));
    CHECK_OK(ar_record_save(record));
    CHECK_OK(ar_record_new(model, &unsaved));
    CHECK_OK(ar_query_new(model, "name = ?", &query));
    record_as_db = (ar_database *)(void *)record;
    record_as_model = (ar_model *)(void *)record;
    db_as_model = (ar_model *)(void *)db;
    model_as_record = (ar_record *)(void *)model;
    query_as_record = (ar_record *)(void *)query;
    record_as_query = (ar_query *)(void *)record;
    model_as_query = (ar_query *)(void *)model;

    /* ar_open */
    CHECK_CLEARED(ar_open(NULL, &out_db), AR_MISUSE, out_db);
    scratch_path(path, sizeof path, "no/such/directory/cleared.sqlite");
    CHECK_CLEARED(ar_open(path, &out_db), AR_CANNOT_OPEN, out_db);
    /* ar_model_define, ar_model_attach */
    CHECK_CLEARED(ar_model_define(NULL, "X", &out_model), AR_MISUSE, out_model);
    CHECK_CLEARED(ar_model_define(record_as_db, "X", &out_model), AR_MISUSE, out_model);
    CHECK_CLEARED(ar_model_define(db, NULL, &out_model), AR_MISUSE, out_model);
    CHECK_CLEARED(ar_model_define(db, "", &out_model), AR_MISUSE, out_model);
    CHECK_CLEARED(ar_model_attach(NULL, "Cleared", &out_model), AR_MISUSE, out_model);
    CHECK_CLEARED(ar_model_attach(record_as_db, "Cleared", &out_model), AR_MISUSE, out_model);
    CHECK_CLEARED(ar_model_attach(db, NULL, &out_model), AR_MISUSE, out_model);
    CHECK_CLEARED(ar_model_attach(db, "NoSuchTable", &out_model), AR_UNKNOWN_COLUMN, out_model);
    /* ar_count, ar_find, ar_record_new */
    CHECK_ZEROED(ar_count(NULL, &integer), AR_MISUSE, integer);
    CHECK_ZEROED(ar_count(db_as_model, &integer), AR_MISUSE, integer);
    CHECK_CLEARED(ar_find(NULL, 1, &out_record), AR_MISUSE, out_record);
    CHECK_CLEARED(ar_find(record_as_model, 1, &out_record), AR_MISUSE, out_record);
    CHECK_CLEARED(ar_find(model, 999999, &out_record), AR_NOT_FOUND, out_record);
    CHECK_CLEARED(ar_record_new(NULL, &out_record), AR_MISUSE, out_record);
    CHECK_CLEARED(ar_record_new(record_as_model, &out_record), AR_MISUSE, out_record);
    CHECK_CLEARED(ar_record_new(db_as_model, &out_record), AR_MISUSE, out_record);
    /* ar_query_new, ar_query_children */
    CHECK_CLEARED(ar_query_new(NULL, NULL, &out_query), AR_MISUSE, out_query);
    CHECK_CLEARED(ar_query_new(record_as_model, NULL, &out_query), AR_MISUSE, out_query);
    CHECK_CLEARED(ar_query_new(model, "name = = ?", &out_query), AR_INVALID_PREDICATE, out_query);
    CHECK_CLEARED(ar_query_new(model, "missing = 1", &out_query), AR_UNKNOWN_COLUMN, out_query);
    CHECK_CLEARED(ar_query_children(NULL, model, &out_query), AR_MISUSE, out_query);
    CHECK_CLEARED(ar_query_children(model_as_record, model, &out_query), AR_MISUSE, out_query);
    CHECK_CLEARED(ar_query_children(record, NULL, &out_query), AR_MISUSE, out_query);
    CHECK_CLEARED(ar_query_children(record, record_as_model, &out_query), AR_MISUSE, out_query);
    CHECK_CLEARED(ar_query_children(unsaved, model, &out_query), AR_MISUSE, out_query);
    /* The query's counts and rows: a NULL or wrong handle, and a placeholder with no value. */
    CHECK_ZEROED(ar_query_count(NULL, &integer), AR_MISUSE, integer);
    CHECK_ZEROED(ar_query_count(record_as_query, &integer), AR_MISUSE, integer);
    CHECK_ZEROED(ar_query_count(query, &integer), AR_INVALID_PREDICATE, integer);
    CHECK_ZEROED(ar_query_delete_all(NULL, &integer), AR_MISUSE, integer);
    CHECK_ZEROED(ar_query_delete_all(model_as_query, &integer), AR_MISUSE, integer);
    CHECK_ZEROED(ar_query_delete_all(query, &integer), AR_INVALID_PREDICATE, integer);
    CHECK_ZEROED(ar_query_update_all(NULL, &integer), AR_MISUSE, integer);
    CHECK_ZEROED(ar_query_update_all(record_as_query, &integer), AR_MISUSE, integer);
    CHECK_ZEROED(ar_query_update_all(query, &integer), AR_MISUSE, integer); /* nothing set */
    CHECK_CLEARED(ar_query_next(NULL, &out_record), AR_MISUSE, out_record);
    CHECK_CLEARED(ar_query_next(record_as_query, &out_record), AR_MISUSE, out_record);
    CHECK_CLEARED(ar_query_next(query, &out_record), AR_INVALID_PREDICATE, out_record);
    /* The getters with a NULL or wrong handle. */
    check_getters_clear(NULL, 0);
    check_getters_clear(model_as_record, 0);
    check_getters_clear(query_as_record, 0);
    /* The getters' own failures, on a record in memory and on a row read from a query. */
    check_getters_clear(record, 1);
    CHECK_OK(ar_query_bind_text(query, 1, "saved"));
    CHECK_OK(ar_query_next(query, &row));
    CHECK(row != NULL);
    if (row) check_getters_clear(row, 1);
    ar_record_free(row);

    ar_query_free(query);
    ar_record_free(unsaved);
    ar_record_free(record);
    ar_model_free(model);
    close_test_db(db);
    current_db = NULL;
}

/* ---- several processes opening one new SQLite file at once ----------------------------- */

#define OPEN_RACE_ROUNDS 20
#define OPEN_RACE_CHILDREN 4

/* This program, run again as an open-race child (natively: valgrind follows no exec). */
static const char *self_path;

static double seconds_since_1970(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* A child: waits until `start`, opens `path` (other children open it at the same moment),
 * saves a record. The exit status says whether it could; the error goes to standard error. */
static int open_race_child(const char *path, double start) {
    ar_database *db = NULL;
    ar_model *model = NULL;
    ar_record *record = NULL;
    ar_result rc;
    struct timespec pause = {0, 100000};
    while (seconds_since_1970() < start) nanosleep(&pause, NULL);
    rc = ar_open(path, &db);
    if (rc != AR_OK) {
        fprintf(stderr, "open-race child %ld: ar_open: %d %s\n", (long)getpid(), (int)rc, ar_last_error(NULL));
        return 1;
    }
    if ((rc = ar_model_define(db, "Opened", &model)) != AR_OK || (rc = ar_model_add_column(model, "pid", AR_TYPE_INTEGER, 0)) != AR_OK
        || (rc = ar_record_new(model, &record)) != AR_OK || (rc = ar_record_set_int64(record, "pid", getpid())) != AR_OK
        || (rc = ar_record_save(record)) != AR_OK) {
        fprintf(stderr, "open-race child %ld: saving: %d %s\n", (long)getpid(), (int)rc, ar_last_error(db));
    }
    ar_record_free(record);
    ar_model_free(model);
    ar_close(db);
    return rc == AR_OK ? 0 : 1;
}

/* Four processes open one new file at the same instant and each saves a record, 20 times,
 * each round a fresh file: every open waits for the others (SQLite's busy handler alone does
 * not cover the switch to WAL), none fails with "database is locked". */
static void test_open_race(void) {
    int round, i, failures = 0;
    for (round = 1; round <= OPEN_RACE_ROUNDS; round++) {
        char path[600], start[32], name[64];
        pid_t children[OPEN_RACE_CHILDREN];
        ar_database *db = NULL;
        ar_model *model = NULL;
        int64_t count = -1;
        snprintf(name, sizeof name, "open-race-%d.sqlite", round);
        scratch_path(path, sizeof path, name);
        remove_database(path);
        snprintf(start, sizeof start, "%.6f", seconds_since_1970() + 0.15);
        for (i = 0; i < OPEN_RACE_CHILDREN; i++) {
            children[i] = fork();
            if (children[i] == 0) {
                execl(self_path, self_path, "--open-race-child", path, start, (char *)NULL);
                _exit(127);
            }
            CHECK(children[i] > 0);
        }
        for (i = 0; i < OPEN_RACE_CHILDREN; i++) {
            int status = 0;
            if (children[i] <= 0) continue;
            CHECK(waitpid(children[i], &status, 0) == children[i]);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failures++;
        }
        CHECK_OK(ar_open(path, &db));
        CHECK_OK(ar_model_define(db, "Opened", &model));
        CHECK_OK(ar_model_add_column(model, "pid", AR_TYPE_INTEGER, 0));
        CHECK_OK(ar_count(model, &count));
        CHECK(count == OPEN_RACE_CHILDREN);
        ar_model_free(model);
        ar_close(db);
        remove_database(path);
    }
    CHECK(failures == 0);
}

/* The tests run once per kind of database (in memory, on a file, on PostgreSQL). */
/* Primary keys other than an integer id (issue 36): a text key, a UUID key generated on
 * insert, a custom integer key name; found by key, updated, destroyed. */
static void test_primary_keys(void) {
    ar_database *db = NULL;
    ar_model *countries = NULL, *devices = NULL, *members = NULL;
    ar_record *record = NULL, *found = NULL;
    const char *text = NULL;
    char *uuid = NULL;
    int64_t count = -1;
    CHECK_OK(open_test_db(&db));
    current_db = db;

    CHECK_OK(ar_model_define(db, "CCountry", &countries));
    CHECK_OK(ar_model_set_primary_key(countries, "code", AR_KEY_KIND_TEXT));
    CHECK_RC(ar_model_set_primary_key(countries, "other", AR_KEY_KIND_TEXT), AR_MISUSE); /* set already */
    CHECK_RC(ar_model_set_primary_key(countries, "x", 9), AR_MISUSE);               /* no such kind */
    CHECK_OK(ar_model_add_column(countries, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_record_new(countries, &record));
    CHECK_OK(ar_record_set_text(record, "name", "France"));
    CHECK_RC(ar_record_save(record), AR_INVALID_VALUE); /* the key is not set: nothing written */
    CHECK_OK(ar_count(countries, &count));
    CHECK(count == 0);
    CHECK_OK(ar_record_set_text(record, "code", "FR"));
    CHECK_OK(ar_record_save(record));
    CHECK_OK(ar_record_set_text(record, "name", "République"));
    CHECK_OK(ar_record_save(record)); /* an update by key */
    CHECK_OK(ar_find_by_key_text(countries, "FR", &found));
    CHECK_OK(ar_record_get_text(found, "name", &text));
    CHECK(same_text(text, "République"));
    CHECK_OK(ar_record_get_text(found, "code", &text));
    CHECK(same_text(text, "FR"));
    ar_record_free(found);
    found = (ar_record *)&count;
    CHECK_RC(ar_find_by_key_text(countries, "XX", &found), AR_NOT_FOUND);
    CHECK(found == NULL);
    CHECK_OK(ar_record_set_text(record, "code", "FX"));
    CHECK_RC(ar_record_save(record), AR_MISUSE); /* a saved record's key does not change */
    CHECK_OK(ar_record_reload(record));
    CHECK_OK(ar_record_destroy(record));
    ar_record_free(record);
    CHECK_OK(ar_count(countries, &count));
    CHECK(count == 0);

    CHECK_OK(ar_model_define(db, "CDevice", &devices));
    CHECK_OK(ar_model_set_primary_key(devices, "id", AR_KEY_KIND_UUID));
    CHECK_OK(ar_model_add_column(devices, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_record_new(devices, &record));
    CHECK_OK(ar_record_set_text(record, "name", "phone"));
    CHECK_OK(ar_record_save(record)); /* the UUID is generated */
    CHECK_OK(ar_record_copy_text(record, "id", &uuid));
    CHECK(uuid != NULL && strlen(uuid) == 36);
    CHECK_OK(ar_find_by_key_text(devices, uuid, &found));
    CHECK_OK(ar_record_get_text(found, "name", &text));
    CHECK(same_text(text, "phone"));
    ar_record_free(found);
    CHECK_RC(ar_find_by_key_text(devices, "not a uuid", &found), AR_TYPE_MISMATCH);
    ar_free(uuid);
    ar_record_free(record);

    CHECK_OK(ar_model_define(db, "CMember", &members));
    CHECK_OK(ar_model_set_primary_key(members, "memberID", AR_KEY_KIND_AUTOINCREMENT));
    CHECK_OK(ar_model_add_column(members, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_record_new(members, &record));
    CHECK_OK(ar_record_set_text(record, "name", "Ann"));
    CHECK_OK(ar_record_save(record));
    CHECK(ar_record_id(record) == 1);
    CHECK_OK(ar_find(members, 1, &found));
    ar_record_free(found);
    CHECK_RC(ar_find_by_key_text(members, "1", &found), AR_TYPE_MISMATCH); /* an integer key: ar_find */
    ar_record_free(record);

    ar_model_free(countries);
    ar_model_free(devices);
    ar_model_free(members);
    close_test_db(db);
}

/* The number of `model`'s records matching `predicate` with `text` bound to its one placeholder (all: NULL). */
static int64_t count_rows_where(ar_model *model, const char *predicate, const char *text) {
    ar_query *query = NULL;
    if (ar_query_new(model, predicate, &query) != AR_OK) return -1;
    if (predicate && ar_query_bind_text(query, 1, text) != AR_OK) {
        ar_query_free(query);
        return -1;
    }
    return count_and_free(query);
}

/* Relations to parents keyed by a UUID or text key (and an integer key not named id). */
static void test_keyed_relations(void) {
    ar_database *db = NULL;
    ar_model *teams = NULL, *players = NULL, *countries = NULL, *cities = NULL, *clubs = NULL, *fans = NULL;
    ar_record *team = NULL, *other = NULL, *record = NULL, *country = NULL, *club = NULL, *unsaved = NULL;
    ar_query *query = NULL;
    const char *text = NULL;
    char *team_key = NULL, *other_key = NULL;
    int i;

    CHECK_OK(open_test_db(&db));
    current_db = db;
    /* A UUID key: the child's teamId is text and finds the team's players. */
    CHECK_OK(ar_model_define(db, "CKTeam", &teams));
    CHECK_OK(ar_model_set_primary_key(teams, "id", AR_KEY_KIND_UUID));
    CHECK_OK(ar_model_add_column(teams, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_define(db, "CKPlayer", &players));
    CHECK_OK(ar_model_add_column(players, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_belongs_to(players, teams));
    CHECK_OK(ar_record_new(teams, &team));
    CHECK_OK(ar_record_save(team));
    CHECK_OK(ar_record_copy_text(team, "id", &team_key));
    CHECK_OK(ar_record_new(teams, &other));
    CHECK_OK(ar_record_save(other));
    CHECK_OK(ar_record_copy_text(other, "id", &other_key));
    for (i = 0; i < 5; i++) {
        CHECK_OK(ar_record_new(players, &record));
        CHECK_OK(ar_record_set_text(record, "cKTeamId", i < 3 ? team_key : other_key));
        CHECK_RC(ar_record_set_int64(record, "cKTeamId", 1), AR_TYPE_MISMATCH); /* the key is text */
        CHECK_OK(ar_record_save(record));
        ar_record_free(record);
    }
    CHECK_OK(ar_record_new(players, &record)); /* no team: NULL */
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);
    CHECK_OK(ar_query_children(team, players, &query));
    CHECK(count_and_free(query) == 3);
    CHECK_OK(ar_query_children(other, players, &query));
    CHECK_OK(ar_query_next(query, &record));
    CHECK_OK(ar_record_get_text(record, "cKTeamId", &text));
    /* PostgreSQL reads a UUID column back in lower case. */
    CHECK(text != NULL && strcasecmp(text, other_key) == 0);
    ar_record_free(record);
    ar_query_free(query);
    CHECK(count_rows_where(players, "cKTeamId = ?", other_key) == 2);
    /* A key naming no team: refused when the transaction commits, nothing written. */
    CHECK_OK(ar_record_new(players, &record));
    CHECK_OK(ar_record_set_text(record, "cKTeamId", "00000000-0000-0000-0000-00000000BEEF"));
    CHECK_RC(ar_record_save(record), AR_CONSTRAINT);
    ar_record_free(record);
    CHECK(count_rows_where(players, NULL, NULL) == 6);
    /* An unsaved parent; a key set after a child was declared. */
    CHECK_OK(ar_record_new(teams, &unsaved));
    CHECK_RC(ar_query_children(unsaved, players, &query), AR_MISUSE);
    CHECK(query == NULL);
    ar_record_free(unsaved);

    /* A text key named code: the child's cKCountryId is text and references code. */
    CHECK_OK(ar_model_define(db, "CKCountry", &countries));
    CHECK_OK(ar_model_set_primary_key(countries, "code", AR_KEY_KIND_TEXT));
    CHECK_OK(ar_model_define(db, "CKCity", &cities));
    CHECK_OK(ar_model_add_column(cities, "name", AR_TYPE_TEXT, 0));
    CHECK_OK(ar_model_belongs_to(cities, countries));
    CHECK_OK(ar_record_new(countries, &country));
    CHECK_OK(ar_record_set_text(country, "code", "FR"));
    CHECK_OK(ar_record_save(country));
    CHECK_OK(ar_record_new(countries, &record));
    CHECK_OK(ar_record_set_text(record, "code", "DE"));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);
    for (i = 0; i < 3; i++) {
        CHECK_OK(ar_record_new(cities, &record));
        CHECK_OK(ar_record_set_text(record, "name", i == 0 ? "Berlin" : i == 1 ? "Paris" : "Lyon"));
        CHECK_OK(ar_record_set_text(record, "cKCountryId", i == 0 ? "DE" : "FR"));
        CHECK_OK(ar_record_save(record));
        ar_record_free(record);
    }
    CHECK_OK(ar_query_children(country, cities, &query));
    CHECK_OK(ar_query_order(query, "name", 1));
    CHECK_OK(ar_query_next(query, &record));
    CHECK_OK(ar_record_get_text(record, "name", &text));
    CHECK(same_text(text, "Lyon"));
    ar_record_free(record);
    ar_query_free(query);
    CHECK_OK(ar_query_children(country, cities, &query));
    CHECK(count_and_free(query) == 2);
    /* The parent's key is fixed once a model belongs to it. */
    CHECK_RC(ar_model_set_primary_key(countries, "other", AR_KEY_KIND_UUID), AR_MISUSE);
    /* A child model without cKTeamId. */
    CHECK_RC(ar_query_children(team, cities, &query), AR_UNKNOWN_COLUMN);
    CHECK(query == NULL);

    /* An integer key not named id: the foreign key references it. */
    CHECK_OK(ar_model_define(db, "CKClub", &clubs));
    CHECK_OK(ar_model_set_primary_key(clubs, "clubNo", AR_KEY_KIND_AUTOINCREMENT));
    CHECK_OK(ar_model_define(db, "CKFan", &fans));
    CHECK_OK(ar_model_add_column(fans, "cKTeamId", AR_TYPE_INTEGER, AR_COLUMN_FLAG_NULLABLE));
    CHECK_OK(ar_model_belongs_to(fans, clubs));
    CHECK_OK(ar_record_new(clubs, &club));
    CHECK_OK(ar_record_save(club));
    CHECK_OK(ar_record_new(fans, &record));
    CHECK_OK(ar_record_set_int64(record, "cKClubId", ar_record_id(club)));
    CHECK_OK(ar_record_save(record));
    ar_record_free(record);
    CHECK_OK(ar_query_children(club, fans, &query));
    CHECK(count_and_free(query) == 1);
    CHECK_RC(ar_query_children(team, fans, &query), AR_TYPE_MISMATCH); /* fans.cKTeamId is an integer */
    CHECK(query == NULL);

    ar_free(team_key);
    ar_free(other_key);
    ar_record_free(club);
    ar_record_free(country);
    ar_record_free(other);
    ar_record_free(team);
    ar_model_free(fans);
    ar_model_free(clubs);
    ar_model_free(cities);
    ar_model_free(countries);
    ar_model_free(players);
    ar_model_free(teams);
    close_test_db(db);
    current_db = NULL;
}

static void test_records_and_queries(void) {
    test_primary_keys();
    test_keyed_relations();
    test_types();
    test_copy_text();
    test_lifecycle();
    test_queries();
    test_injection();
    test_quote_with_combining_mark();
    test_invalid_text();
    test_validations();
    test_stale_record();
    test_retrying();
    test_children();
    test_null_arguments();
    test_batch();
    test_release_order();
    test_handles_given_back_twice();
    test_close_twice_with_model_alive();
    test_out_parameters_cleared();
}

/* The tests that need a file database (SQLite) or a server, run once per engine. */
static void test_engine_wide(void) {
    test_cursor();
    test_threads();
    test_transactions();
    test_transaction_on_another_thread();
    test_attach();
}

int main(int argc, char **argv) {
    int made = 0;
    if (argc == 4 && strcmp(argv[1], "--open-race-child") == 0) return open_race_child(argv[2], atof(argv[3]));
    self_path = argv[0];
    if (argc > 1) {
        snprintf(scratch, sizeof scratch, "%s", argv[1]);
        mkdir(scratch, 0700);
    } else {
        snprintf(scratch, sizeof scratch, "/tmp/ar-c-test-XXXXXX");
        if (!mkdtemp(scratch)) {
            perror("mkdtemp");
            return 1;
        }
        made = 1;
    }

    test_version();
    test_open();
    test_model_definition();
    for (on_file = 0; on_file <= 1; on_file++) test_records_and_queries();
    test_engine_wide();
    test_wrong_handles();
    test_many_handles_given_back_twice();
    test_racing_frees();
    test_open_race();

    /* The same on PostgreSQL, when a server is given. */
    postgres_url = getenv("AR_TEST_POSTGRES_URL");
    if (postgres_url && *postgres_url) {
        admin = PQconnectdb(postgres_url);
        if (PQstatus(admin) != CONNECTION_OK) {
            printf("FAIL cannot reach AR_TEST_POSTGRES_URL: %s", PQerrorMessage(admin));
            failed++;
        } else {
            int before = passed;
            on_postgres = 1;
            on_file = 2;
            test_records_and_queries();
            test_engine_wide();
            printf("PostgreSQL: %d checks passed\n", passed - before);
        }
        PQfinish(admin);
    }

    if (made) rmdir(scratch);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
