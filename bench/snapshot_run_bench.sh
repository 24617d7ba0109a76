#!/usr/bin/env bash
# bench/snapshot_run_bench.sh: the initial snapshot of `tributary run` into Kafka, end to end,
# by method, beside a baseline build, and with a kill -9 halfway (also `snapshot_bench.sh --run`).
#
#   bench/snapshot_run_bench.sh BUILD [BASELINE_BUILD] [RUNS] [ROWS] [KILL_ROWS]
#
# BUILD, BASELINE_BUILD: Release trees with app/tributary built (BASELINE_BUILD: e.g. main built
#   beside it; "-" or absent: no baseline). RUNS (default 3) rounds; each round runs, one after
#   the other (interleaved, so load changes hit every variant alike):
#     base        BASELINE_BUILD, snapshot.initial.method unset (its consistent snapshot)
#     consistent  BUILD, snapshot.initial.method=consistent
#     chunked     BUILD, snapshot.initial.method=chunked
#     chunked2t   BUILD, chunked with snapshot.threads=2
#     kill9       BUILD, chunked, SIGKILL once the status file counts KILL_ROWS snapshot rows
#                 (default ROWS/2), then started again until the snapshot is done
# SNAPRUN_VARIANTS (default "base consistent chunked chunked2t kill9"): the variants to run.
# SNAPRUN_BASE_METHOD, SNAPRUN_BASE_THREADS: snapshot.initial.method and snapshot.threads of the
#   base runs (default unset: the baseline's default), e.g. chunked and 2 to compare the chunked
#   snapshot with the baseline's.
# SNAPRUN_PROPS: more key=value settings (blank-separated) for every run of BUILD and the baseline,
#   e.g. "snapshot.chunk.size=1000".
# ROWS (default 1000000): rows of bench.snaprun_<ROWS> (the 5-column table of snapshot_bench.sh).
# Each run is a new connector (own name, topic prefix and offsets file) with sink=kafka and
# offsets.storage=file, from its start until its status file says "snapshot":{"state":"done"
# (every row sent and each table's reconcile step done) and its offsets file holds a position,
# polled every 50 ms; then it is stopped (SIGTERM: every message acknowledged first) and its
# topic read (bench/e2e_load size): it must hold ROWS messages, and the time of a run is from its
# start to the timestamp of the topic's last message (set when it was produced), so neither the
# status file's cadence nor the polling counts.
# Prints per variant the median time, rows/s, peak RSS and CPU (user + system, /usr/bin/time)
# and their ratios to base; for kill9 the rows the first run had read at the
# kill (its status file, rewritten about once a second: a lower bound), the rows the resumed run
# read, the rows its log says were saved before the kill, and rows read twice = first + second
# - ROWS. The load average is printed before and after.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
newbin="$(cd "${1:?usage: snapshot_run_bench.sh BUILD [BASELINE_BUILD] [RUNS] [ROWS] [KILL_ROWS]}" && pwd)/app/tributary"
basebin=""
if [[ -n "${2:-}" && "${2:-}" != "-" ]]; then basebin="$(cd "$2" && pwd)/app/tributary"; fi
runs="${3:-3}"
rows="${4:-1000000}"
killrows="${5:-$((rows / 2))}"
TB_BENCH_BUILD_DIR="${1}" bench_setup snaprun
[[ -x "$newbin" ]] || { echo "snapshot_run_bench: $newbin not built" >&2; exit 2; }
cmake --build "$1" -j2 --target e2e_load >/dev/null
load="$(cd "$1" && pwd)/bench/e2e_load"
[[ -z "$basebin" || -x "$basebin" ]] || { echo "snapshot_run_bench: $basebin not built" >&2; exit 2; }
table="snaprun_$rows"

my() { mariadb -h "$TRIBUTARY_TEST_MYSQL_HOST" -P "$TRIBUTARY_TEST_MYSQL_PORT" -u "$TRIBUTARY_TEST_MYSQL_USER" \
         -p"$TRIBUTARY_TEST_MYSQL_PASSWORD" "$@"; }
if [[ "$(my -N -e "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='bench' AND TABLE_NAME='$table'")" != 1 ]]; then
  echo "snapshot_run_bench: creating bench.$table ($rows rows, 5 columns)" >&2
  my -e "CREATE DATABASE IF NOT EXISTS bench;
         CREATE TABLE bench.$table (id BIGINT NOT NULL PRIMARY KEY, a INT NOT NULL, b VARCHAR(32) NOT NULL,
                                   c DOUBLE NOT NULL, d DATETIME NOT NULL) ENGINE=InnoDB;
         INSERT INTO bench.$table SELECT seq, seq % 100000, MD5(seq), seq / 7, '2024-01-01' + INTERVAL seq SECOND
           FROM bench.seq_1_to_$rows;
         ANALYZE TABLE bench.$table" >/dev/null
fi

config() { # method tag [threads] -> the folder of a new connector (run.properties)
  local name="snaprun$$$2" d="$work/$2"
  mkdir -p "$d"
  {
    echo "name=$name"
    echo "source.type=mysql"
    echo "source.host=$TRIBUTARY_TEST_MYSQL_HOST"
    echo "source.port=$TRIBUTARY_TEST_MYSQL_PORT"
    echo "source.user=$TRIBUTARY_TEST_MYSQL_USER"
    echo "source.password=$TRIBUTARY_TEST_MYSQL_PASSWORD"
    echo "tables.include=^bench[.]$table\$"
    echo "topic.prefix=$name"
    echo "kafka.bootstrap.servers=$brokers"
    echo "offsets.storage=file"
    echo "offsets.file=$d/offsets"
    echo "status.file=$d/status.json"
    echo "snapshot.mode=initial"
    echo "log.level=info"
    if [[ -n "$1" ]]; then echo "snapshot.initial.method=$1"; fi
    if [[ -n "${3:-}" ]]; then echo "snapshot.threads=$3"; fi
    if [[ -n "${SNAPRUN_PROPS:-}" ]]; then printf '%s\n' $SNAPRUN_PROPS; fi
  } >"$d/run.properties"
  echo "$d"
}
snap_rows() { sed -n 's/.*"snapshot":{"state":"[a-z]*","rows":\([0-9]*\).*/\1/p' "$1/status.json" 2>/dev/null || true; }
# done: the status file says so and a position is stored (offsets.storage=file: written once every
# message before it is acknowledged by Kafka), so every row is in the topic
snap_done() { grep -q '"snapshot":{"state":"done"' "$1/status.json" 2>/dev/null && [[ -s "$1/offsets" ]]; }

# SIGTERM to the run of run_pid (tributary itself: started here, not through /usr/bin/time)
stop_mine() {
  kill -TERM "$run_pid" 2>/dev/null || true
  wait "$run_pid" || { echo "snapshot_run_bench: tributary run failed" >&2; return 1; }
  run_pid=""
}

# one run until the snapshot is done, under /usr/bin/time; prints "seconds peak_rss_kb cpu_seconds"
# (the peak RSS and CPU of the whole run, stopped by SIGTERM right after it is done)
one() { # bin dir
  local t0 t1 tpid rss u s
  t0=$(now_ms)
  /usr/bin/time -f "%M %U %S" -o "$2/time" "$1" run --config "$2/run.properties" >>"$2/run.log" 2>&1 &
  tpid=$!
  until snap_done "$2"; do
    kill -0 "$tpid" 2>/dev/null || { echo "snapshot_run_bench: run stopped; see $2/run.log" >&2; exit 1; }
    sleep 0.05
  done
  t1=$(now_ms)
  run_pid=$(pgrep -P "$tpid" | head -1)
  kill -TERM "$run_pid" 2>/dev/null || true
  wait "$tpid" || { echo "snapshot_run_bench: tributary run failed; see $2/run.log" >&2; return 1; }
  run_pid=""
  read -r rss u s <"$2/time"
  local size count
  size=$("$load" size "$brokers" "$(sed -n 's/^topic.prefix=//p' "$2/run.properties").bench.$table")
  count=$(sed -E 's/.*count=([0-9]+).*/\1/' <<<"$size")
  t1=$(sed -E 's/.*last_append_ms=([0-9]+).*/\1/' <<<"$size")
  [[ "$count" -ge "$rows" ]] || { echo "snapshot_run_bench: the topic holds $count messages, not $rows; see $2/run.log" >&2; return 1; }
  awk -v a="$t0" -v b="$t1" -v m="$rss" -v u="$u" -v s="$s" 'BEGIN { printf "%.3f %d %.2f\n", (b - a) / 1000, m, u + s }'
}

# kill -9 at killrows, then resumed: prints "seconds first_rows second_rows saved_rows"
killed() { # bin dir
  local t0 t1 r1 r2 saved
  t0=$(now_ms)
  "$1" run --config "$2/run.properties" >>"$2/run1.log" 2>&1 &
  run_pid=$!
  until [[ "$(snap_rows "$2")" -ge "$killrows" ]] 2>/dev/null; do
    kill -0 "$run_pid" 2>/dev/null || { echo "snapshot_run_bench: run stopped; see $2/run1.log" >&2; exit 1; }
    sleep 0.02
  done
  kill -9 "$run_pid"
  wait "$run_pid" 2>/dev/null || true
  run_pid=""
  r1=$(snap_rows "$2")
  rm -f "$2/status.json"
  "$1" run --config "$2/run.properties" >>"$2/run.log" 2>&1 &
  run_pid=$!
  until snap_done "$2"; do
    kill -0 "$run_pid" 2>/dev/null || { echo "snapshot_run_bench: run stopped; see $2/run.log" >&2; exit 1; }
    sleep 0.05
  done
  t1=$(now_ms)
  r2=$(snap_rows "$2")
  stop_mine
  saved=$(sed -n 's/.*resuming the initial (chunked) snapshot of .* after [0-9]* chunk(s), \([0-9]*\) row(s).*/\1/p' "$2/run.log" | head -1)
  awk -v a="$t0" -v b="$t1" -v r1="$r1" -v r2="$r2" -v s="${saved:-0}" \
    'BEGIN { printf "%.3f %d %d %d\n", (b - a) / 1000, r1, r2, s }'
}

echo "snapshot_run_bench: load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >&2
variants="${SNAPRUN_VARIANTS:-base consistent chunked chunked2t kill9}"
want() { [[ " $variants " == *" $1 "* ]]; }
last() { tail -1 "$work/$1" 2>/dev/null || echo -; }
for ((i = 1; i <= runs; i++)); do
  if want base && [[ -n "$basebin" ]]; then
    one "$basebin" "$(config "${SNAPRUN_BASE_METHOD:-}" "base$i" "${SNAPRUN_BASE_THREADS:-}")" >>"$work/base"
  fi
  if want consistent; then one "$newbin" "$(config consistent "consistent$i")" >>"$work/consistent"; fi
  if want chunked; then one "$newbin" "$(config chunked "chunked$i")" >>"$work/chunked"; fi
  if want chunked2t; then one "$newbin" "$(config chunked "chunked2t$i" 2)" >>"$work/chunked2t"; fi
  if want kill9; then killed "$newbin" "$(config chunked "kill$i")" >>"$work/kill9"; fi
  echo "round $i: base $(last base) s, consistent $(last consistent) s, chunked $(last chunked) s," \
       "chunked 2 threads $(last chunked2t) s, kill9 $(last kill9) (s first second saved)," \
       "load $(cut -d' ' -f1 /proc/loadavg)" >&2
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
echo "== initial snapshot of bench.$table ($rows rows) by tributary run into Kafka, medians of $runs interleaved runs"
bs=; bm=; bc=
if [[ -s "$work/base" ]]; then
  bs=$(cut -d' ' -f1 "$work/base" | median); bm=$(cut -d' ' -f2 "$work/base" | median); bc=$(cut -d' ' -f3 "$work/base" | median)
fi
for v in base consistent chunked chunked2t; do
  [[ -s "$work/$v" ]] || continue
  s=$(cut -d' ' -f1 "$work/$v" | median)
  m=$(cut -d' ' -f2 "$work/$v" | median)
  c=$(cut -d' ' -f3 "$work/$v" | median)
  awk -v v="$v" -v s="$s" -v m="$m" -v c="$c" -v r="$rows" -v bs="$bs" -v bm="$bm" -v bc="$bc" 'BEGIN {
    printf "%-11s %8.2f s  %9.0f rows/s  peak RSS %6.1f MiB  CPU %6.2f s", v, s, r / s, m / 1024, c
    if (bs != "" && v != "base") printf "   vs base: rows/s %.2fx, RSS %.2fx, CPU %.2fx", bs / s, m / bm, c / bc
    printf "\n" }'
done
if [[ -s "$work/kill9" ]]; then
s=$(cut -d' ' -f1 "$work/kill9" | median)
r1=$(cut -d' ' -f2 "$work/kill9" | median)
r2=$(cut -d' ' -f3 "$work/kill9" | median)
sv=$(cut -d' ' -f4 "$work/kill9" | median)
awk -v s="$s" -v r="$rows" -v r1="$r1" -v r2="$r2" -v sv="$sv" -v k="$killrows" 'BEGIN {
  printf "kill9       %8.2f s in all (SIGKILL at >= %d rows): first run read >= %d, saved before the kill %d, resumed run read %d, read twice >= %d\n",
         s, k, r1, sv, r2, r1 + r2 - r }'
fi
echo "load average after: $load (before: see stderr)"
} | bench_summary snapshot_run_bench
bench_ok=1
