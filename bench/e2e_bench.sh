#!/usr/bin/env bash
# bench/e2e_bench.sh: `tributary run` end to end, MariaDB -> Kafka. Not a test.
#
#   bench/e2e_bench.sh [RUNS]        (default 3; medians are printed at the end)
#   TB_E2E_BASELINE=REV bench/e2e_bench.sh [RUNS]
#                                    also builds git revision REV of this repository (git archive
#                                    into build-bench-e2e-REV-src, a Release tree in
#                                    build-bench-e2e-REV)
#                                    and runs it and this tree in turn, RUNS rounds of one run
#                                    each (baseline first in odd rounds, second in even ones),
#                                    then prints the medians of both and
#                                    the ratio this/baseline of each figure
#
# Uses the testenv in the environment (eval "$(scripts/testenv up)") or starts its own.
# Builds a Release tree in build-bench-e2e (TB_BENCH_BUILD_DIR; set-up in bench/lib.sh). Per run,
# with a fresh database and connector name:
#  1. catch-up: the connector takes its (empty) snapshot and stops; 1M rows of a 5-column table
#     are written (1000-row INSERTs, one transaction each) while it is stopped; it is started
#     under /usr/bin/time and stopped once its committed GTID (status file) equals
#     @@gtid_binlog_pos. rows/s = rows / (broker append time of the last message - start time);
#     also rows / (last - first append time) (the streaming rate without start-up).
#     Peak RSS = "Maximum resident set size" of /usr/bin/time; CPU = its user + system time;
#     start to first message = broker append time of the first message - start time (the start
#     resumes from a stored position in Kafka, with the lease on: the defaults).
#  2. latency: with the connector running, rows are written at a steady RATE rows/s
#     (BATCH rows per transaction), each with ts = wall clock ms at the INSERT; the table's
#     topic is pre-created with message.timestamp.type=LogAppendTime, so each message carries
#     the broker's append time. latency = append time - ts (commit-to-Kafka, same clock).
# Environment: TB_E2E_ROWS (1000000), TB_E2E_RATE (10000), TB_E2E_SECONDS (20), TB_E2E_BATCH (10),
#              TB_E2E_KAFKA_PROPS (extra properties for the connector, e.g. "kafka.linger.ms=5"),
#              TB_E2E_RF (replication factor of the two data topics, default 1; 3 with
#              min.insync.replicas=2 on a three-broker testenv: bench/cluster_bench.sh),
#              TB_E2E_THIS_LIBS (a folder put in LD_LIBRARY_PATH for this tree's measured runs only,
#              e.g. another librdkafka: with TB_E2E_BASELINE=HEAD the same code with either library;
#              the log's "kafka: librdkafka X" line says which one ran).
#
# Figures: docs/STATUS.md (Benchmarks) lists the latest with this command.
set -euo pipefail
runs=${1:-3}
rows=${TB_E2E_ROWS:-1000000}
rate=${TB_E2E_RATE:-10000}
seconds=${TB_E2E_SECONDS:-20}
batch=${TB_E2E_BATCH:-10}
rf=${TB_E2E_RF:-1}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_keep_work=1
bench_setup e2e
bench_build tributary e2e_load
tb=$build/app/tributary
load=$build/bench/e2e_load


# one_run TAG BINARY I: one catch-up and one steady run of BINARY, a line of figures appended to
# $work/results.TAG
one_run() {
    local tag=$1 tb=$2 i=$3
    name=e2eb_$$_${tag}_$i
    cfg=$work/$name.properties
    { bench_source_props "$name" $((7000 + i)); cat <<PROPS
offsets.storage=kafka
status.file=$work/$name.status.json
snapshot.mode=initial
log.level=warn
PROPS
    } > "$cfg"
    for kv in ${TB_E2E_KAFKA_PROPS:-}; do echo "$kv" >> "$cfg"; done
    "$load" topic "$TRIBUTARY_TEST_KAFKA" "$name.$name.bulk" "$rf"
    "$load" topic "$TRIBUTARY_TEST_KAFKA" "$name.$name.steady" "$rf"
    mysql_q "CREATE DATABASE $name"
    "$load" bulk "$name" bulk 0 1 >/dev/null
    "$load" bulk "$name" steady 0 1 >/dev/null

    # 1. catch-up of $rows rows written while the connector is stopped
    "$tb" run --config "$cfg" 2>>"$work/$name.log" & run_pid=$!
    wait_caught_up "$work/$name.status.json" 60
    stop_run
    "$load" bulk "$name" bulk "$rows" 1000 >&2
    t0=$(now_ms)
    local pre=()
    if [[ "$tag" == this && -n "${TB_E2E_THIS_LIBS:-}" ]]; then pre=(env "LD_LIBRARY_PATH=$TB_E2E_THIS_LIBS"); fi
    /usr/bin/time -v -o "$work/$name.time" "${pre[@]}" "$tb" run --config "$cfg" 2>>"$work/$name.log" & run_pid=$!
    wait_caught_up "$work/$name.status.json" 600
    t_seen=$(now_ms)
    stop_run
    lat=$("$load" latency "$TRIBUTARY_TEST_KAFKA" "$name.$name.bulk")
    rss_kb=$(awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$work/$name.time")
    cpu_s=$(awk -F: '/User time|System time/ { gsub(/ /, "", $2); s += $2 } END { printf "%.2f", s }' "$work/$name.time")
    cpu_split=$(awk -F: '/User time/ { gsub(/ /, "", $2); u = $2 } /System time/ { gsub(/ /, "", $2); s = $2 }
        /Voluntary context/ { gsub(/ /, "", $2); v = $2 } /Involuntary context/ { gsub(/ /, "", $2); iv = $2 }
        END { printf "user %.2f s, system %.2f s, %d voluntary and %d involuntary context switches", u, s, v, iv }' "$work/$name.time")
    first=$(sed -E 's/.*first_append_ms=([0-9]+).*/\1/' <<<"$lat")
    last=$(sed -E 's/.*last_append_ms=([0-9]+).*/\1/' <<<"$lat")
    count=$(sed -E 's/.*count=([0-9]+).*/\1/' <<<"$lat")
    [ "$count" = "$rows" ] || { echo "run $i: $count messages on the topic, want $rows" >&2; exit 1; }
    rps=$(awk -v r="$rows" -v a="$t0" -v b="$last" 'BEGIN { printf "%.0f", r / ((b - a) / 1000) }')
    rps_stream=$(awk -v r="$rows" -v a="$first" -v b="$last" 'BEGIN { printf "%.0f", r / ((b - a) / 1000) }')
    echo "run $i ($tag) catch-up: $rows rows, start->first append $((first - t0)) ms, start->last append $((last - t0)) ms ($rps rows/s), first->last append $((last - first)) ms ($rps_stream rows/s), status saw it after $((t_seen - t0)) ms, CPU ${cpu_s} s ($cpu_split), peak RSS $((rss_kb / 1024)) MB" >&2

    # 2. latency at a steady rate
    "$tb" run --config "$cfg" 2>>"$work/$name.log" & run_pid=$!
    wait_caught_up "$work/$name.status.json" 60
    "$load" steady "$name" steady "$rate" "$seconds" "$batch" >&2
    wait_caught_up "$work/$name.status.json" 60
    stop_run
    lat2=$("$load" latency "$TRIBUTARY_TEST_KAFKA" "$name.$name.steady")
    echo "run $i ($tag) steady: $lat2" >&2
    p50=$(sed -E 's/.*p50=([0-9-]+).*/\1/' <<<"$lat2")
    p99=$(sed -E 's/.*p99=([0-9-]+).*/\1/' <<<"$lat2")
    echo "$rps $rps_stream $rss_kb $p50 $p99 $((first - t0)) $cpu_s" >> "$work/results.$tag"
    "${pre[@]}" "$tb" --version | grep -m1 librdkafka >> "$work/libs.$tag" || true # what the measured run loaded
    if grep -qE "ERROR|WARN" "$work/$name.log"; then echo "run $i log:" >&2; grep -E "ERROR|WARN" "$work/$name.log" | head -5 >&2; fi
}

bench_tags "${TB_E2E_BASELINE:-}" "${TB_E2E_BASELINE_BUILD_DIR:-}"
bench_rounds "$runs" one_run

{
for tag in "${tags[@]}"; do
    r="$work/results.$tag"
    what="this tree"
    [[ "$tag" == base ]] && what="baseline $base_rev"
    if [[ "$tag" == this && -n "${TB_E2E_THIS_LIBS:-}" ]]; then what="this tree, LD_LIBRARY_PATH=$TB_E2E_THIS_LIBS"; fi
    what="$what; $(sort -u "$work/libs.$tag" | paste -sd, -)"
    echo "== tributary run ($what), MariaDB -> Kafka (${TRIBUTARY_TEST_KAFKA_BROKERS:-1} broker(s), data topics RF $rf), medians of $runs runs (rows=$rows; steady $rate rows/s, $batch rows/transaction, ${seconds}s)"
    echo "start to first message ms:                $(col "$r" 6)   (target <= 100)"
    echo "catch-up rows/s (start to last append):   $(col "$r" 1)   (target >= 250000)"
    echo "catch-up rows/s (first to last append):   $(col "$r" 2)"
    echo "CPU s for the catch-up:                   $(col "$r" 7)"
    echo "peak RSS MB:                              $(awk '{ printf "%.1f\n", $3 / 1024 }' "$r" | median)   (target < 64)"
    echo "commit-to-Kafka latency p50 ms:           $(col "$r" 4)"
    echo "commit-to-Kafka latency p99 ms:           $(col "$r" 5)   (target < 20)"
done
if [[ -n "${TB_E2E_BASELINE:-}" ]]; then
    echo "== this tree / baseline $base_rev (medians; interleaved, baseline first in odd rounds, second in even ones)"
    bench_ratios 34 "6:start to first message" "1:catch-up rows/s from start" "2:catch-up rows/s first to last" \
        "7:CPU s" "3:peak RSS" "5:latency p99"
fi
} | bench_summary e2e_bench
bench_ok=1
