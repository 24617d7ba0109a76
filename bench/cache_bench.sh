#!/usr/bin/env bash
# bench/cache_bench.sh: table cache replay throughput. Not a test.
#
#   bench/cache_bench.sh [MESSAGES] [RUNS]        defaults: 1000000 messages, 3 runs
#
# bench_cache_produce writes MESSAGES envelope-format events (DESIGN 4; about 330 bytes each)
# cycling over MESSAGES*4/5 keys (creates, then updates) into a fresh 3-partition compacted
# topic, plus its schema record. Each run then replays the topic from the beginning into a
# fresh cache file:
#   tributary   `tributary cache --until-caught-up` (startup, metadata, replay, final commit),
#               timed from start to exit, peak RSS by /usr/bin/time
#   debezium    `tributary cache --until-caught-up` of the same rows as Debezium's MariaDB
#               connector writes them with Kafka Connect schemas (key and value
#               {"schema":…,"payload":…}, DECIMAL as Connect Decimal bytes, Debezium's envelope
#               and source; about 3.2 KB each), produced by bench_cache_produce ... debezium into
#               a second 3-partition topic; same timing. Its rows must equal the tributary
#               topic's (checked).
#   baseline    `kcat -C -e -Z -f '%k\t%s\n'` piped into bench/cache_upsert_baseline.py
#               (json.loads + executemany upserts, 5000 per transaction), same timing
#               (CACHE_BENCH_BASELINE=0 leaves it out)
#   other       with CACHE_BENCH_OTHER=PATH[:PATH...] (`tributary` binaries built from other
#               commits, e.g. before and after a change of the reader), the same replay of the
#               tributary topic by each, right after this tree's in every run (same load, same
#               topic); prints their medians and the ratios this tree / other. On a shared machine
#               compare the CPU figures: the wall clock follows the load.
# CACHE_BENCH_DEBEZIUM=0 leaves the Debezium topic out.
# Both end with the same row count (checked). Prints every run and the medians, rows/s and
# the ratio. The 2 cores are shared with the broker: wall-clock figures move with the load.
#
# Uses TRIBUTARY_TEST_KAFKA when set; otherwise starts scripts/testenv and stops it at exit.
# Builds in build-bench-cache (Release, no sanitizers).
set -euo pipefail

msgs="${1:-1000000}"
runs="${2:-3}"
# shellcheck disable=SC1091
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup cache

bench_build tributary bench_cache_produce

prefix="cbench$$"
keys=$((msgs * 4 / 5))
echo "producing $msgs envelope messages over $keys keys to $prefix.bench.items ..." >&2
"$build/bench/bench_cache_produce" "$brokers" "$prefix" "$msgs" "$keys"
dbz="${CACHE_BENCH_DEBEZIUM:-1}"
if [[ "$dbz" != 0 ]]; then
  echo "producing $msgs Debezium messages with Connect schemas to ${prefix}dbz.bench.items ..." >&2
  "$build/bench/bench_cache_produce" "$brokers" "${prefix}dbz" "$msgs" "$keys" debezium
fi
baseline="${CACHE_BENCH_BASELINE:-1}"
IFS=: read -r -a others <<<"${CACHE_BENCH_OTHER:-}"
for o in "${others[@]}"; do
  [[ -x "$o" ]] || { echo "CACHE_BENCH_OTHER: $o is not an executable" >&2; exit 2; }
done

now() { date +%s.%N; }

# timed OUT LABEL COMMAND...: run COMMAND under /usr/bin/time; append "rows/s secs rss cpu
# rows-per-CPU-s" to $work/OUT.txt and print the run's line
timed() {
  local out="$1" label="$2" t0 t1 secs rate rss cu cs cpu crate
  shift 2
  t0=$(now)
  /usr/bin/time -f '%M %U %S' -o "$work/rss" "$@" 2>"$work/$out.log" ||
    { echo "$label failed:" >&2; cat "$work/$out.log" >&2; exit 1; }
  t1=$(now)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
  rate=$(awk -v n="$msgs" -v s="$secs" 'BEGIN{printf "%.0f", n/s}')
  read -r rss cu cs <"$work/rss"
  cpu=$(awk -v u="$cu" -v s="$cs" 'BEGIN{printf "%.2f", u+s}')
  crate=$(awk -v n="$msgs" -v s="$cpu" 'BEGIN{printf "%.0f", n/s}')
  echo "$rate $secs $rss $cpu $crate" >>"$work/$out.txt"
  echo "run $run $label: $secs s, $rate rows/s, peak RSS $rss KiB, CPU $cpu s ($crate rows per CPU-second)" >&2
}
# rows_of DB LABEL LOG: the cache DB holds the $keys rows of bench.items
rows_of() {
  local rows
  rows=$(sqlite3 "$1" 'SELECT count(*) FROM "bench.items"')
  [[ "$rows" == "$keys" ]] || { echo "$2: $rows rows, want $keys" >&2; cat "$3" >&2; exit 1; }
}

: >"$work/tb.txt"
: >"$work/dz.txt"
: >"$work/py.txt"
for run in $(seq 1 "$runs"); do
  db="$work/tb$run.db"
  timed tb tributary "$build/app/tributary" cache --brokers "$brokers" \
    --topics "^$prefix\\." --prefix "$prefix" --db "$db" --until-caught-up --set log.level=warn
  rows_of "$db" tributary "$work/tb.log"

  for i in "${!others[@]}"; do
    odb="$work/ot$i-$run.db"
    timed "ot$i" "other ${others[$i]}" "${others[$i]}" cache --brokers "$brokers" \
      --topics "^$prefix\\." --prefix "$prefix" --db "$odb" --until-caught-up --set log.level=warn
    rows_of "$odb" "other ${others[$i]}" "$work/ot$i.log"
    rm -f "$odb"*
  done

  if [[ "$dbz" != 0 ]]; then
    ddb="$work/dz$run.db"
    timed dz "debezium (Connect schemas)" "$build/app/tributary" cache --brokers "$brokers" \
      --topics "^${prefix}dbz\\." --db "$ddb" --until-caught-up --set log.level=warn
    same=$(sqlite3 "$ddb" "ATTACH '$db' AS t; SELECT count(*) FROM \"bench.items\" d JOIN t.\"bench.items\" r USING (id)
      WHERE d.name IS r.name AND d.qty IS r.qty AND d.price IS r.price AND d.updated IS r.updated")
    [[ "$same" == "$keys" ]] || { echo "debezium: $same rows equal to the tributary topic's, want $keys" >&2; cat "$work/dz.log" >&2; exit 1; }
    rm -f "$ddb"*
  fi
  if [[ "$baseline" == 0 ]]; then
    rm -f "$db"*
    continue
  fi

  pdb="$work/py$run.db"
  timed py "baseline (kcat | python3 sqlite3; peak RSS of the largest process)" bash -c "kcat -C -b '$brokers' -t '$prefix.bench.items' -o beginning -e -q -Z -f '%k\t%s\n' | python3 '$root/bench/cache_upsert_baseline.py' '$pdb' bench.items >/dev/null"
  rows_of "$pdb" baseline "$work/py.log"
  rm -f "$db"* "$pdb"*
done

med() { cut -d' ' -f"$2" "$work/$1.txt" | median; }
tb_rate=$(med tb 1) tb_rss=$(med tb 3) tb_crate=$(med tb 5)
{
echo "median of $runs runs, $msgs messages (load average: $(cut -d' ' -f1-3 /proc/loadavg)):"
echo "  tributary cache:             $tb_rate rows/s wall, $tb_crate rows/CPU-s, peak RSS $tb_rss KiB"
for i in "${!others[@]}"; do
  ot_rate=$(med "ot$i" 1) ot_rss=$(med "ot$i" 3) ot_crate=$(med "ot$i" 5)
  echo "  other ${others[$i]}:"
  echo "                               $ot_rate rows/s wall, $ot_crate rows/CPU-s, peak RSS $ot_rss KiB"
  echo "  this tree / other:           $(awk -v a="$tb_rate" -v b="$ot_rate" 'BEGIN{printf "%.3f", a/b}')x wall," \
    "$(awk -v a="$tb_crate" -v b="$ot_crate" 'BEGIN{printf "%.3f", a/b}')x CPU"
done
if [[ "$dbz" != 0 ]]; then
  dz_rate=$(med dz 1) dz_rss=$(med dz 3) dz_crate=$(med dz 5)
  echo "  debezium, Connect schemas:   $dz_rate rows/s wall, $dz_crate rows/CPU-s, peak RSS $dz_rss KiB"
  echo "  tributary / debezium:        $(awk -v a="$tb_rate" -v b="$dz_rate" 'BEGIN{printf "%.2f", a/b}')x wall," \
    "$(awk -v a="$tb_crate" -v b="$dz_crate" 'BEGIN{printf "%.2f", a/b}')x CPU," \
    "peak RSS $(awk -v a="$dz_rss" -v b="$tb_rss" 'BEGIN{printf "%.2f", a/b}')x"
fi
if [[ "$baseline" != 0 ]]; then
  py_rate=$(med py 1) py_rss=$(med py 3) py_crate=$(med py 5)
  echo "  kcat | python3 + sqlite3:    $py_rate rows/s wall, $py_crate rows/CPU-s, peak RSS $py_rss KiB"
  echo "  ratio:                       $(awk -v a="$tb_rate" -v b="$py_rate" 'BEGIN{printf "%.2f", a/b}')x wall," \
    "$(awk -v a="$tb_crate" -v b="$py_crate" 'BEGIN{printf "%.2f", a/b}')x CPU"
fi
} | bench_summary cache_bench
