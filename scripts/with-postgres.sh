#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server, then stops and removes it whatever
# happens (the trap), so that neither the next run nor CI finds one left behind.
#
#     scripts/with-postgres.sh make test-engines
#
# The cluster lives in a fresh temporary directory: initdb (trust authentication, user
# `ar`, UTF-8, C collation so that text sorts by bytes as in SQLite), then pg_ctl with the
# Unix socket in that directory and no TCP at all (listen_addresses=''). The server refuses
# to run as root, so as root it runs as the `postgres` user the Debian package creates.
# The command sees AR_TEST_POSTGRES (a libpq key=value connection string), the same as a URL
# in AR_TEST_POSTGRES_URL (for the C API's ar_open), and AR_TEST_REQUIRE_POSTGRES=1.
set -euo pipefail

bindir=$(pg_config --bindir 2>/dev/null || true)
if [ ! -x "$bindir/initdb" ]; then
  # pg_config comes from libpq-dev, whose version may differ from the server's.
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
fi
[ -x "$bindir/initdb" ] || { echo "with-postgres: no initdb (install the Debian package postgresql)" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
stop() {
  as_server "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
# `with-postgres.sh --cleanup DIR`: what the guard (scripts/guard.sh) runs once a run is gone.
if [ "${1:-}" = --cleanup ]; then
  dir=$2
  [ -d "$dir" ] && stop
  exit 0
fi

dir=$(mktemp -d /tmp/activerecord-pg.XXXXXX)
trap stop EXIT
trap 'exit 130' INT TERM
# SIGKILL runs no trap: a guard in a session of its own stops the server once this script is gone.
setsid "$here/guard.sh" $$ "$here/with-postgres.sh" --cleanup "$dir" </dev/null >/dev/null 2>&1 &
if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; fi
chmod 755 "$dir"

as_server "$bindir/initdb" -D "$dir/data" -A trust -U ar -E UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
as_server "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
  -o "-k $dir -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
  >/dev/null || { cat "$dir/server.log" >&2; exit 1; }

export AR_TEST_POSTGRES="host=$dir user=ar dbname=postgres"
export AR_TEST_POSTGRES_URL="postgresql://ar@/postgres?host=$dir"
export AR_TEST_REQUIRE_POSTGRES=1
echo "with-postgres: throwaway PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on the socket in $dir"
"$@"
