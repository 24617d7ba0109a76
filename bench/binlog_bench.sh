#!/usr/bin/env bash
# bench/binlog_bench.sh: binlog decode throughput of tributary vs mariadb-binlog -vv.
#
#   bench/binlog_bench.sh BUILD_DIR [BINLOG_FILE] [RUNS]
#
# Without BINLOG_FILE it starts a throwaway MariaDB (scripts/testenv up), writes
# 1,000,000 rows (1000-row INSERTs into a 6-column table: INT PK, BIGINT,
# VARCHAR(32), DECIMAL(10,2), DATETIME, DOUBLE), and uses the binlog file it wrote;
# then stops it (scripts/testenv down). Each decoder runs RUNS times (default 5) on
# the same file; the median wall time and the median CPU time (user + sys; steadier
# on a loaded machine) give rows/s; peak RSS from getrusage / GNU time.
# Build BUILD_DIR without sanitizers (-DCMAKE_BUILD_TYPE=Release) for figures.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/results.sh
. "$here/bench/results.sh"
build="${1:?usage: binlog_bench.sh BUILD_DIR [BINLOG_FILE] [RUNS]}"
file="${2:-}"
runs="${3:-5}"
bench="$build/bench/bench_binlog"
[ -x "$bench" ] || { echo "build $bench first (cmake --build $build --target bench_binlog)" >&2; exit 2; }
started=0
if [ -z "$file" ]; then
  eval "$("$here/scripts/testenv" up)"
  started=1
  trap '"$here/scripts/testenv" down >/dev/null 2>&1 || true' EXIT
  M=(mariadb --no-defaults -h "$TRIBUTARY_TEST_MYSQL_HOST" -P "$TRIBUTARY_TEST_MYSQL_PORT"
     -u "$TRIBUTARY_TEST_MYSQL_USER" "-p$TRIBUTARY_TEST_MYSQL_PASSWORD")
  "${M[@]}" -e "FLUSH BINARY LOGS; DROP DATABASE IF EXISTS tbbench; CREATE DATABASE tbbench;
    CREATE TABLE tbbench.t (id INT PRIMARY KEY, a BIGINT, b VARCHAR(32), c DECIMAL(10,2), d DATETIME, e DOUBLE)"
  python3 - <<'PY' | "${M[@]}"
for k in range(1000):
    vals = ",".join("(%d,%d,'name-%d',%d.%02d,'2024-01-02 03:04:05',%d.5)" % (i, i * 7, i, i % 100000, i % 100, i)
                    for i in range(k * 1000, (k + 1) * 1000))
    print("INSERT INTO tbbench.t VALUES %s;" % vals)
PY
  base="$("${M[@]}" -N -e "SELECT @@log_bin_basename")"
  cur="$("${M[@]}" -N -e "SHOW MASTER STATUS" | cut -f1)"
  "${M[@]}" -e "FLUSH BINARY LOGS"
  file="$(dirname "$base")/$cur"
fi
echo "file: $file ($(stat -c %s "$file") bytes)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run_ours() { # $1 = extra flag
  for _ in $(seq "$runs"); do "$bench" "$file" $1; done
}
ours=$(run_ours "")
ours_json=$(run_ours --json)
rows=$(echo "$ours" | head -1 | sed 's/.*rows=\([0-9]*\).*/\1/')
t_ours=$(echo "$ours" | sed 's/.*seconds=\([0-9.]*\).*/\1/' | median)
t_json=$(echo "$ours_json" | sed 's/.*seconds=\([0-9.]*\).*/\1/' | median)
c_ours=$(echo "$ours" | sed 's/.*cpu=\([0-9.]*\).*/\1/' | median)
c_json=$(echo "$ours_json" | sed 's/.*cpu=\([0-9.]*\).*/\1/' | median)
rss_ours=$(echo "$ours" | sed 's/.*maxrss_kb=\([0-9]*\).*/\1/' | sort -n | tail -1)
rss_json=$(echo "$ours_json" | sed 's/.*maxrss_kb=\([0-9]*\).*/\1/' | sort -n | tail -1)
ref_times=(); ref_cpu=(); ref_rss=0
for _ in $(seq "$runs"); do
  out=$( { /usr/bin/env time -f "%e %U %S %M" mariadb-binlog --no-defaults -vv --base64-output=decode-rows "$file" >/dev/null; } 2>&1 | tail -1)
  read -r e u s r <<<"$out"
  ref_times+=("$e"); ref_cpu+=("$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')")
  [ "$r" -gt "$ref_rss" ] && ref_rss=$r
done
t_ref=$(printf '%s\n' "${ref_times[@]}" | median)
c_ref=$(printf '%s\n' "${ref_cpu[@]}" | median)
{
awk -v n="$rows" -v a="$t_ours" -v j="$t_json" -v r="$t_ref" -v ca="$c_ours" -v cj="$c_json" -v cr="$c_ref" \
    -v ra="$rss_ours" -v rj="$rss_json" -v rr="$ref_rss" 'BEGIN {
  printf "rows: %d (medians of the runs)\n", n
  printf "%-22s %8s %12s %8s %12s %12s\n", "", "wall s", "rows/s", "cpu s", "rows/cpu-s", "peak RSS KB"
  printf "%-22s %8.3f %12.0f %8.3f %12.0f %12d\n", "tributary decode only", a, n / a, ca, n / ca, ra
  printf "%-22s %8.3f %12.0f %8.3f %12.0f %12d\n", "tributary decode+JSON", j, n / j, cj, n / cj, rj
  printf "%-22s %8.3f %12.0f %8.3f %12.0f %12d\n", "mariadb-binlog -vv", r, n / r, cr, n / cr, rr
  printf "speedup (wall) decode only: %.1fx, with JSON: %.1fx; (cpu) %.1fx, %.1fx\n", r / a, r / j, cr / ca, cr / cj
}'
} | bench_summary binlog_bench
