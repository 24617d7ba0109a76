# bench/lib.sh: shared set-up and helpers of the benchmarks that use the test servers (sourced,
# not run).
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   bench_setup NAME     sets root, build (TB_BENCH_BUILD_DIR or build-bench-NAME), work (a temp
#                        folder) and brokers; uses the testenv in the environment (TRIBUTARY_TEST_*,
#                        MariaDB and Kafka) when there is one, otherwise starts scripts/testenv and
#                        stops it at exit. At exit it first calls the script's bench_stop function
#                        when there is one, then stops the `tributary run` of run_pid if one is
#                        left (stop_run), then removes work,
#                        unless bench_keep_work=1 and the script did not set bench_ok=1 (then it
#                        keeps work, with the logs of the failed run, and says where).
#   bench_summary NAME   (bench/results.sh) the closing figures on stdin to stdout and, as a row,
#                        to the results table in bench/RESULTS.md
#   bench_build TARGET...  configures build as a Release tree without tests and builds TARGETs
#   bench_build_rev REV [DIR]  builds app/tributary of git revision REV of this repository: git
#                        archive into DIR-src, a Release tree in DIR (default
#                        build-bench-<script>-<short rev>); sets base_rev and base_build
#   mysql_q SQL          one statement on the test MariaDB, tab-separated rows without a header
#   now_ms               wall clock in milliseconds
#   median               median of the numbers on stdin, one a line (mean of the middle two)
#   status_gtid FILE     the committed GTID in a status file ("" while there is none)
#   gtid_canon           a MariaDB GTID list on stdin, its items sorted by domain (the server
#                        lists several domains in an order of its own)
#   bench_source_props NAME SERVER_ID  the properties every benchmark connector starts with: its
#                        name, the test MariaDB as its source (replica SERVER_ID), the tables of
#                        database NAME, topic prefix NAME, the test Kafka
#   wait_caught_up FILE SECONDS  waits until the committed GTID in status file FILE equals the
#                        server's @@gtid_binlog_pos; fails after SECONDS or when run_pid is gone
#   bench_tags [REV [DIR]]  tags=(this) and bin[this] (this tree's build); with REV also the
#                        baseline: bench_build_rev REV DIR, tags=(base this), bin[base]
#   bench_rounds RUNS FUNC  RUNS rounds; in each, FUNC TAG BINARY I for every TAG of the array
#                        tags, in order in odd rounds (baseline first) and in reverse in even
#                        ones, so that neither build always runs second, after the other's load
#                        on the broker and the source; BINARY being ${bin[TAG]}; creates
#                        $work/results.TAG for FUNC to append a line of figures to
#   col FILE N           median of column N of FILE
#   bench_ratios W "N:label"...  a line "label: this / base = ratio" per column N of
#                        $work/results.this and $work/results.base (medians), labels W wide
#   stop_run             SIGTERM to the `tributary run` of run_pid (or to its child when run_pid is
#                        /usr/bin/time, which does not pass signals on), waits for it, clears run_pid
# shellcheck source=bench/results.sh
. "$(dirname "${BASH_SOURCE[0]}")/results.sh"

bench_setup() {
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  bench_name=$1
  build="${TB_BENCH_BUILD_DIR:-$root/build-bench-$1}"
  work="$(mktemp -d "${TMPDIR:-/tmp}/$1-bench.XXXXXX")"
  bench_started_env=""
  run_pid=""
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
  set +e
  if declare -F bench_stop >/dev/null; then bench_stop; fi
  if [[ -n "${run_pid:-}" ]]; then stop_run 2>/dev/null; fi
  if [[ "${bench_keep_work:-}" == 1 && "${bench_ok:-}" != 1 ]]; then
    echo "kept $work (logs)" >&2
  else
    rm -rf "$work"
  fi
  if [[ -n "$bench_started_env" ]]; then
    "$root/scripts/testenv" down "$bench_started_env" >/dev/null 2>&1 || true
  fi
}

bench_build() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTB_TESTS=OFF >/dev/null
  cmake --build "$build" -j2 --target "$@" >/dev/null
}

bench_build_rev() {
  base_rev=$(git -C "$root" rev-parse --short "$1^{commit}")
  base_build="${2:-$root/build-bench-$bench_name-$base_rev}"
  local src="$base_build-src" # a fixed place: the build tree's cache names its source folder
  rm -rf "$src"
  mkdir -p "$src"
  git -C "$root" archive "$base_rev" | tar -x -C "$src"
  cmake -S "$src" -B "$base_build" -DCMAKE_BUILD_TYPE=Release -DTB_TESTS=OFF >/dev/null
  cmake --build "$base_build" -j2 --target tributary >/dev/null
  echo "baseline: $base_rev ($(git -C "$root" log -1 --format=%s "$base_rev" | cut -c1-80))" >&2
}

mysql_q() {
  mariadb -N -B -h "$TRIBUTARY_TEST_MYSQL_HOST" -P "$TRIBUTARY_TEST_MYSQL_PORT" -u "$TRIBUTARY_TEST_MYSQL_USER" \
    -p"$TRIBUTARY_TEST_MYSQL_PASSWORD" -e "$1"
}

now_ms() { date +%s%3N; }

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

status_gtid() {
  python3 -c 'import json,sys
try:
    p = json.load(open(sys.argv[1])).get("position") or {}
    print(p.get("gtid") or "")
except Exception:
    print("")' "$1"
}

gtid_canon() { tr ',' '\n' | sed 's/^ *//' | { grep . || true; } | sort -t- -k1,1n | paste -sd, -; }

bench_source_props() {
  cat <<PROPS
name=$1
source.type=mysql
source.host=$TRIBUTARY_TEST_MYSQL_HOST
source.port=$TRIBUTARY_TEST_MYSQL_PORT
source.user=$TRIBUTARY_TEST_MYSQL_USER
source.password=$TRIBUTARY_TEST_MYSQL_PASSWORD
source.server.id=$2
tables.include=^$1[.]
topic.prefix=$1
kafka.bootstrap.servers=$TRIBUTARY_TEST_KAFKA
PROPS
}

wait_caught_up() {
  local want deadline=$((SECONDS + $2))
  want=$(mysql_q "SELECT @@global.gtid_binlog_pos" | gtid_canon)
  until [ "$(status_gtid "$1" | gtid_canon)" = "$want" ]; do
    if [ $SECONDS -ge $deadline ]; then echo "not caught up: $(status_gtid "$1") vs $want" >&2; return 1; fi
    if ! kill -0 "$run_pid" 2>/dev/null; then echo "tributary run stopped early" >&2; return 1; fi
    sleep 0.05
  done
}

bench_tags() {
  tags=(this)
  declare -gA bin=([this]="$build/app/tributary")
  if [[ -n "${1:-}" ]]; then
    bench_build_rev "$1" "${2:-}"
    tags=(base this)
    bin[base]="$base_build/app/tributary"
  fi
}

bench_rounds() {
  local i k tag
  for i in $(seq 1 "$1"); do
    for k in "${!tags[@]}"; do
      tag=${tags[k]}
      ((i % 2 == 0)) && tag=${tags[${#tags[@]} - 1 - k]}
      : >> "$work/results.$tag"
      "$2" "$tag" "${bin[$tag]}" "$i"
    done
  done
}

col() { awk -v n="$2" '{ print $n }' "$1" | median; }

bench_ratios() {
  local w=$1 spec n
  shift
  for spec in "$@"; do
    n=${spec%%:*}
    awk -v a="$(col "$work/results.this" "$n")" -v b="$(col "$work/results.base" "$n")" -v w="${spec#*:}" -v ww="$w" \
      'BEGIN { printf "%-*s %s / %s = %.3f\n", ww, w ":", a, b, (b > 0 ? a / b : 0) }'
  done
}

stop_run() {
  local child
  child=$(pgrep -P "$run_pid" || true)
  kill -TERM "${child:-$run_pid}"
  wait "$run_pid" || { echo "tributary run failed" >&2; return 1; }
  run_pid=
}
