#!/usr/bin/env bash
# make bench-server: the issue-33 HTTP service under load, this library (Examples/Server)
# against the same service written with Fluent (Benchmarks/FluentServer), on SQLite and on
# PostgreSQL, with wrk and one mixed profile (Benchmarks/server-mix.lua: ~80% reads by id and
# lists, ~20% creates and updates, random ids in the seeded range).
#
#     scripts/bench-server.sh              (the Makefile's bench-server runs this)
#
# For each engine it starts both servers, each on its own fresh database seeded with SEED
# authors × 10 posts, warms each up, then runs wrk at each of CONNECTIONS, the two servers
# one after the other at each level (so that a change in the machine's load hits both).
# Per run: requests/s, p50/p99/max latency, non-2xx responses, socket errors (connect, read,
# write, timeout), and the server process's peak thread count and peak RSS, sampled from
# /proc/PID/status while wrk runs. It prints one markdown table and writes it to
# Benchmarks/server-results.md. Every server it started is stopped whatever happens (trap);
# the PostgreSQL part runs on a throwaway server (scripts/with-postgres.sh).
#
# Settings (environment): DURATION=10s per run, WARMUP=5s, CONNECTIONS="16 64 256",
# THREADS=2 (wrk's), SEED=100, WRK_TIMEOUT=2s (a slower answer counts as a timeout error),
# ENGINES="sqlite postgresql", ORMS="activerecord fluent", SKIP_BUILD=1 to use the built
# binaries, AR_SERVER_BIN / FLUENT_SERVER_BIN to name other ones, RESULTS=path of the table.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-5s}
CONNECTIONS=${CONNECTIONS:-16 64 256}
THREADS=${THREADS:-2}
SEED=${SEED:-100}
WRK_TIMEOUT=${WRK_TIMEOUT:-2s}
ENGINES=${ENGINES:-sqlite postgresql}
ORMS=${ORMS:-activerecord fluent}
RESULTS=${RESULTS:-$root/Benchmarks/server-results.md}
SWIFT=${SWIFT:-swift}

# The PostgreSQL part needs a server: run the whole script inside a throwaway one.
if [[ " $ENGINES " == *" postgresql "* && -z "${AR_TEST_POSTGRES_URL:-}" ]]; then
  exec scripts/with-postgres.sh "$root/scripts/bench-server.sh" "$@"
fi

if ! command -v wrk >/dev/null; then
  echo "bench-server: installing wrk (Debian's package)"
  SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq wrk >/dev/null
fi

work=$(mktemp -d /tmp/bench-server.XXXXXX)
pids=()     # every process started here (servers, wrk, samplers): the trap stops them all
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- Build both servers in release --------------------------------------------------------
build_times=""
build() {   # build NAME DIR [swift build arguments]
  local name=$1 dir=$2; shift 2
  local start=$SECONDS
  echo "bench-server: building $name in release ($dir)"
  (cd "$dir" && $SWIFT build -c release "$@")
  build_times+="$name $((SECONDS - start))s; "
}
for orm in $ORMS; do
  case $orm in
    activerecord)
      [ -n "${AR_SERVER_BIN:-}" ] || [ -f Examples/Server/Package.swift ] \
        || { echo "bench-server: no Examples/Server (set AR_SERVER_BIN, or ORMS=fluent)" >&2; exit 1; }
      if [ -z "${AR_SERVER_BIN:-}" ]; then
        [ "${SKIP_BUILD:-0}" = 1 ] || build "the library's example" Examples/Server --product ActiveRecordServer
        AR_SERVER_BIN=$(cd Examples/Server && $SWIFT build -c release --show-bin-path)/ActiveRecordServer
      fi;;
    fluent)
      if [ -z "${FLUENT_SERVER_BIN:-}" ]; then
        [ "${SKIP_BUILD:-0}" = 1 ] || build "the Fluent server" Benchmarks/FluentServer
        FLUENT_SERVER_BIN=$(cd Benchmarks/FluentServer && $SWIFT build -c release --show-bin-path)/FluentServer
      fi;;
    *) echo "bench-server: unknown ORM $orm (activerecord, fluent)" >&2; exit 2;;
  esac
done
[ -z "$build_times" ] || echo "bench-server: build times: $build_times"

binary() { case $1 in activerecord) echo "$AR_SERVER_BIN";; fluent) echo "$FLUENT_SERVER_BIN";; esac; }

# --- Servers --------------------------------------------------------------------------------
declare -A server_pid server_port
# start_server ORM DATABASE: starts it on a free port (--port 0; both print the port bound),
# seeded, and waits until /health answers.
start_server() {
  local orm=$1 database=$2 log="$work/$1.log"
  "$(binary "$orm")" --host 127.0.0.1 --port 0 --database "$database" --seed "$SEED" >"$log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  server_pid[$orm]=$pid
  local port=""
  for _ in $(seq 1200); do
    kill -0 "$pid" 2>/dev/null || { echo "bench-server: the $orm server exited:" >&2; cat "$log" >&2; exit 1; }
    port=$(grep -o 'listening on [^ ]*:[0-9]\+' "$log" | head -1 | grep -o '[0-9]\+$' || true)
    if [ -n "$port" ] && curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
    port=""
    sleep 0.1
  done
  [ -n "$port" ] || { echo "bench-server: the $orm server did not answer in 120 s:" >&2; cat "$log" >&2; exit 1; }
  server_port[$orm]=$port
  echo "bench-server: $orm server pid $pid on port $port ($database)"
}

stop_server() {
  local pid=${server_pid[$1]}
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

# sample PID FILE: until FILE.stop exists, the peak of Threads and VmRSS (kB) into FILE.
sample() {
  local pid=$1 file=$2 threads=0 rss=0 t r
  while [ ! -e "$file.stop" ] && [ -r "/proc/$pid/status" ]; do
    read -r t r < <(awk '/^Threads:/ {t=$2} /^VmRSS:/ {r=$2} END {print t+0, r+0}' "/proc/$pid/status" 2>/dev/null || echo "0 0")
    (( t > threads )) && threads=$t
    (( r > rss )) && rss=$r
    echo "$threads $rss" >"$file"
    sleep 0.1
  done
}

# run ENGINE CONNECTIONS ORM: one wrk run, one line of results.
run() {
  local engine=$1 connections=$2 orm=$3
  local port=${server_port[$orm]} pid=${server_pid[$orm]} file="$work/sample-$engine-$connections-$orm"
  sample "$pid" "$file" &
  local sampler=$!
  # wrk in the background and `wait`: a signal then runs the trap at once, which stops wrk too.
  BENCH_AUTHORS=$SEED wrk -t "$THREADS" -c "$connections" -d "$DURATION" --timeout "$WRK_TIMEOUT" \
    -s Benchmarks/server-mix.lua "http://127.0.0.1:$port" >"$file.wrk" 2>&1 &
  pids+=("$!" "$sampler")
  wait "$!" || true
  local out
  out=$(cat "$file.wrk")
  touch "$file.stop"
  wait "$sampler" 2>/dev/null || true
  local line
  line=$(grep '^BENCH ' <<<"$out" || true)
  [ -n "$line" ] || { echo "bench-server: wrk printed no result:" >&2; echo "$out" >&2; exit 1; }
  kill -0 "$pid" 2>/dev/null || { echo "bench-server: the $orm server died under load:" >&2; tail -20 "$work/$orm.log" >&2; exit 1; }
  local threads rss
  read -r threads rss <"$file"
  echo "engine=$engine connections=$connections orm=$orm ${line#BENCH } threads=$threads rss_kb=$rss" | tee -a "$work/results"
}

for engine in $ENGINES; do
  case $engine in
    sqlite)
      for orm in $ORMS; do start_server "$orm" "$work/$orm.sqlite"; done;;
    postgresql)
      # A database of its own for each server, on the throwaway server.
      for orm in $ORMS; do
        PGOPTIONS="-c client_min_messages=warning" psql -q "$AR_TEST_POSTGRES_URL" -c "DROP DATABASE IF EXISTS bench_$orm" -c "CREATE DATABASE bench_$orm"
        start_server "$orm" "${AR_TEST_POSTGRES_URL%%/postgres\?*}/bench_$orm?${AR_TEST_POSTGRES_URL#*\?}"
      done;;
    *) echo "bench-server: unknown engine $engine (sqlite, postgresql)" >&2; exit 2;;
  esac
  for orm in $ORMS; do
    echo "bench-server: warming up $orm on $engine ($WARMUP)"
    BENCH_AUTHORS=$SEED wrk -t "$THREADS" -c 16 -d "$WARMUP" -s Benchmarks/server-mix.lua "http://127.0.0.1:${server_port[$orm]}" >/dev/null &
    pids+=("$!")
    wait "$!"
  done
  for connections in $CONNECTIONS; do
    for orm in $ORMS; do run "$engine" "$connections" "$orm"; done
  done
  for orm in $ORMS; do stop_server "$orm"; done
done

# --- The table --------------------------------------------------------------------------------
python3 - "$work/results" "$RESULTS" <<EOF
import sys, os, platform, datetime
rows = []
for line in open(sys.argv[1]):
    rows.append(dict(field.split("=", 1) for field in line.split()))
def ms(us): return f"{int(us) / 1000:.1f}" if int(us) >= 1000 else f"{int(us) / 1000:.2f}"
def n(x): return f"{float(x):,.0f}"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
orms = "$ORMS".split()
names = {"activerecord": "ours", "fluent": "Fluent"}
out = []
out.append(f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} cores ({cpu}), "
           f"{platform.system()} {platform.release()}; wrk {'$THREADS'} threads, {'$DURATION'} per run after a {'$WARMUP'} warm-up, "
           f"timeout {'$WRK_TIMEOUT'}; seed {'$SEED'} authors × 10 posts; the mixed profile of Benchmarks/server-mix.lua. "
           f"Latencies in ms. p50/p99/max are wrk's, which corrects for coordinated omission (each slow response adds "
           f"synthetic samples spaced at the run's mean interval per connection, so a stall weighs more the faster the server); "
           f"mean is the uncorrected mean, connections ÷ req/s (Little's law). Errors = non-2xx + socket errors; threads and "
           f"RSS are the server process's peaks during the run.")
out.append("")
if len(orms) == 2:
    a, b = orms
    out.append(f"| Engine | Conns | req/s {names[a]} | req/s {names[b]} | {names[a]}/{names[b]} | mean {names[a]} / {names[b]} | p50 {names[a]} / {names[b]} | p99 {names[a]} / {names[b]} | max {names[a]} / {names[b]} | errors {names[a]} / {names[b]} | threads {names[a]} / {names[b]} | RSS MiB {names[a]} / {names[b]} |")
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    mean = lambda r, c: ms(int(int(c) * 1e6 / float(r["rps"])))
    keyed = {(r["engine"], r["connections"], r["orm"]): r for r in rows}
    for engine in "$ENGINES".split():
        for c in "$CONNECTIONS".split():
            x, y = keyed.get((engine, c, a)), keyed.get((engine, c, b))
            if not x or not y: continue
            err = lambda r: f"{int(r['non2xx'])}+{int(r['socket'])}"
            out.append(f"| {'SQLite' if engine == 'sqlite' else 'PostgreSQL'} | {c} | {n(x['rps'])} | {n(y['rps'])} | "
                       f"**{float(x['rps']) / float(y['rps']):.2f}×** | {mean(x, c)} / {mean(y, c)} | {ms(x['p50_us'])} / {ms(y['p50_us'])} | "
                       f"{ms(x['p99_us'])} / {ms(y['p99_us'])} | {ms(x['max_us'])} / {ms(y['max_us'])} | "
                       f"{err(x)} / {err(y)} | {x['threads']} / {y['threads']} | "
                       f"{int(x['rss_kb']) / 1024:.0f} / {int(y['rss_kb']) / 1024:.0f} |")
else:
    out.append("| Engine | Conns | ORM | req/s | p50 | p99 | max | non-2xx | socket errors | threads | RSS MiB |")
    out.append("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        out.append(f"| {r['engine']} | {r['connections']} | {names[r['orm']]} | {n(r['rps'])} | {ms(r['p50_us'])} | {ms(r['p99_us'])} | "
                   f"{ms(r['max_us'])} | {r['non2xx']} | {r['socket']} | {r['threads']} | {int(r['rss_kb']) / 1024:.0f} |")
text = "\n".join(out) + "\n"
print(); print(text)
with open(sys.argv[2], "w") as f:
    f.write("# make bench-server: the issue-33 service under load, this library against Fluent\n\n")
    f.write("Written by scripts/bench-server.sh; Benchmarks/README.md reads it.\n\n")
    f.write(text)
EOF
echo "bench-server: the table is in ${RESULTS#$root/}"
