#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL topology, then stops and removes it whatever
# happens (the trap): a primary and two streaming standbys, optionally with synchronous
# replication and a pgbouncer in front of the primary.
#
#     scripts/with-topology.sh [--sync] [--bouncer] CMD...
#
# Everything lives in a fresh temporary directory owned by `postgres` (the server refuses to
# run as root), listens on 127.0.0.1 only, on free ports, with the Unix sockets in that
# directory. The nodes are node0 (the first primary), node1 and node2 (the standbys, made with
# `pg_basebackup -R -X stream`, streaming from node0 as application_name standby1 / standby2).
#
#   --sync     the primary commits only once one standby has flushed the commit's WAL:
#              synchronous_standby_names = 'ANY 1 (standby1, standby2)', synchronous_commit = on.
#   --bouncer  a pgbouncer 1.18 on the primary: database `postgres` in transaction pooling mode,
#              database `postgres_session` (the same server database) in session mode.
#
# Speed: every node runs with fsync = off. The tests kill server processes (kill -9), never the
# machine: what a process wrote to a file is in the kernel's page cache and survives its death,
# so "the standby flushed the commit" (what synchronous_commit = on waits for) still means "the
# commit is in the standby's WAL files", and it survives the primary's kill -9 and the standby's
# promotion. Only a power loss could lose it, which no test here makes. full_page_writes stays on
# and wal_log_hints is on: pg_rewind needs both to bring back a standby that went past the new
# primary's fork (topology-ctl.sh promote and start).
#
# The command sees:
#   AR_TOPO_DIR             the directory (scripts/topology-ctl.sh reads it)
#   AR_TOPO_PRIMARY         a libpq URL listing the three nodes with target_session_attrs=read-write
#                           and connect_timeout=2: it finds whichever node is the primary now
#   AR_TOPO_PRIMARY_DIRECT  node0 alone (key=value)
#   AR_TOPO_REPLICAS        the standbys' conninfos (key=value), one per line
#   AR_TOPO_BOUNCER         pgbouncer, transaction pooling (with --bouncer)
#   AR_TOPO_BOUNCER_SESSION pgbouncer, session pooling (with --bouncer)
#   AR_TOPO_CTL             the control script (kill-primary, promote N, delay N D, stop N, ...)
#   AR_TOPO_SYNC            1 with --sync, else 0
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
stop() {
  "$here/topology-ctl.sh" stop-all >/dev/null 2>&1 || true
  rm -rf "$dir"
}
# `with-topology.sh --cleanup DIR`: what the guard (scripts/guard.sh) runs once a run is gone.
if [ "${1:-}" = --cleanup ]; then
  dir=$2
  export AR_TOPO_DIR=$dir
  [ -d "$dir" ] && stop
  exit 0
fi

sync=0 bouncer=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sync) sync=1; shift ;;
    --bouncer) bouncer=1; shift ;;
    --) shift; break ;;
    -*) echo "with-topology: unknown option $1 (--sync, --bouncer)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: scripts/with-topology.sh [--sync] [--bouncer] CMD..." >&2; exit 2; }

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bindir/initdb" ] || { echo "with-topology: no initdb (install the Debian package postgresql)" >&2; exit 1; }
if [ "$bouncer" = 1 ] && ! command -v pgbouncer >/dev/null; then
  echo "with-topology: no pgbouncer (install the Debian package pgbouncer, or run make deps)" >&2; exit 1
fi

dir=$(mktemp -d /tmp/activerecord-topo.XXXXXX)
export AR_TOPO_DIR=$dir
trap stop EXIT
trap 'exit 130' INT TERM
# SIGKILL runs no trap: a guard in a session of its own stops the topology once this script is
# gone (`--cleanup DIR`, handled before the options).
setsid "$here/guard.sh" $$ "$here/with-topology.sh" --cleanup "$dir" </dev/null >/dev/null 2>&1 &
if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; fi
chmod 755 "$dir"
as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Four free TCP ports on 127.0.0.1 (three nodes, pgbouncer), held together while chosen so
# that they differ; never 5432.
read -r port0 port1 port2 bouncer_port < <(python3 - <<'PY'
import socket
held = []
while len(held) < 4:
    s = socket.socket(); s.bind(("127.0.0.1", 0))
    if s.getsockname()[1] != 5432: held.append(s)
print(*[s.getsockname()[1] for s in held])
PY
)

cat > "$dir/topology.env" <<ENV
BINDIR=$bindir
PORT0=$port0
PORT1=$port1
PORT2=$port2
BOUNCER_PORT=$bouncer_port
SYNC=$sync
BOUNCER=$bouncer
ENV
echo 0 > "$dir/primary"
chmod 644 "$dir/topology.env" "$dir/primary"

started=$(date +%s.%N)
as_server "$bindir/initdb" -D "$dir/node0" -A trust -U ar -E UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
# Settings every node shares (the standbys' copies come with pg_basebackup); each node's own
# (its port, and the primary's synchronous standbys) are in node.conf, which is not shared.
cat >> "$dir/node0/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
hot_standby = on
wal_log_hints = on
fsync = off
wal_receiver_status_interval = '1s'
wal_retrieve_retry_interval = '200ms'
log_line_prefix = '%m [%p] %a '
include_if_exists = 'node.conf'
CONF
echo "port = $port0" > "$dir/node0/node.conf"
if [ "$sync" = 1 ]; then
  printf "synchronous_standby_names = 'ANY 1 (standby1, standby2)'\nsynchronous_commit = on\n" >> "$dir/node0/node.conf"
fi
as_server "$bindir/pg_ctl" -D "$dir/node0" -l "$dir/node0.log" -w -t 60 start >/dev/null \
  || { cat "$dir/node0.log" >&2; exit 1; }

for n in 1 2; do
  port_var=port$n
  as_server "$bindir/pg_basebackup" -h 127.0.0.1 -p "$port0" -U ar -D "$dir/node$n" -R -X stream --no-sync \
    -d "application_name=standby$n" >"$dir/basebackup$n.log" 2>&1 || { cat "$dir/basebackup$n.log" >&2; exit 1; }
  echo "port = ${!port_var}" | as_server tee "$dir/node$n/node.conf" >/dev/null
  # -R wrote primary_conninfo; say it again with the standby's application_name, which
  # synchronous_standby_names names (postgresql.auto.conf is read last, so it wins).
  echo "primary_conninfo = 'host=127.0.0.1 port=$port0 user=ar application_name=standby$n'" \
    | as_server tee -a "$dir/node$n/postgresql.auto.conf" >/dev/null
  as_server "$bindir/pg_ctl" -D "$dir/node$n" -l "$dir/node$n.log" -w -t 60 start >/dev/null \
    || { cat "$dir/node$n.log" >&2; exit 1; }
done

# Both standbys streaming before the command runs (with --sync, the first commit would wait).
for _ in $(seq 1 100); do
  streaming=$("$bindir/psql" -h 127.0.0.1 -p "$port0" -U ar -d postgres -Atc \
    "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
  [ "$streaming" = 2 ] && break
  sleep 0.1
done
[ "$streaming" = 2 ] || { echo "with-topology: the standbys are not streaming" >&2; tail -5 "$dir"/node*.log >&2; exit 1; }

export AR_TOPO_PRIMARY="postgresql://ar@127.0.0.1:$port0,127.0.0.1:$port1,127.0.0.1:$port2/postgres?target_session_attrs=read-write&connect_timeout=2"
export AR_TOPO_PRIMARY_DIRECT="host=127.0.0.1 port=$port0 user=ar dbname=postgres"
export AR_TOPO_REPLICAS="host=127.0.0.1 port=$port1 user=ar dbname=postgres
host=127.0.0.1 port=$port2 user=ar dbname=postgres"
export AR_TOPO_CTL="$here/topology-ctl.sh"
export AR_TOPO_SYNC=$sync

if [ "$bouncer" = 1 ]; then
  echo '"ar" ""' > "$dir/users.txt"
  # server_login_retry: after a failed server login pgbouncer waits this long before it tries
  # again (15 s by default), which would be the failover's time to recover.
  cat > "$dir/pgbouncer.ini" <<INI
[databases]
postgres = host=127.0.0.1 port=$port0 dbname=postgres user=ar
postgres_session = host=127.0.0.1 port=$port0 dbname=postgres user=ar pool_mode=session

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
admin_users = ar
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
server_connect_timeout = 2
server_login_retry = 0.2
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
  chmod 644 "$dir/users.txt" "$dir/pgbouncer.ini"
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir/pgbouncer.ini"
  as_server pgbouncer -d "$dir/pgbouncer.ini" >"$dir/pgbouncer.start.log" 2>&1 \
    || { cat "$dir/pgbouncer.start.log" "$dir/pgbouncer.log" >&2 2>/dev/null; exit 1; }
  export AR_TOPO_BOUNCER="host=127.0.0.1 port=$bouncer_port user=ar dbname=postgres"
  export AR_TOPO_BOUNCER_SESSION="host=127.0.0.1 port=$bouncer_port user=ar dbname=postgres_session"
fi

printf 'with-topology: primary 127.0.0.1:%s, standbys :%s :%s%s%s in %s (%.1f s)\n' "$port0" "$port1" "$port2" \
  "$([ "$sync" = 1 ] && echo ", synchronous (ANY 1)")" "$([ "$bouncer" = 1 ] && echo ", pgbouncer :$bouncer_port")" \
  "$dir" "$(awk "BEGIN { print $(date +%s.%N) - $started }")"
"$@"
