#!/usr/bin/env bash
# make bench-peers (issue 35, point 3): the same PostgreSQL work through raw libpq (statements
# prepared once, binary parameters and results), this library, raw PostgresNIO and Fluent
# (fluent-postgres-driver), on one throwaway server, in one run. Per workload: client-process
# instructions per operation, all threads (each side's executable under callgrind, with the
# operations and without, the difference), and wall-clock medians; a verdict per row that the
# library costs less than PostgresNIO and Fluent on both. Exits non-zero when it does not.
#
#     scripts/bench-peers.sh [PeerBench options]      (the Makefile's bench-peers runs this)
#
# Builds Benchmarks/Peers in release (its own package and .build: the first build of
# postgres-nio, fluent-kit, swift-nio-ssl and swift-crypto takes several minutes), starts a
# throwaway server (scripts/with-postgres.sh), prints the table and writes it to
# Benchmarks/peers-results.md (RESULTS=path to write it elsewhere). Settings (environment):
# PEER_ROWS=1000, PEER_GROUPS=100, PEER_ROUNDS=5, PEER_OPS_DIVISOR=1 (PostgresNIO and Fluent counted on
# ops/divisor operations), SKIP_BUILD=1 to use the built binary.
# -Xcc -gdwarf-4: the C targets' debug information in a form valgrind 3.19 reads (as SWIFTFLAGS).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
SWIFT=${SWIFT:-swift}
ROWS=${PEER_ROWS:-1000}
GROUPS_COUNT=${PEER_GROUPS:-100}
ROUNDS=${PEER_ROUNDS:-5}
PEER_OPS_DIVISOR=${PEER_OPS_DIVISOR:-1}
RESULTS=${RESULTS:-$root/Benchmarks/peers-results.md}

command -v valgrind >/dev/null || { echo "bench-peers: valgrind is missing (make deps installs it)" >&2; exit 1; }
if [ -z "${SKIP_BUILD:-}" ]; then
  (cd Benchmarks/Peers && "$SWIFT" build -c release --product PeerBench -Xcc -gdwarf-4)
fi
bin=$(cd Benchmarks/Peers && "$SWIFT" build -c release -Xcc -gdwarf-4 --show-bin-path)/PeerBench

exec scripts/with-postgres.sh "$bin" --rows "$ROWS" --groups "$GROUPS_COUNT" --rounds "$ROUNDS" \
  --peer-ops-divisor "$PEER_OPS_DIVISOR" --markdown "$RESULTS" "$@"
