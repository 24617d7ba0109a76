# bench/lib.sh: shared set-up of the Kafka benchmarks (sourced, not run).
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   bench_setup NAME     sets root, build (TB_BENCH_BUILD_DIR or build-bench-NAME), work (a temp
#                        folder removed at exit) and brokers; uses TRIBUTARY_TEST_KAFKA when set,
#                        otherwise starts scripts/testenv and stops it at exit.
bench_setup() {
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  build="${TB_BENCH_BUILD_DIR:-$root/build-bench-$1}"
  work="$(mktemp -d "${TMPDIR:-/tmp}/$1-bench.XXXXXX")"
  bench_started_env=""
  trap bench_cleanup EXIT
  if [[ -z "${TRIBUTARY_TEST_KAFKA:-}" ]]; then
    "$root/scripts/testenv" up >"$work/env.sh"
    # shellcheck disable=SC1091
    . "$work/env.sh"
    bench_started_env="$TRIBUTARY_TEST_DIR"
  fi
  brokers="$TRIBUTARY_TEST_KAFKA"
}

bench_cleanup() {
  rm -rf "$work"
  if [[ -n "$bench_started_env" ]]; then
    "$root/scripts/testenv" down "$bench_started_env" >/dev/null 2>&1 || true
  fi
}
