#!/usr/bin/env bash
# Drives the topology scripts/with-topology.sh started (AR_TOPO_DIR names its directory):
#
#   topology-ctl.sh status          each node: port, up or down, role, WAL position
#   topology-ctl.sh primary         the node that is the primary now (0, 1 or 2) and its port
#   topology-ctl.sh kill-primary    kill -9 the primary's postmaster and its processes (a crash)
#   topology-ctl.sh promote N       promote standby N, after the primary's death: first it
#                                   catches up from a standby that received more WAL (with ANY 1
#                                   an acknowledged commit may be on one standby only), then
#                                   pg_ctl promote, waiting until it accepts writes; then it
#                                   points pgbouncer at it (ini + SIGHUP) and the other standby
#                                   (pg_rewind-ing it first if it had gone past the new timeline's
#                                   fork), and with --sync makes the new primary wait for that one
#   topology-ctl.sh delay N D       recovery_min_apply_delay = D on standby N ('2s'; 0 to lift it)
#   topology-ctl.sh stop N | start N  stop (fast) or start node N; a standby started after a
#                                   failover follows the new primary (rewound if it must be)
#   topology-ctl.sh lsn N           node N's WAL position: written (primary) or replayed (standby)
#   topology-ctl.sh wait-replay     until every running standby has replayed the primary's WAL
#   topology-ctl.sh stop-all        every server (immediate) and pgbouncer (what the trap runs)
#
# Nodes are numbered as with-topology.sh made them: 0 the first primary, 1 and 2 the standbys,
# which stream as application_name standby1 and standby2.
set -euo pipefail

dir=${AR_TOPO_DIR:?topology-ctl: AR_TOPO_DIR is not set (run under scripts/with-topology.sh)}
# shellcheck source=/dev/null
. "$dir/topology.env"

as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
port_of() { local v=PORT$1; echo "${!v}"; }
sql() {  # sql NODE QUERY: one value, or nothing when the node cannot be reached
  "$BINDIR/psql" -h 127.0.0.1 -p "$(port_of "$1")" -U ar -d postgres -XAtqc "$2" 2>/dev/null || true
}
is_up() { [ -f "$dir/node$1/postmaster.pid" ] && as_server "$BINDIR/pg_ctl" -D "$dir/node$1" status >/dev/null 2>&1; }
current_primary() { cat "$dir/primary"; }
now() { date +%s.%N; }
elapsed() { awk "BEGIN { printf \"%.2f\", $(now) - $1 }"; }
node_arg() {
  case "${1:-}" in 0|1|2) ;; *) echo "topology-ctl: node must be 0, 1 or 2, not '${1:-}'" >&2; exit 2 ;; esac
}

# set_conf NODE KEY VALUE: KEY = VALUE in the node's postgresql.auto.conf (read last; the server
# itself writes it only on ALTER SYSTEM, which nothing here runs), whether the node runs or not.
set_conf() {
  local file="$dir/node$1/postgresql.auto.conf"
  { grep -v "^$2 = " "$file" || true; echo "$2 = $3"; } > "$dir/.auto.conf.new"
  chmod 644 "$dir/.auto.conf.new"
  as_server cp "$dir/.auto.conf.new" "$file"
  rm -f "$dir/.auto.conf.new"
}
reload() { as_server "$BINDIR/pg_ctl" -D "$dir/node$1" reload >/dev/null; }

# follow STANDBY PRIMARY: the standby streams from PRIMARY, as application_name standbyN.
follow() {
  set_conf "$1" primary_conninfo "'host=127.0.0.1 port=$(port_of "$2") user=ar application_name=standby$1'"
}

# streaming_from STANDBY PRIMARY SECONDS: whether the standby streams the primary's timeline
# within SECONDS (a standby that went past the timeline's fork connects, then cannot follow it).
streaming_from() {
  local i tli
  for i in $(seq 1 $(( $3 * 10 ))); do
    tli=$(sql "$2" "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int")
    [ "$(sql "$1" "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming' AND received_tli = ${tli:-0} AND sender_port = $(port_of "$2")")" = 1 ] \
      && return 0
    sleep 0.1
  done
  return 1
}

# attach STANDBY PRIMARY: the standby streams from PRIMARY (reloaded, or started, with the new
# primary_conninfo). If it replayed WAL past the new timeline's fork, it cannot follow: it is
# stopped, rewound to the new primary (pg_rewind), and started again.
attach() {
  local m=$1 n=$2
  follow "$m" "$n"
  if is_up "$m"; then reload "$m"; else as_server "$BINDIR/pg_ctl" -D "$dir/node$m" -l "$dir/node$m.log" -w -t 60 start >/dev/null; fi
  if streaming_from "$m" "$n" 5; then echo "node$m: streams from node$n"; return; fi
  as_server "$BINDIR/pg_ctl" -D "$dir/node$m" -m fast -w stop >/dev/null
  as_server "$BINDIR/pg_rewind" -D "$dir/node$m" --source-server="host=127.0.0.1 port=$(port_of "$n") user=ar dbname=postgres" \
    >"$dir/rewind$m.log" 2>&1 || { echo "topology-ctl: pg_rewind of node$m failed:" >&2; cat "$dir/rewind$m.log" >&2; exit 1; }
  # pg_rewind copied the new primary's configuration files: this node's again.
  echo "port = $(port_of "$m")" | as_server tee "$dir/node$m/node.conf" >/dev/null
  as_server touch "$dir/node$m/standby.signal"
  follow "$m" "$n"
  as_server "$BINDIR/pg_ctl" -D "$dir/node$m" -l "$dir/node$m.log" -w -t 60 start >/dev/null
  streaming_from "$m" "$n" 20 || { echo "topology-ctl: node$m does not stream from node$n after pg_rewind" >&2; exit 1; }
  echo "node$m: streams from node$n (after pg_rewind: it had gone past the fork)"
}

# synchronous PRIMARY (with --sync): the primary waits for ANY 1 of the standbys streaming from it.
synchronous() {
  local n=$1 names
  names=$(sql "$n" "SELECT string_agg(application_name, ', ' ORDER BY application_name) FROM pg_stat_replication WHERE state = 'streaming'")
  if [ -z "$names" ]; then
    echo "node$n: no standby follows it: commits are acknowledged without a standby (asynchronous)"
    return
  fi
  printf "port = %s\nsynchronous_standby_names = 'ANY 1 (%s)'\nsynchronous_commit = on\n" "$(port_of "$n")" "$names" \
    | as_server tee "$dir/node$n/node.conf" >/dev/null
  reload "$n"
  echo "node$n: synchronous again (ANY 1 ($names))"
}

repoint_bouncer() {
  [ "$BOUNCER" = 1 ] || return 0
  local port; port=$(port_of "$1")
  sed -E "s/^(postgres[a-z_]* = host=127\.0\.0\.1 port=)[0-9]+/\1$port/" "$dir/pgbouncer.ini" > "$dir/.ini.new"
  chmod 644 "$dir/.ini.new"
  as_server cp "$dir/.ini.new" "$dir/pgbouncer.ini"
  rm -f "$dir/.ini.new"
  kill -HUP "$(cat "$dir/pgbouncer.pid")"
  echo "pgbouncer: now on node$1 (:$port), reloaded"
}

case "${1:-}" in
  status)
    primary=$(current_primary)
    for n in 0 1 2; do
      if is_up "$n"; then
        if [ "$(sql "$n" "SELECT pg_is_in_recovery()")" = f ]; then
          echo "node$n :$(port_of "$n") up primary lsn $(sql "$n" "SELECT pg_current_wal_lsn()")"
        else
          echo "node$n :$(port_of "$n") up standby replayed $(sql "$n" "SELECT pg_last_wal_replay_lsn()") from :$(sql "$n" "SELECT sender_port FROM pg_stat_wal_receiver")"
        fi
      else
        echo "node$n :$(port_of "$n") down"
      fi
    done
    echo "primary node$primary"
    ;;
  primary)
    primary=$(current_primary); echo "$primary $(port_of "$primary")" ;;
  kill-primary)
    primary=$(current_primary)
    pid=$(head -1 "$dir/node$primary/postmaster.pid")
    children=$(pgrep -P "$pid" || true)
    # The postmaster and every process it started, at once, as a crash of the machine would.
    # shellcheck disable=SC2086
    kill -9 "$pid" $children
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    echo "killed node$primary (postmaster $pid and $(echo $children | wc -w) children) at $(now)"
    ;;
  promote)
    node_arg "${2:-}"; n=$2; started=$(now)
    [ "$(sql "$n" "SELECT pg_is_in_recovery()")" = t ] || { echo "topology-ctl: node$n is not a running standby" >&2; exit 1; }
    old=$(current_primary)
    # With ANY 1, a commit the old primary acknowledged may be in the OTHER standby's WAL only:
    # promote N only once it has received everything any running standby received (it streams
    # from that standby meanwhile, cascading), as a failover manager picks the most advanced.
    for m in 0 1 2; do
      [ "$m" = "$n" ] || [ "$m" = "$old" ] || ! is_up "$m" && continue
      theirs=$(sql "$m" "SELECT pg_last_wal_receive_lsn()")
      [ -n "$theirs" ] && [ "$(sql "$n" "SELECT pg_last_wal_receive_lsn() < '$theirs'::pg_lsn")" = t ] || continue
      mine=$(sql "$n" "SELECT pg_last_wal_receive_lsn()")
      follow "$n" "$m"; reload "$n"
      until [ "$(sql "$n" "SELECT pg_last_wal_receive_lsn() >= '$theirs'::pg_lsn")" = t ]; do sleep 0.05; done
      echo "node$n: caught up from node$m (it had received $mine, node$m $theirs)"
    done
    as_server "$BINDIR/pg_ctl" -D "$dir/node$n" -w -t 60 promote >/dev/null
    until [ "$(sql "$n" "SELECT NOT pg_is_in_recovery() AND NOT current_setting('transaction_read_only')::bool")" = t ]; do sleep 0.05; done
    echo "$n" > "$dir/primary"
    echo "promoted node$n (:$(port_of "$n")) in $(elapsed "$started") s: it accepts writes"
    repoint_bouncer "$n"
    for m in 0 1 2; do
      [ "$m" = "$n" ] || [ "$m" = "$old" ] || ! is_up "$m" && continue
      attach "$m" "$n"
    done
    [ "$SYNC" = 1 ] && synchronous "$n"
    echo "failover done in $(elapsed "$started") s"
    ;;
  delay)
    node_arg "${2:-}"; n=$2; d=${3:?usage: topology-ctl.sh delay N DURATION}
    set_conf "$n" recovery_min_apply_delay "'$d'"
    reload "$n"
    want=$(sql "$n" "SELECT (extract(epoch FROM '$d'::interval) * 1000)::int")
    for _ in $(seq 1 50); do  # the reload (SIGHUP) takes effect a moment later
      [ "$(sql "$n" "SELECT setting FROM pg_settings WHERE name = 'recovery_min_apply_delay'")" = "$want" ] && break
      sleep 0.1
    done
    echo "node$n: recovery_min_apply_delay = $(sql "$n" "SHOW recovery_min_apply_delay")"
    ;;
  stop)
    node_arg "${2:-}"
    as_server "$BINDIR/pg_ctl" -D "$dir/node$2" -m fast -w stop >/dev/null
    echo "node$2: stopped" ;;
  start)
    node_arg "${2:-}"; primary=$(current_primary)
    if [ -f "$dir/node$2/standby.signal" ] && [ "$primary" != 0 ]; then
      # After a failover: the standby follows the new primary (rewound if it must be).
      attach "$2" "$primary"
      [ "$SYNC" = 1 ] && synchronous "$primary"
    else
      as_server "$BINDIR/pg_ctl" -D "$dir/node$2" -l "$dir/node$2.log" -w -t 60 start >/dev/null
    fi
    echo "node$2: started" ;;
  lsn)
    node_arg "${2:-}"
    sql "$2" "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END" ;;
  wait-replay)
    primary=$(current_primary)
    target=$(sql "$primary" "SELECT pg_current_wal_lsn()")
    for n in 0 1 2; do
      [ "$n" = "$primary" ] || ! is_up "$n" && continue
      until [ "$(sql "$n" "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn")" = t ]; do sleep 0.05; done
    done
    echo "replayed up to $target" ;;
  stop-all)
    if [ -f "$dir/pgbouncer.pid" ]; then kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true; fi
    for n in 0 1 2; do
      [ -f "$dir/node$n/postmaster.pid" ] || continue
      as_server "$BINDIR/pg_ctl" -D "$dir/node$n" -m immediate -w stop >/dev/null 2>&1 || true
    done ;;
  *)
    sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
