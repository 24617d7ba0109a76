#!/usr/bin/env bash
# bench/sqlite_bound_bench.sh: the bounded WAL under load: bench/sqlite_steady_bench.sh with the paced
# writer (100 tx/s) and then the unpaced writer (RATE 0), each with a CPU hog keeping every core busy,
# without and with `tributary run` attached (default settings: source.sqlite.wal.max.bytes 16 MiB).
# Prints each run and the medians: largest WAL, writer p50/p99 commit latency, errors.
# Goal: the WAL at most 16 MiB in every run with the connector; its writer p99 at most 2x the one without.
#
#   bench/sqlite_bound_bench.sh [SECONDS=20] [RUNS=3]
set -euo pipefail
secs="${1:-20}" runs="${2:-3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
echo "== paced writer (100 tx/s), CPU hog"
TB_BENCH_HOG=1 "$here/sqlite_steady_bench.sh" "$secs" "$runs" 100
echo "== unpaced writer, CPU hog"
TB_BENCH_HOG=1 "$here/sqlite_steady_bench.sh" "$secs" "$runs" 0
