#!/usr/bin/env bash
# `make lib` replaces .build/c/lib/libactiverecord.so with a new file renamed over it, never by
# writing over the file a running program has mapped (make test-lib-replace):
#  * a C program running on the library while `make lib` runs goes on and exits cleanly;
#  * the library's inode changes (a new file took the name), and no temporary file is left.
# (Writing in place with cp kept the inode, and crashed programs running on the library
# whenever the new build differed.)
#
#     scripts/test-lib-replace.sh CC
set -euo pipefail
cc=${1:-gcc}
cd "$(dirname "$0")/.."
library=.build/c/lib/libactiverecord.so
[ -f "$library" ] || { echo "test-lib-replace: $library is missing; run make lib first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "test-lib-replace: $*" >&2; exit 1; }

# Runs on the library until told to stop (the file `stop` appears), saving a record each round.
cat > "$work/runner.c" <<'PROGRAM'
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <unistd.h>
#include "activerecord.h"
int main(int argc, char **argv) {
    long rounds = 0;
    (void)argc;
    FILE *ready = fopen(argv[2], "w");
    if (ready) fclose(ready);
    while (access(argv[1], F_OK) != 0) {
        ar_database *db = NULL;
        ar_model *model = NULL;
        ar_record *record = NULL;
        if (ar_open(":memory:", &db) != AR_OK || ar_model_define(db, "Round", &model) != AR_OK
            || ar_model_add_column(model, "n", AR_TYPE_INTEGER, 0) != AR_OK || ar_record_new(model, &record) != AR_OK
            || ar_record_set_int64(record, "n", rounds) != AR_OK || ar_record_save(record) != AR_OK) {
            fprintf(stderr, "runner: round %ld failed: %s\n", rounds, ar_last_error(db));
            return 1;
        }
        ar_record_free(record);
        ar_model_free(model);
        ar_close(db);
        rounds++;
    }
    printf("%ld rounds\n", rounds);
    return 0;
}
PROGRAM
"$cc" -std=c99 -Wall -Wextra -Werror -Iinclude "$work/runner.c" -o "$work/runner" \
  -L.build/c/lib -lactiverecord -Wl,-rpath,"$PWD/.build/c/lib"

before=$(stat -c %i "$library")
"$work/runner" "$work/stop" "$work/ready" > "$work/runner.out" &
runner=$!
while [ ! -e "$work/ready" ]; do kill -0 "$runner" 2>/dev/null || fail "the runner ended before it started"; sleep 0.05; done
make --no-print-directory lib > "$work/make.log" 2>&1 || { cat "$work/make.log" >&2; fail "make lib failed"; }
sleep 0.3 # the runner goes on with the library it loaded
touch "$work/stop"
wait "$runner" || fail "the program running on the library failed while make lib replaced it (status $?)"
after=$(stat -c %i "$library")
[ "$before" != "$after" ] || fail "make lib wrote over the library in place (inode $before kept)"
leftovers=$(find .build/c/lib -name 'libactiverecord.so.new-*')
[ -z "$leftovers" ] || fail "make lib left temporary files: $leftovers"
echo "test-lib-replace: make lib renamed a new library over the old one (inode $before -> $after);" \
  "a program running on it went on ($(cat "$work/runner.out"))"
