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

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTB_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target tributary bench_cache_produce >/dev/null

prefix="cbench$$"
keys=$((msgs * 4 / 5))
echo "producing $msgs envelope messages over $keys keys to $prefix.bench.items ..." >&2
"$build/bench/bench_cache_produce" "$brokers" "$prefix" "$msgs" "$keys"
echo "producing $msgs Debezium messages with Connect schemas to ${prefix}dbz.bench.items ..." >&2
"$build/bench/bench_cache_produce" "$brokers" "${prefix}dbz" "$msgs" "$keys" debezium
baseline="${CACHE_BENCH_BASELINE:-1}"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

: >"$work/tb.txt"
: >"$work/dz.txt"
: >"$work/py.txt"
for run in $(seq 1 "$runs"); do
  db="$work/tb$run.db"
  t0=$(now)
  /usr/bin/time -f '%M %U %S' -o "$work/rss" "$build/app/tributary" cache --brokers "$brokers" \
    --topics "^$prefix\\." --prefix "$prefix" --db "$db" --until-caught-up --set log.level=warn 2>"$work/tb.log"
  t1=$(now)
  rows=$(sqlite3 "$db" 'SELECT count(*) FROM "bench.items"')
  [[ "$rows" == "$keys" ]] || { echo "tributary: $rows rows, want $keys" >&2; cat "$work/tb.log" >&2; exit 1; }
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
  rate=$(awk -v n="$msgs" -v s="$secs" 'BEGIN{printf "%.0f", n/s}')
  read -r rss cu cs <"$work/rss"
  cpu=$(awk -v u="$cu" -v s="$cs" 'BEGIN{printf "%.2f", u+s}')
  crate=$(awk -v n="$msgs" -v s="$cpu" 'BEGIN{printf "%.0f", n/s}')
  echo "$rate $secs $rss $cpu $crate" >>"$work/tb.txt"
  echo "run $run tributary: $secs s, $rate rows/s, peak RSS $rss KiB, CPU $cpu s ($crate rows per CPU-second)" >&2

  ddb="$work/dz$run.db"
  t0=$(now)
  /usr/bin/time -f '%M %U %S' -o "$work/rss" "$build/app/tributary" cache --brokers "$brokers" \
    --topics "^${prefix}dbz\\." --db "$ddb" --until-caught-up --set log.level=warn 2>"$work/dz.log"
  t1=$(now)
  same=$(sqlite3 "$ddb" "ATTACH '$db' AS t; SELECT count(*) FROM \"bench.items\" d JOIN t.\"bench.items\" r USING (id)
    WHERE d.name IS r.name AND d.qty IS r.qty AND d.price IS r.price AND d.updated IS r.updated")
  [[ "$same" == "$keys" ]] || { echo "debezium: $same rows equal to the tributary topic's, want $keys" >&2; cat "$work/dz.log" >&2; exit 1; }
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
  rate=$(awk -v n="$msgs" -v s="$secs" 'BEGIN{printf "%.0f", n/s}')
  read -r rss cu cs <"$work/rss"
  cpu=$(awk -v u="$cu" -v s="$cs" 'BEGIN{printf "%.2f", u+s}')
  crate=$(awk -v n="$msgs" -v s="$cpu" 'BEGIN{printf "%.0f", n/s}')
  echo "$rate $secs $rss $cpu $crate" >>"$work/dz.txt"
  echo "run $run debezium (Connect schemas): $secs s, $rate rows/s, peak RSS $rss KiB, CPU $cpu s ($crate rows per CPU-second)" >&2
  rm -f "$ddb"*
  if [[ "$baseline" == 0 ]]; then
    rm -f "$db"*
    continue
  fi

  pdb="$work/py$run.db"
  t0=$(now)
  /usr/bin/time -f '%M %U %S' -o "$work/rss" bash -c "kcat -C -b '$brokers' -t '$prefix.bench.items' -o beginning -e -q -Z -f '%k\t%s\n' | python3 '$root/bench/cache_upsert_baseline.py' '$pdb' bench.items >/dev/null"
  t1=$(now)
  prows=$(sqlite3 "$pdb" 'SELECT count(*) FROM "bench.items"')
  [[ "$prows" == "$keys" ]] || { echo "baseline: $prows rows, want $keys" >&2; exit 1; }
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
  rate=$(awk -v n="$msgs" -v s="$secs" 'BEGIN{printf "%.0f", n/s}')
  read -r rss cu cs <"$work/rss"
  cpu=$(awk -v u="$cu" -v s="$cs" 'BEGIN{printf "%.2f", u+s}')
  crate=$(awk -v n="$msgs" -v s="$cpu" 'BEGIN{printf "%.0f", n/s}')
  echo "$rate $secs $rss $cpu $crate" >>"$work/py.txt"
  echo "run $run baseline (kcat | python3 sqlite3): $secs s, $rate rows/s, peak RSS $rss KiB (largest process), CPU $cpu s ($crate rows per CPU-second)" >&2
  rm -f "$db"* "$pdb"*
done

dz_rate=$(cut -d' ' -f1 "$work/dz.txt" | median)
dz_rss=$(cut -d' ' -f3 "$work/dz.txt" | median)
dz_crate=$(cut -d' ' -f5 "$work/dz.txt" | median)
tb_rate=$(cut -d' ' -f1 "$work/tb.txt" | median)
tb_rss=$(cut -d' ' -f3 "$work/tb.txt" | median)
tb_crate=$(cut -d' ' -f5 "$work/tb.txt" | median)
if [[ "$baseline" == 0 ]]; then echo "1 0 0 0 1" >"$work/py.txt"; fi
py_rate=$(cut -d' ' -f1 "$work/py.txt" | median)
py_rss=$(cut -d' ' -f3 "$work/py.txt" | median)
py_crate=$(cut -d' ' -f5 "$work/py.txt" | median)
ratio=$(awk -v a="$tb_rate" -v b="$py_rate" 'BEGIN{printf "%.2f", a/b}')
cratio=$(awk -v a="$tb_crate" -v b="$py_crate" 'BEGIN{printf "%.2f", a/b}')
echo "median of $runs runs, $msgs messages (load average: $(cut -d' ' -f1-3 /proc/loadavg)):"
echo "  tributary cache:             $tb_rate rows/s wall, $tb_crate rows/CPU-s, peak RSS $tb_rss KiB"
echo "  debezium, Connect schemas:   $dz_rate rows/s wall, $dz_crate rows/CPU-s, peak RSS $dz_rss KiB"
echo "  tributary / debezium:        $(awk -v a="$tb_rate" -v b="$dz_rate" 'BEGIN{printf "%.2f", a/b}')x wall," \
  "$(awk -v a="$tb_crate" -v b="$dz_crate" 'BEGIN{printf "%.2f", a/b}')x CPU," \
  "peak RSS $(awk -v a="$dz_rss" -v b="$tb_rss" 'BEGIN{printf "%.2f", a/b}')x"
[[ "$baseline" == 0 ]] && exit 0
echo "  kcat | python3 + sqlite3:    $py_rate rows/s wall, $py_crate rows/CPU-s, peak RSS $py_rss KiB"
echo "  ratio:                       ${ratio}x wall, ${cratio}x CPU"
