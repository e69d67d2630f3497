/* A small library through the C API: two models with a belongs-to relation, rows
 * written in one transaction, predicate queries with typed binds, ordering, paging,
 * counting, has-many children, validations and a rolled-back savepoint.
 *
 *   make c-examples                     builds and runs it (and diffs its output)
 *   library [path]                      the database; ":memory:" by default
 *
 * Every call is checked: on failure the program prints ar_last_error and exits 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activerecord.h"

static ar_database *db;

static void check(ar_result rc, const char *what) {
    if (rc != AR_OK) {
        fprintf(stderr, "error: %s failed (%d): %s\n", what, (int)rc, ar_last_error(db));
        exit(1);
    }
}

static ar_record *new_author(ar_model *authors, const char *name) {
    ar_record *author = NULL;
    check(ar_record_new(authors, &author), "ar_record_new(Author)");
    check(ar_record_set_text(author, "name", name), "ar_record_set_text(name)");
    check(ar_record_save(author), "ar_record_save(Author)");
    return author;
}

static void add_book(ar_model *books, ar_record *author, const char *title, int64_t year, const char *price) {
    ar_record *book = NULL;
    check(ar_record_new(books, &book), "ar_record_new(Book)");
    check(ar_record_set_text(book, "title", title), "ar_record_set_text(title)");
    check(ar_record_set_int64(book, "year", year), "ar_record_set_int64(year)");
    check(ar_record_set_decimal(book, "price", price), "ar_record_set_decimal(price)");
    check(ar_record_set_int64(book, "authorId", ar_record_id(author)), "ar_record_set_int64(authorId)");
    check(ar_record_save(book), "ar_record_save(Book)");
    ar_record_free(book);
}

/* "  #1 1968 A Wizard of Earthsea ($8.99)". Decimals come back in canonical form (9.50: 9.5). */
static void print_book(ar_record *book) {
    const char *title = NULL;
    char *price = NULL;
    int64_t year = 0;
    check(ar_record_get_int64(book, "year", &year), "ar_record_get_int64(year)");
    check(ar_record_copy_text(book, "price", &price), "ar_record_copy_text(price)");
    check(ar_record_get_text(book, "title", &title), "ar_record_get_text(title)");
    printf("  #%" PRId64 " %" PRId64 " %s ($%s)\n", ar_record_id(book), year, title, price);
    ar_free(price);
}

/* Prints every record of query (and releases it). */
static void print_books(ar_query *query) {
    ar_record *book = NULL;
    ar_result rc;
    while ((rc = ar_query_next(query, &book)) == AR_OK) {
        print_book(book);
        ar_record_free(book);
    }
    if (rc != AR_DONE) check(rc, "ar_query_next");
    ar_query_free(query);
}

/* Saves record expecting a validation failure, and prints its errors. */
static void print_validation(ar_record *record, const char *label) {
    int32_t i, count;
    ar_result rc = ar_record_save(record);
    if (rc != AR_VALIDATION_FAILED) {
        fprintf(stderr, "error: %s: expected AR_VALIDATION_FAILED, got %d\n", label, (int)rc);
        exit(1);
    }
    count = ar_record_error_count(record);
    printf("invalid %s: %d error(s)\n", label, (int)count);
    for (i = 0; i < count; i++) {
        const char *property = NULL, *key = NULL, *message = NULL;
        check(ar_record_error(record, i, &property, &key, &message), "ar_record_error");
        printf("  %s: %s (%s)\n", property, message, key);
    }
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : ":memory:";
    ar_model *authors = NULL, *books = NULL;
    ar_record *le_guin, *lem, *pratchett, *invalid = NULL;
    ar_query *query = NULL;
    int64_t count = 0, total = 0;

    if (ar_open(path, &db) != AR_OK) {
        fprintf(stderr, "error: cannot open %s: %s\n", path, ar_last_error(NULL));
        return 1;
    }

    /* Author(name: required, unique); Book(title, year, price, authorId). */
    check(ar_model_define(db, "Author", &authors), "ar_model_define(Author)");
    check(ar_model_add_column(authors, "name", AR_TYPE_TEXT, AR_COLUMN_FLAG_REQUIRED), "ar_model_add_column(name)");
    check(ar_model_validate_presence(authors, "name"), "ar_model_validate_presence(name)");
    check(ar_model_validate_uniqueness(authors, "name"), "ar_model_validate_uniqueness(name)");
    check(ar_model_define(db, "Book", &books), "ar_model_define(Book)");
    check(ar_model_add_column(books, "title", AR_TYPE_TEXT, AR_COLUMN_FLAG_INDEXED), "ar_model_add_column(title)");
    check(ar_model_add_column(books, "year", AR_TYPE_INTEGER, AR_COLUMN_FLAG_REQUIRED), "ar_model_add_column(year)");
    check(ar_model_add_column(books, "price", AR_TYPE_DECIMAL, AR_COLUMN_FLAG_REQUIRED), "ar_model_add_column(price)");
    check(ar_model_belongs_to(books, authors), "ar_model_belongs_to(Book, Author)");

    /* Every row in one transaction. */
    check(ar_begin(db), "ar_begin");
    le_guin = new_author(authors, "Ursula K. Le Guin");
    lem = new_author(authors, "Stanis\xC5\x82" "aw Lem");
    pratchett = new_author(authors, "Terry Pratchett");
    add_book(books, le_guin, "A Wizard of Earthsea", 1968, "8.99");
    add_book(books, le_guin, "The Left Hand of Darkness", 1969, "9.50");
    add_book(books, le_guin, "The Dispossessed", 1974, "10.25");
    add_book(books, lem, "Solaris", 1961, "7.00");
    add_book(books, lem, "The Cyberiad", 1965, "11.10");
    add_book(books, lem, "His Master's Voice", 1968, "6.75");
    add_book(books, pratchett, "The Colour of Magic", 1983, "7.99");
    add_book(books, pratchett, "Small Gods", 1992, "8.49");
    add_book(books, pratchett, "Night Watch", 2002, "12.00");
    check(ar_commit(db), "ar_commit");
    check(ar_count(authors, &count), "ar_count(Author)");
    check(ar_count(books, &total), "ar_count(Book)");
    printf("saved: %" PRId64 " authors, %" PRId64 " books\n", count, total);

    /* A predicate with typed binds, newest first. */
    check(ar_query_new(books, "year >= ? AND title LIKE ?", &query), "ar_query_new");
    check(ar_query_bind_int64(query, 1, 1968), "ar_query_bind_int64");
    check(ar_query_bind_text(query, 2, "The %"), "ar_query_bind_text");
    check(ar_query_order(query, "year", 0), "ar_query_order(year)");
    check(ar_query_count(query, &count), "ar_query_count");
    printf("year >= 1968 AND title LIKE 'The %%': %" PRId64 " books, newest first\n", count);
    print_books(query);

    /* Every book by title, the second page of three. */
    check(ar_query_new(books, NULL, &query), "ar_query_new");
    check(ar_query_order(query, "title", 1), "ar_query_order(title)");
    check(ar_query_limit(query, 3), "ar_query_limit");
    check(ar_query_offset(query, 3), "ar_query_offset");
    check(ar_query_count(query, &count), "ar_query_count");
    printf("by title, page 2 (limit 3 offset 3): %" PRId64 " of %" PRId64 "\n", count, total);
    print_books(query);

    /* A range OR the author's id, ordered by two columns (ties on year: title descending). */
    check(ar_query_new(books, "year BETWEEN ? AND ? OR authorId = ?", &query), "ar_query_new");
    check(ar_query_bind_int64(query, 1, 1960), "ar_query_bind_int64");
    check(ar_query_bind_int64(query, 2, 1969), "ar_query_bind_int64");
    check(ar_query_bind_int64(query, 3, ar_record_id(pratchett)), "ar_query_bind_int64");
    check(ar_query_order(query, "year", 1), "ar_query_order(year)");
    check(ar_query_order(query, "title", 0), "ar_query_order(title)");
    check(ar_query_limit(query, 4), "ar_query_limit");
    printf("the 1960s or Pratchett, by year then title descending, first 4:\n");
    print_books(query);

    /* Has-many: an author's books. */
    check(ar_query_children(lem, books, &query), "ar_query_children");
    check(ar_query_order(query, "year", 1), "ar_query_order(year)");
    check(ar_query_count(query, &count), "ar_query_count");
    printf("books by Stanis\xC5\x82" "aw Lem: %" PRId64 "\n", count);
    print_books(query);

    /* Validations: a blank name, then a taken one. */
    check(ar_record_new(authors, &invalid), "ar_record_new(Author)");
    check(ar_record_set_text(invalid, "name", "  "), "ar_record_set_text(name)");
    print_validation(invalid, "Author (blank name)");
    check(ar_record_set_text(invalid, "name", "Terry Pratchett"), "ar_record_set_text(name)");
    print_validation(invalid, "Author (taken name)");
    check(ar_record_set_text(invalid, "name", "Italo Calvino"), "ar_record_set_text(name)");
    check(ar_record_save(invalid), "ar_record_save(Author)");
    printf("valid Author: saved as #%" PRId64 "\n", ar_record_id(invalid));
    ar_record_free(invalid);

    /* A savepoint rolled back alone inside a committed transaction. */
    check(ar_begin(db), "ar_begin (outer)");
    add_book(books, pratchett, "Mort", 1987, "7.25");
    check(ar_begin(db), "ar_begin (inner)");
    add_book(books, pratchett, "Eric", 1990, "5.00");
    check(ar_count(books, &count), "ar_count(Book)");
    printf("inside the savepoint: %" PRId64 " books\n", count);
    check(ar_rollback(db), "ar_rollback (inner)");
    check(ar_commit(db), "ar_commit (outer)");
    check(ar_count(books, &count), "ar_count(Book)");
    printf("after rolling back the savepoint and committing: %" PRId64 " books\n", count);
    check(ar_query_new(books, "title IN (?, ?)", &query), "ar_query_new");
    check(ar_query_bind_text(query, 1, "Mort"), "ar_query_bind_text");
    check(ar_query_bind_text(query, 2, "Eric"), "ar_query_bind_text");
    printf("Mort (outer) and Eric (savepoint):\n");
    print_books(query);

    ar_record_free(le_guin);
    ar_record_free(lem);
    ar_record_free(pratchett);
    ar_model_free(books);
    ar_model_free(authors);
    ar_close(db);
    return 0;
}
