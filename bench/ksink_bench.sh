#!/usr/bin/env bash
# bench/ksink_bench.sh: Kafka sink throughput against kcat on the local broker. Not a test.
#
#   bench/ksink_bench.sh [EVENTS] [RUNS] [KEY=VALUE...]   defaults: 1000000 events, 3 runs
#                                    (KEY=VALUE: sink configuration overrides, e.g.
#                                    kafka.linger.ms=20; kafka.* ones go to kcat too)
#
# Each run: bench_ksink produces EVENTS synthetic change events (about 200 bytes of row data,
# one source transaction each) through ksink (render + produce + ack tracking + commits) into a
# fresh compacted topic; kcat -P produces the same pre-encoded key<TAB>value lines
# (written once by `bench_ksink dump`, with a connector name of the same length, so both
# send the same number of bytes) into another fresh compacted topic, with the same
# producer settings as the sink's defaults (idempotence, acks=all, murmur2_random,
# linger.ms=5, batch.num.messages=100000, batch.size=1000000, lz4, queue limits).
# A warm-up run (not counted) first; then the two alternate which goes first.
# kcat is timed from start to exit (it flushes at the end),
# ksink from the first event to the acknowledged flush and final offsets commit.
# Peak RSS: getrusage for ksink (setup included), /usr/bin/time for kcat. CPU seconds too, since
# the 2 cores are shared with the broker: wall-clock figures move with the machine's load.
# Prints every run and the medians, and the ratio ksink/kcat in events/s: of the medians, and
# the median of the per-pair ratios (a pair runs back to back, so it sees about the same load;
# on a shared machine the load drifts between pairs more than the two producers differ).
#
# Uses TRIBUTARY_TEST_KAFKA when set; otherwise starts scripts/testenv and stops it at exit.
# Builds bench_ksink in build-bench-ksink (Release, no sanitizers).
set -euo pipefail

events="${1:-1000000}"
runs="${2:-3}"
sets=("${@:3}")
kcat_sets=()
for s in "${sets[@]}"; do
  if [[ "$s" == kafka.* ]]; then kcat_sets+=(-X "${s#kafka.}"); fi
done
# shellcheck disable=SC1091
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup ksink
broker="$brokers"

bench_build bench_ksink
bin="$build/bench/bench_ksink"

tag="$(date +%s)_$$"
echo "ksink bench: $events events x $runs runs, broker $broker, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)${sets[*]:+, overrides: ${sets[*]}}"
"$bin" dump "$work/lines.txt" "$events" "kb${tag}_1-conn"
echo "payload: $(wc -c <"$work/lines.txt") bytes of key<TAB>value lines"

run_ksink() { # run number
  local line eps mbs rss cpu
  line="$("$bin" run "$broker" "kb${tag}_$1" "$events" "${sets[@]}")"
  eps="$(sed -n 's/.*events_per_s=\([0-9.]*\).*/\1/p' <<<"$line")"
  mbs="$(sed -n 's/.*mb_per_s=\([0-9.]*\).*/\1/p' <<<"$line")"
  rss="$(sed -n 's/.*max_rss_kb=\([0-9]*\).*/\1/p' <<<"$line")"
  cpu="$(sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p' <<<"$line")"
  k_eps+=("$eps"); k_mbs+=("$mbs"); k_rss+=("$rss"); k_cpu+=("$cpu")
  echo "run $1 ksink: $line"
}

run_kcat() { # run number
  local topic="kcat${tag}_$1" secs rss usr sys bytes eps mbs cpu
  "$bin" topic "$broker" "$topic"
  /usr/bin/time -f "%e %M %U %S" -o "$work/time.txt" \
    kcat -P -b "$broker" -t "$topic" -K $'\t' -l \
      -X enable.idempotence=true -X acks=all -X partitioner=murmur2_random \
      -X linger.ms=5 -X batch.num.messages=100000 -X batch.size=1000000 -X compression.type=lz4 \
      -X queue.buffering.max.messages=1000000 -X queue.buffering.max.kbytes=32768 "${kcat_sets[@]}" \
      "$work/lines.txt"
  read -r secs rss usr sys <"$work/time.txt"
  bytes="$(awk -F'\t' '{ b += length($0) - 1 } END { printf "%d", b }' "$work/lines.txt")"
  eps="$(awk -v n="$events" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')"
  mbs="$(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.1f", b / 1e6 / s }')"
  cpu="$(awk -v u="$usr" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
  c_eps+=("$eps"); c_mbs+=("$mbs"); c_rss+=("$rss"); c_cpu+=("$cpu")
  echo "run $1 kcat:  events=$events seconds=$secs events_per_s=$eps mb_per_s=$mbs max_rss_kb=$rss cpu_s=$cpu"
}

# Warm-up, not counted: a fresh broker's JVM compiles its produce path during the
# first hundreds of MB, which would slow whichever producer comes first.
"$bin" run "$broker" "kb${tag}_warm" "$events" "${sets[@]}" >/dev/null
echo "warm-up: $events events produced (not counted)"

declare -a k_eps k_mbs k_rss k_cpu c_eps c_mbs c_rss c_cpu pair
for ((r = 1; r <= runs; r++)); do
  if ((r % 2)); then # the order alternates, so neither always follows the other
    run_ksink "$r"; run_kcat "$r"
  else
    run_kcat "$r"; run_ksink "$r"
  fi
  # the two runs of a pair follow each other, so the machine's load drifts less between them
  pair+=("$(awk -v a="${k_eps[-1]}" -v b="${c_eps[-1]}" 'BEGIN { printf "%.3f", a / b }')")
  echo "run $r ratio ksink/kcat (events/s): ${pair[-1]}"
done

median_of() { printf '%s\n' "$@" | median; }
mk_eps="$(median_of "${k_eps[@]}")"; mc_eps="$(median_of "${c_eps[@]}")"
{
echo "median ksink: events_per_s=$mk_eps mb_per_s=$(median_of "${k_mbs[@]}") max_rss_kb=$(median_of "${k_rss[@]}")"
echo "median kcat:  events_per_s=$mc_eps mb_per_s=$(median_of "${c_mbs[@]}") max_rss_kb=$(median_of "${c_rss[@]}")"
echo "ratio ksink/kcat (events/s): $(awk -v a="$mk_eps" -v b="$mc_eps" 'BEGIN { printf "%.2f", a / b }') (ratio of the medians)"
echo "median of the per-pair ratios: $(median_of "${pair[@]}")"
echo "median CPU seconds: ksink $(median_of "${k_cpu[@]}"), kcat $(median_of "${c_cpu[@]}")"
} | bench_summary ksink_bench
