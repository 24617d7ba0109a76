#!/usr/bin/env bash
# bench/snapshot_bench.sh: initial snapshot benchmark.
#
#   bench/snapshot_bench.sh [BUILD_DIR] [RUNS]
#   bench/snapshot_bench.sh --run BUILD [BASELINE_BUILD] [RUNS] [ROWS] [KILL_ROWS]
#       `tributary run` end to end by snapshot.initial.method, beside a baseline build, and with
#       a kill -9 halfway (bench/snapshot_run_bench.sh, which says what it measures)
#
# BUILD_DIR: a non-sanitizer build with bench_snapshot built (default build-rel:
#   cmake -S . -B build-rel -DTB_SANITIZE=OFF -DTB_TESTS=OFF && cmake --build build-rel --target bench_snapshot)
# Uses the testenv in the environment (TRIBUTARY_TEST_*), or starts one and stops it at the end.
#
# Reports (medians of RUNS runs, default 3):
#  - snapshot of a 1M-row, 5-column table into Kafka (bench_snapshot --sink kafka): rows/s, peak RSS
#  - the same into the stdout sink writing to /dev/null (--sink null)
#  - the snapshotter alone: rows read into events, no sink (--sink none)
#  - reference: mysqldump --single-transaction of the same table to /dev/null
#  - memory: peak RSS of a 1M-row and a 5M-row snapshot (sink null) and their difference (target < 10%)
# Targets: >= 200k rows/s, RSS < 64 MB.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ "${1:-}" == --run ]]; then shift; exec "$here/snapshot_run_bench.sh" "$@"; fi
root="$(cd "$here/.." && pwd)"
# shellcheck source=bench/results.sh
. "$here/results.sh"
build="${1:-$root/build-rel}"
runs="${2:-3}"
bin="$build/bench/bench_snapshot"
[[ -x "$bin" ]] || { echo "snapshot_bench: $bin not built" >&2; exit 2; }

started=0
if [[ -z "${TRIBUTARY_TEST_MYSQL_PORT:-}" ]]; then
  eval "$("$root/scripts/testenv" up)"
  started=1
fi
cleanup() { if [[ $started == 1 ]]; then "$root/scripts/testenv" down >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT

my() { mariadb -h "$TRIBUTARY_TEST_MYSQL_HOST" -P "$TRIBUTARY_TEST_MYSQL_PORT" -u "$TRIBUTARY_TEST_MYSQL_USER" \
         -p"$TRIBUTARY_TEST_MYSQL_PASSWORD" "$@"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

make_table() { # name rows
  my -e "CREATE DATABASE IF NOT EXISTS bench; DROP TABLE IF EXISTS bench.$1;
         CREATE TABLE bench.$1 (id BIGINT NOT NULL PRIMARY KEY, a INT NOT NULL, b VARCHAR(32) NOT NULL,
                                c DOUBLE NOT NULL, d DATETIME NOT NULL) ENGINE=InnoDB;
         INSERT INTO bench.$1 SELECT seq, seq % 100000, MD5(seq), seq / 7, '2024-01-01' + INTERVAL seq SECOND
           FROM bench.seq_1_to_$2;
         ANALYZE TABLE bench.$1" >/dev/null
}

echo "snapshot_bench: creating bench.t1m (1M rows, 5 columns)" >&2
make_table t1m 1000000

run_sink() { # sink -> lines
  for ((i = 0; i < runs; i++)); do "$bin" --table bench.t1m --sink "$1"; done
}
report() { # label lines
  local rps rss
  rps=$(echo "$2" | field rows_per_s | median)
  rss=$(echo "$2" | field peak_rss_mb | median)
  printf '%-34s median %8.0f rows/s   peak RSS %6.1f MB   (%d runs)\n' "$1" "$rps" "$rss" "$runs"
}

kafka_lines=$(run_sink kafka)
null_lines=$(run_sink null)
none_lines=$(run_sink none)
dump_secs=$(for ((i = 0; i < runs; i++)); do
  s=$(date +%s.%N)
  mysqldump --no-defaults -h "$TRIBUTARY_TEST_MYSQL_HOST" -P "$TRIBUTARY_TEST_MYSQL_PORT" \
    -u "$TRIBUTARY_TEST_MYSQL_USER" -p"$TRIBUTARY_TEST_MYSQL_PASSWORD" --single-transaction bench t1m >/dev/null
  e=$(date +%s.%N)
  awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f\n", b - a }'
done | median)

echo "snapshot_bench: creating bench.t5m (5M rows) for the memory comparison" >&2
make_table t5m 5000000
rss1=$("$bin" --table bench.t1m --sink null | field peak_rss_mb)
rss5=$("$bin" --table bench.t5m --sink null | field peak_rss_mb)
my -e "DROP TABLE bench.t5m"

{
echo "== snapshot of a 1M-row 5-column table (MariaDB $(my -N -e 'SELECT VERSION()'), $(nproc) cores)"
report "into Kafka (ksink, acks=all)" "$kafka_lines"
report "into stdout sink -> /dev/null" "$null_lines"
report "snapshotter alone (no sink)" "$none_lines"
awk -v s="$dump_secs" 'BEGIN { printf "%-34s median %8.0f rows/s   (%.2f s)\n", "mysqldump --single-transaction", 1000000 / s, s }'
awk -v a="$rss1" -v b="$rss5" 'BEGIN { d = (b - a) / a * 100; if (d < 0) d = -d;
  printf "memory: peak RSS 1M rows %.1f MB, 5M rows %.1f MB, difference %.1f%% (%s)\n", a, b, d, d < 10 ? "< 10%: ok" : "OVER 10%" }'
} | bench_summary snapshot_bench
