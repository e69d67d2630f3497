#!/usr/bin/env bash
# Runs a command with a throwaway pgbouncer in transaction pooling mode in front of a
# throwaway PostgreSQL server (scripts/with-postgres.sh, started here when AR_TEST_POSTGRES
# does not already name one), then stops and removes it whatever happens (the trap).
#
#     scripts/with-pgbouncer.sh swift test --skip-build --filter TransactionPooling
#
# The server gets a database `bouncer` (created here). pgbouncer (the Debian package, 1.18)
# listens on a Unix socket in a fresh temporary directory only (no TCP: no port to collide
# with), trusts the server's user, and pools in transaction mode with FEWER server connections
# than a client's pool, so that clients share them:
#   bouncer         pool_size 2
#   bouncer_single  pool_size 1 (every client on the same server connection, one at a time)
# The command sees AR_TEST_PGBOUNCER and AR_TEST_PGBOUNCER_SINGLE (libpq key=value strings
# through pgbouncer), AR_TEST_PGBOUNCER_DIRECT (the same database, straight to the server)
# and AR_TEST_POSTGRES (the server, as with-postgres.sh sets it). As root, pgbouncer runs as
# the `postgres` user (runuser), as the server does.
set -euo pipefail

as_bouncer() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
stop() {
  if [ -f "$dir/bouncer.pid" ]; then
    pid=$(cat "$dir/bouncer.pid")
    kill "$pid" 2> /dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null || true
  fi
  rm -rf "$dir"
}
here=$(cd "$(dirname "$0")" && pwd)
# `with-pgbouncer.sh --cleanup DIR`: what the guard (scripts/guard.sh) runs once a run is gone.
if [ "${1:-}" = --cleanup ]; then
  dir=$2
  [ -d "$dir" ] && stop
  exit 0
fi

if [ -z "${AR_TEST_POSTGRES:-}" ]; then
  exec "$(dirname "$0")/with-postgres.sh" "$0" "$@"
fi
command -v pgbouncer > /dev/null || { echo "with-pgbouncer: no pgbouncer (install the Debian package pgbouncer)" >&2; exit 1; }

server_dir=$(sed -n 's/.*host=\([^ ]*\).*/\1/p' <<< "$AR_TEST_POSTGRES")
server_user=$(sed -n 's/.*user=\([^ ]*\).*/\1/p' <<< "$AR_TEST_POSTGRES")
[ -S "$server_dir/.s.PGSQL.5432" ] || { echo "with-pgbouncer: AR_TEST_POSTGRES does not name a server socket: $AR_TEST_POSTGRES" >&2; exit 1; }

dir=$(mktemp -d /tmp/activerecord-bouncer.XXXXXX)
trap stop EXIT
trap 'exit 130' INT TERM
# SIGKILL runs no trap: a guard in a session of its own stops pgbouncer once this script is gone.
setsid "$here/guard.sh" $$ "$here/with-pgbouncer.sh" --cleanup "$dir" </dev/null >/dev/null 2>&1 &
if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; fi
chmod 755 "$dir"

psql -X -q -h "$server_dir" -U "$server_user" -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE bouncer" > /dev/null

port=6432  # only names the socket file, in this directory
cat > "$dir/pgbouncer.ini" << INI
[databases]
bouncer = host=$server_dir dbname=bouncer user=$server_user pool_size=2
bouncer_single = host=$server_dir dbname=bouncer user=$server_user pool_size=1

[pgbouncer]
listen_addr =
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 2
server_lifetime = 3600
logfile = $dir/bouncer.log
pidfile = $dir/bouncer.pid
INI
echo "\"$server_user\" \"\"" > "$dir/users.txt"
if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"/*; fi
as_bouncer pgbouncer -d "$dir/pgbouncer.ini" > "$dir/start.log" 2>&1 || { cat "$dir/start.log" "$dir/bouncer.log" >&2; exit 1; }
for _ in $(seq 100); do [ -S "$dir/.s.PGSQL.$port" ] && break; sleep 0.05; done
[ -S "$dir/.s.PGSQL.$port" ] || { echo "with-pgbouncer: pgbouncer did not start:" >&2; cat "$dir/bouncer.log" >&2; exit 1; }

export AR_TEST_PGBOUNCER="host=$dir port=$port user=$server_user dbname=bouncer"
export AR_TEST_PGBOUNCER_SINGLE="host=$dir port=$port user=$server_user dbname=bouncer_single"
export AR_TEST_PGBOUNCER_DIRECT="host=$server_dir user=$server_user dbname=bouncer"
echo "with-pgbouncer: pgbouncer $(pgbouncer --version | awk 'NR==1 {print $2}') (transaction pooling, 2 server connections) on the socket in $dir"
"$@"
