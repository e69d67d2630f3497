#!/usr/bin/env bash
# make test's check that a throwaway server never outlives its run: scripts/with-postgres.sh
# and scripts/with-pgbouncer.sh killed with SIGKILL (which runs no trap) still leave no
# server, pgbouncer or directory behind (their guard, scripts/guard.sh, cleans up within a
# few seconds); a normal end leaves nothing either. About 15 seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# gone DIR PID: waits up to 10 s for DIR to be removed and PID (a server) to end.
gone() {
  for _ in $(seq 100); do
    if [ ! -e "$1" ] && ! kill -0 "$2" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "test-cleanup: $1 (process $2) left behind" >&2
  return 1
}
# started LOG KEY: the directory a line `KEY=DIR` of LOG names (waits up to 60 s).
started() {
  for _ in $(seq 600); do
    local found
    found=$(sed -n "s/^$2=//p" "$1" | head -1)
    if [ -n "$found" ] && [ -e "$found" ]; then echo "$found"; return 0; fi
    sleep 0.1
  done
  echo "test-cleanup: no directory in $1" >&2; cat "$1" >&2
  return 1
}

# 1. with-postgres.sh killed: the server stops, its directory goes.
"$here/with-postgres.sh" sh -c 'echo "SERVER=${AR_TEST_POSTGRES%% *}" | sed "s/=host=/=/"; exec sleep 120' > "$work/pg.log" 2>&1 &
script=$!
dir=$(started "$work/pg.log" SERVER)
server=$(head -1 "$dir/data/postmaster.pid")
kill -9 "$script"
gone "$dir" "$server"
pkill -f "^sleep 120$" 2>/dev/null || true
echo "test-cleanup: with-postgres.sh killed (SIGKILL): server $server stopped, $dir removed"

# 2. with-pgbouncer.sh killed inside a with-postgres.sh run that goes on: pgbouncer stops and
# its directory goes; then the outer run ends normally and its server goes too.
"$here/with-postgres.sh" bash -c '
  "$0/with-pgbouncer.sh" sh -c "echo \"BOUNCER=\${AR_TEST_PGBOUNCER%% *}\" | sed \"s/=host=/=/\"; exec sleep 120" > "$1/bouncer.log" 2>&1 &
  echo $! > "$1/bouncer.script"
  echo "SERVER=${AR_TEST_POSTGRES%% *}" | sed "s/=host=/=/"
  # Until the test says so, or at most 60 s (a failed test must not leave this run behind).
  for _ in $(seq 600); do [ -e "$1/done" ] || [ ! -d "$1" ] && break; sleep 0.1; done' "$here" "$work" > "$work/outer.log" 2>&1 &
outer=$!
outer_dir=$(started "$work/outer.log" SERVER)
bouncer_dir=$(started "$work/bouncer.log" BOUNCER)
for _ in $(seq 100); do [ -s "$bouncer_dir/bouncer.pid" ] && break; sleep 0.1; done
bouncer=$(cat "$bouncer_dir/bouncer.pid")
kill -9 "$(cat "$work/bouncer.script")"
gone "$bouncer_dir" "$bouncer"
echo "test-cleanup: with-pgbouncer.sh killed (SIGKILL): pgbouncer $bouncer stopped, $bouncer_dir removed"
server=$(head -1 "$outer_dir/data/postmaster.pid")
touch "$work/done"
wait "$outer"
gone "$outer_dir" "$server"
pkill -f "^sleep 120$" 2>/dev/null || true
echo "test-cleanup: with-postgres.sh ended normally: server $server stopped, $outer_dir removed"
