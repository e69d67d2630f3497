#!/usr/bin/env bash
# Instructions per operation, library against raw sqlite3, counted with callgrind: a figure
# that does not depend on the machine's load, unlike seconds.
#
#     scripts/bench-instructions.sh ARBENCH [ROWS [BENCH_C]]     (make bench-instructions)
#
# Each run of ARBench does one workload (--only, one round) with ARBENCH_COUNT naming one
# side: that side's measured work (and nothing else: not filling the table, not the checks)
# runs inside the function `countedSide`, the only place callgrind collects. Valgrind 3.19
# cannot read the DWARF 5 that Swift 6.3 writes, so it runs a copy with the debug
# information stripped (the symbols stay). ROWS (default 5000) is the row count of the CRUD
# workloads, the members of the relation walks (ROWS / 100 groups of 100) and the number of
# predicate queries (on a table of ROWS rows).
#
# With BENCH_C (Benchmarks/c/bench.c built against the release libactiverecord.so), the C
# API's rows too: one round of bench-c ROWS, callgrind collecting only in the function that
# holds one side's measured loop (raw_insert_rows, library_insert_rows, ...).
#
# SECTIONS (default "sqlite c postgres pooled async") picks which groups of rows run, e.g.
# SECTIONS=postgres for the PostgreSQL client rows alone.
#
# The async rows (issue 35, point 8) count the whole process instead, every thread: an
# awaited find runs on the library's executor threads, outside any function of the calling
# thread. `ARBench async ROWS --engine E --count KIND K` fills a table, warms both paths up,
# then makes K finds of one kind; (run with K - run with 0) / K is one call's cost.
set -euo pipefail
sections=" ${SECTIONS:-sqlite c postgres pooled async} "

binary=${1:?usage: bench-instructions.sh ARBENCH [ROWS [BENCH_C]]}
rows=${2:-5000}
bench_c=${3:+$(realpath "$3")}
command -v valgrind > /dev/null || { echo "bench-instructions: valgrind is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
strip -g -o "$work/ARBench" "$binary"
# bench-c's libactiverecord.so, stripped the same way (its C target's DWARF 5 too), found first
# through LD_LIBRARY_PATH (bench-c's run path is a RUNPATH, which that overrides).
if [[ -n $bench_c ]]; then
  mkdir "$work/lib"
  library=$(ldd "$bench_c" | awk '/libactiverecord/ { print $3 }')
  [[ -f $library ]] || { echo "bench-instructions: $bench_c does not find libactiverecord.so" >&2; exit 1; }
  strip -g -o "$work/lib/$(basename "$library")" "$library"
fi

# count SIDE ARGS...: the instructions SIDE's measured work took in one ARBench run; with
# SIDE c:FUNCTION, those the function FUNCTION took in one round of bench-c ARGS.
count() {
  local side=$1
  shift
  if [[ $side == c:* ]]; then
    (cd "$work" && BENCH_C_ROUNDS=1 LD_LIBRARY_PATH="$work/lib" valgrind --tool=callgrind --callgrind-out-file="$work/out" \
        --toggle-collect="${side#c:}" "$bench_c" "$@" > "$work/log" 2>&1) || {
      echo "bench-instructions: bench-c $* failed (counting ${side#c:}):" >&2
      tail -20 "$work/log" >&2
      exit 1
    }
  else
    (cd "$work" && ARBENCH_COUNT="$side" valgrind --tool=callgrind --callgrind-out-file="$work/out" \
        --toggle-collect='$s7ARBench11countedSideyyAA11CountedWorkCKF' ./ARBench "$@" > "$work/log" 2>&1) || {
      echo "bench-instructions: ARBench $* failed (counting $side):" >&2
      tail -20 "$work/log" >&2
      exit 1
    }
  fi
  local total
  total=$(awk '/^(summary|totals):/ { print $2; exit }' "$work/out")
  [ -n "$total" ] && [ "$total" -gt 0 ] || { echo "bench-instructions: nothing counted for $side in ARBench $*" >&2; exit 1; }
  echo "$total"
}

# count_process ARGS...: every instruction of one ARBench run, all threads (callgrind's totals).
count_process() {
  (cd "$work" && valgrind --tool=callgrind --callgrind-out-file="$work/out" ./ARBench "$@" > "$work/log" 2>&1) || {
    echo "bench-instructions: ARBench $* failed:" >&2
    tail -20 "$work/log" >&2
    exit 1
  }
  awk '/^(summary|totals):/ { print $2; exit }' "$work/out"
}

echo "Instructions per operation (callgrind, release build, $rows rows; raw = sqlite3 C API, statements prepared once;"
echo "PostgreSQL: raw = libpq, statements prepared once, binary parameters and results)"
printf '%-38s %12s %12s %8s %8s  %s\n' workload "raw/op" "library/op" "lib/raw" target result
printf -- '-%.0s' {1..92}; echo
missed=0
# row TITLE OPERATIONS TARGET …: the ratio to three decimals, the verdict strict (1.104 misses 1.1).
# row TITLE OPERATIONS TARGET RAW-SIDE LIBRARY-SIDE ARGS...
row() {
  local title=$1 operations=$2 target=$3 raw_side=$4 library_side=$5
  shift 5
  local raw library
  raw=$(count "$raw_side" "$@")
  library=$(count "$library_side" "$@")
  local line result
  line=$(awk -v r="$raw" -v l="$library" -v n="$operations" -v t="$target" \
    'BEGIN { ratio = l / r; printf "%12.0f %12.0f %8.3f %8s", r / n, l / n, ratio, "<= " t; exit (ratio <= t) ? 0 : 1 }') \
    && result=ok || { result=MISSED; missed=$((missed + 1)); }
  printf '%-38s %s  %s\n' "$title" "$line" "$result"
}

if [[ $sections == *" sqlite "* ]]; then
for workload in insert insertAll fetchAll find updateScore destroy deleteByID; do
  case $workload in
    insert) title="insert (1 tx)"; target=1.15 ;;
    insertAll) title="insertAll (batch)"; target=1.15 ;;
    fetchAll) title="fetch all"; target=1.4 ;;
    find) title="find by id"; target=1.4 ;;
    updateScore) title="update one column (1 tx)"; target=1.25 ;;  # issue 35
    destroy) title="destroy loaded records (1 tx)"; target=1.1 ;;
    deleteByID) title="delete by id (1 tx)"; target=1.1 ;;
  esac
  row "$title" "$rows" "$target" raw library "$rows" --only "$workload" --rounds 1
done
row "lazy relation walk (per member)" "$rows" 1.4 "raw lazy" "library lazy" "$rows" --only relations --rounds 1
row "eager loading (per member)" "$rows" 1.3 "raw eager" "library eager" "$rows" --only relations --rounds 1
row "predicate query (per query)" "$rows" 1.5 "predicate query: raw" "predicate query: library string" \
  "$rows" --only queries --rounds 1 --indexed 1 --predicate "$rows"
fi
if [[ -n $bench_c && $sections == *" c "* ]]; then
  row "C API: insert (1 tx)" "$rows" 1.8 c:raw_insert_rows c:library_insert_rows "$rows"
  row "C API: fetch all" "$rows" 1.8 c:raw_fetch_rows c:library_fetch_rows "$rows"
fi
# PostgreSQL (AR_BENCH_POSTGRES or AR_TEST_POSTGRES names a server; `make bench-instructions`
# starts one): the client side's instructions only (the server is another process, not
# counted), binary raw libpq against the library, on PG_ROWS rows (default 1000; fetch all: the
# section's 5 fetches per round; age query: PG_ROWS / 10 queries of PG_ROWS / 90 rows; the
# relation walks: PG_ROWS / 100 groups of 100 members, per member). Issue 35's targets: 1.1 on
# find and delete by id, 1.2 on every other CRUD, query and relation row.
postgres_server=${AR_BENCH_POSTGRES:-${AR_TEST_POSTGRES:-}}
if [ -n "$postgres_server" ]; then
  pg_rows=${PG_ROWS:-1000}
  [[ $sections == *" postgres "* ]] && for workload in insert insertAutocommit insertAll fetchAll find ageQuery \
      updateScore destroy deleteByID lazy eager; do
    operations=$pg_rows
    target=1.2
    case $workload in
      fetchAll) operations=$((pg_rows * 5)) ;;
      ageQuery) operations=$((pg_rows / 10 > 0 ? pg_rows / 10 : 1)) ;;
      lazy | eager) operations=$(((pg_rows / 100 > 0 ? pg_rows / 100 : 1) * 100)) ;;
      find | deleteByID) target=1.1 ;;
    esac
    row "PostgreSQL client: $workload" "$operations" "$target" raw library postgres "$pg_rows" --only "$workload" --rounds 1
  done
  # The same workloads with transactionPooling: true (as behind pgbouncer in transaction mode),
  # on the same server straight: every statement unnamed, results binary after its first run.
  [[ $sections == *" pooled "* ]] && for workload in insert insertAll fetchAll find updateScore destroy deleteByID; do
    operations=$pg_rows
    [ "$workload" = fetchAll ] && operations=$((pg_rows * 5))
    row "PG transaction pooling: $workload" "$operations" 1.3 raw pooled postgres "$pg_rows" --only "$workload" --rounds 1
  done
fi
# The async path: instructions per call of a synchronous find (the raw/op column) and of an
# awaited one (library/op), all threads, on a table of ASYNC_ROWS rows (default 1000), ASYNC_CALLS
# calls (default 2000); the difference instead of a ratio. The target (<= 2 µs per call) is
# in wall-clock time: `ARBench async` prints it with its verdict.
if [[ $sections == *" async "* ]]; then
  async_rows=${ASYNC_ROWS:-1000}
  calls=${ASYNC_CALLS:-2000}
  engines=sqlite
  # postgres: Database.awaitedFinds at its default, .automatic; postgres-calling-thread: set to
  # .onCallingThread; postgres-executor: .onExecutor (every find through the database's thread).
  [ -n "$postgres_server" ] && engines="sqlite postgres postgres-calling-thread postgres-executor"
  for engine in $engines; do
    base=$(count_process async "$async_rows" --engine "$engine" --count sync 0)
    synchronous=$(count_process async "$async_rows" --engine "$engine" --count sync "$calls")
    awaited=$(count_process async "$async_rows" --engine "$engine" --count async "$calls")
    label="async find overhead, $engine"
    [ "$engine" = postgres-calling-thread ] && label="async find overhead, pg caller thread"
    [ "$engine" = postgres-executor ] && label="async find overhead, pg executor"
    printf '%-38s %s  %s\n' "$label" \
      "$(awk -v b="$base" -v s="$synchronous" -v a="$awaited" -v n="$calls" \
        'BEGIN { printf "%12.0f %12.0f %8s %8s", (s - b) / n, (a - b) / n, sprintf("%+.0f", (a - s) / n), "-" }')" \
      "per call: sync, awaited, awaited - sync (target in µs: ARBench async)"
  done
fi
echo
echo "$missed workload(s) over their target (instructions, lib/raw)"
