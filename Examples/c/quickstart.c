/* The iActiveRecord README scenario through the C API (the Swift one is
 * Examples/Quickstart/main.swift): create, save, list, update, destroy.
 *
 *   make c-examples                     builds and runs it (and diffs its output)
 *   quickstart [path]                   the database file; "quickstart-c.sqlite" by default
 *
 * Every call is checked: on failure the program prints ar_last_error and exits 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activerecord.h"

static ar_database *db;

/* Exits with the database's last error when a call fails. */
static void check(ar_result rc, const char *what) {
    if (rc != AR_OK) {
        fprintf(stderr, "error: %s failed (%d): %s\n", what, (int)rc, ar_last_error(db));
        exit(1);
    }
}

/* The user's name, copied into buffer. */
static const char *name_of(ar_record *user, char *buffer, size_t size) {
    const char *name = NULL;
    check(ar_record_get_text(user, "name", &name), "ar_record_get_text(name)");
    snprintf(buffer, size, "%s", name ? name : "");
    return buffer;
}

/* Every user in id order, their names joined with ", " into buffer. Returns the count. */
static int64_t list_names(ar_model *users, char *buffer, size_t size) {
    ar_query *query = NULL;
    ar_record *user = NULL;
    ar_result rc;
    int64_t count = 0;
    buffer[0] = '\0';
    check(ar_query_new(users, NULL, &query), "ar_query_new");
    check(ar_query_order(query, "id", 1), "ar_query_order");
    while ((rc = ar_query_next(query, &user)) == AR_OK) {
        char name[128];
        size_t used = strlen(buffer);
        snprintf(buffer + used, size - used, "%s%s", count ? ", " : "", name_of(user, name, sizeof name));
        count++;
        ar_record_free(user);
    }
    if (rc != AR_DONE) check(rc, "ar_query_next");
    ar_query_free(query);
    return count;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "quickstart-c.sqlite";
    ar_model *users = NULL;
    ar_record *user = NULL, *maria = NULL, *first = NULL, *found = NULL;
    ar_query *query = NULL;
    ar_result rc;
    char names[512], name[128], old_name[128];
    int64_t age = 0, count = 0, id;

    if (ar_open(path, &db) != AR_OK) {
        fprintf(stderr, "error: cannot open %s: %s\n", path, ar_last_error(NULL));
        return 1;
    }
    printf("database: %s\n", path);

    /* The model: name TEXT NOT NULL, age INTEGER NOT NULL, avatar BLOB (nullable). */
    check(ar_model_define(db, "User", &users), "ar_model_define(User)");
    check(ar_model_add_column(users, "name", AR_TYPE_TEXT, AR_COLUMN_FLAG_REQUIRED), "ar_model_add_column(name)");
    check(ar_model_add_column(users, "age", AR_TYPE_INTEGER, AR_COLUMN_FLAG_REQUIRED), "ar_model_add_column(age)");
    check(ar_model_add_column(users, "avatar", AR_TYPE_BLOB, AR_COLUMN_FLAG_NULLABLE), "ar_model_add_column(avatar)");

    /* Start each run from an empty table (User.destroyAll() in Swift). */
    check(ar_query_new(users, NULL, &query), "ar_query_new");
    while ((rc = ar_query_next(query, &user)) == AR_OK) {
        check(ar_record_destroy(user), "ar_record_destroy");
        ar_record_free(user);
    }
    if (rc != AR_DONE) check(rc, "ar_query_next");
    ar_query_free(query);

    check(ar_record_new(users, &user), "ar_record_new");
    check(ar_record_set_text(user, "name", "Alex"), "ar_record_set_text(name)");
    check(ar_record_set_int64(user, "age", 31), "ar_record_set_int64(age)");
    check(ar_record_save(user), "ar_record_save");
    check(ar_record_get_int64(user, "age", &age), "ar_record_get_int64(age)");
    printf("created: User #%" PRId64 " name=%s age=%" PRId64 "\n", ar_record_id(user), name_of(user, name, sizeof name), age);
    ar_record_free(user);

    check(ar_record_new(users, &maria), "ar_record_new");
    check(ar_record_set_text(maria, "name", "Maria"), "ar_record_set_text(name)");
    check(ar_record_set_int64(maria, "age", 27), "ar_record_set_int64(age)");
    check(ar_record_save(maria), "ar_record_save");
    ar_record_free(maria);

    count = list_names(users, names, sizeof names);
    printf("listed: %" PRId64 " users: %s\n", count, names);

    /* The first user, by id, renamed. */
    check(ar_query_new(users, NULL, &query), "ar_query_new");
    check(ar_query_order(query, "id", 1), "ar_query_order");
    check(ar_query_limit(query, 1), "ar_query_limit");
    check(ar_query_next(query, &first), "ar_query_next");
    ar_query_free(query);
    name_of(first, old_name, sizeof old_name);
    check(ar_record_set_text(first, "name", "John"), "ar_record_set_text(name)");
    printf("changed: name: '%s' \xE2\x86\x92 '%s'\n", old_name, name_of(first, name, sizeof name));
    check(ar_record_save(first), "ar_record_save");
    id = ar_record_id(first);
    check(ar_find(users, id, &found), "ar_find");
    printf("updated: User #%" PRId64 " is now %s\n", id, name_of(found, name, sizeof name));
    ar_record_free(found);

    check(ar_record_destroy(first), "ar_record_destroy");
    check(ar_count(users, &count), "ar_count");
    list_names(users, names, sizeof names);
    printf("destroyed: User #%" PRId64 "; %" PRId64 " left: %s\n", id, count, names);
    ar_record_free(first);

    ar_model_free(users);
    ar_close(db);
    return 0;
}
