#!/usr/bin/env bash
# bench/cluster_bench.sh: the 1M-row catch-up and the commit-to-Kafka latency of bench/e2e_bench.sh
# on one broker and on a three-broker cluster, side by side. Not a test.
#
#   bench/cluster_bench.sh [RUNS]        (default 3; medians of RUNS runs on each environment)
#
#   1. scripts/testenv up: one KRaft broker; bench/e2e_bench.sh RUNS, data topics replication
#      factor 1 (the baseline).
#   2. scripts/testenv up --brokers 3: three KRaft nodes on 127.0.0.1; bench/e2e_bench.sh RUNS
#      with the data topics at replication factor 3 and min.insync.replicas=2 (TB_E2E_RF=3); the
#      connector's own topics take the cluster's default (3). The sink's producer always writes
#      with acks=all and idempotence (DESIGN 6), on one broker as on three.
# Each environment is started for its part and stopped after it. Prints both summaries and the
# ratios of the medians (cluster / one broker). Everything runs on this machine: the brokers
# share its cores with MariaDB and the connector, so the cluster's figures include the cost of
# three JVMs on two cores.
set -euo pipefail
runs=${1:-3}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/results.sh
. "$root/bench/results.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/cluster-bench.XXXXXX")"
env_dir=""
cleanup() {
  [[ -n "$env_dir" ]] && "$root/scripts/testenv" down "$env_dir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# run_on NAME TESTENV-ARGS -- E2E-ENV...: e2e_bench.sh on a fresh testenv, its summary into work/NAME
run_on() {
  local name=$1; shift
  local up=()
  while [[ $1 != -- ]]; do up+=("$1"); shift; done
  shift
  (
    unset TRIBUTARY_TEST_DIR TRIBUTARY_TEST_KAFKA TRIBUTARY_TEST_KAFKA_BROKERS
    "$root/scripts/testenv" up "${up[@]}" >"$work/$name.env"
    # shellcheck disable=SC1090
    . "$work/$name.env"
    echo "$TRIBUTARY_TEST_DIR" >"$work/$name.dir"
    env "$@" "$root/bench/e2e_bench.sh" "$runs" >"$work/$name.out"
    "$root/scripts/testenv" down "$TRIBUTARY_TEST_DIR" >/dev/null
    rm -f "$work/$name.dir"
  ) || { [[ -f "$work/$name.dir" ]] && env_dir="$(cat "$work/$name.dir")"; echo "cluster_bench: the $name part failed" >&2; exit 1; }
  cat "$work/$name.out"
}

run_on one -- TB_E2E_RF=1
run_on three --brokers 3 -- TB_E2E_RF=3

fig() { awk -v w="$2:" 'index($0, w) == 1 { sub(/^[^:]*: */, ""); print $1 }' "$work/$1.out"; }
{
echo "== three brokers (RF 3, acks=all) / one broker (RF 1), ratio of the medians"
for what in "catch-up rows/s (start to last append)" "catch-up rows/s (first to last append)" \
            "commit-to-Kafka latency p50 ms" "commit-to-Kafka latency p99 ms" "peak RSS MB"; do
  a=$(fig one "$what"); b=$(fig three "$what")
  awk -v w="$what" -v a="$a" -v b="$b" 'BEGIN { printf "%-42s %10s %10s  x%.2f\n", w ":", a, b, (a > 0 ? b / a : 0) }'
done
} | bench_summary cluster_bench
