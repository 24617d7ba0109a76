#!/usr/bin/env bash
# bench/metrics_bench.sh: the cost of metrics.listen on an end-to-end catch-up, MariaDB -> Kafka.
# Not a test.
#
#   bench/metrics_bench.sh [RUNS]     (default 5 per mode; medians are printed at the end)
#
# Uses the testenv in the environment (eval "$(scripts/testenv up)") or starts its own, and the
# Release tree of bench/e2e_bench.sh (build-bench-e2e; the set-up of both is bench/lib.sh).
# TB_E2E_ROWS rows (default 1000000, 5-column table, 1000-row INSERTs) are written once; then each
# run is a new connector (its own name and topics) that catches up on them from the GTID before the
# load (snapshot.mode=never), alternating metrics off and metrics on (metrics.listen on 127.0.0.1,
# scraped with curl every second, as Prometheus would), in the order off on on off off on ...
# Time = start to the committed GTID (status file) equal to the load's end; CPU = the process's
# user + system time (/usr/bin/time).
# Prints both per run, the medians of each mode, and the cost. TB_METRICS_PROPS adds properties to
# the metrics-on runs (e.g. "kafka.statistics.interval.ms=0": no librdkafka statistics, which
# metrics.listen otherwise turns on every 5 s).
set -euo pipefail
runs=${1:-5}
rows=${TB_E2E_ROWS:-1000000}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_keep_work=1
bench_setup e2e
bench_build tributary e2e_load
tb=$build/app/tributary
load=$build/bench/e2e_load
scrape_pid=
bench_stop() { [ -z "$scrape_pid" ] || kill "$scrape_pid" 2>/dev/null; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

db=mb_$$
mysql_q "CREATE DATABASE $db"
"$load" bulk "$db" bulk 0 1 >/dev/null
start_gtid=$(mysql_q "SELECT @@global.gtid_binlog_pos")
"$load" bulk "$db" bulk "$rows" 1000 >&2
want=$(mysql_q "SELECT @@global.gtid_binlog_pos")

: > "$work/results"
for i in $(seq 1 $((runs * 2))); do
    # off on on off off on on off ...: neither mode always runs first (the broker's logs grow)
    mode=$(case $((i % 4)) in 1 | 0) echo off ;; *) echo on ;; esac)
    name=${db}_$i
    cfg=$work/$name.properties
    cat > "$cfg" <<PROPS
name=$name
source.type=mysql
source.host=$TRIBUTARY_TEST_MYSQL_HOST
source.port=$TRIBUTARY_TEST_MYSQL_PORT
source.user=$TRIBUTARY_TEST_MYSQL_USER
source.password=$TRIBUTARY_TEST_MYSQL_PASSWORD
source.start.gtid=$start_gtid
tables.include=^$db[.]
topic.prefix=$name
kafka.bootstrap.servers=$TRIBUTARY_TEST_KAFKA
offsets.storage=kafka
status.file=$work/$name.status.json
snapshot.mode=never
log.level=warn
PROPS
    port=
    if [ "$mode" = on ]; then
        port=$(free_port)
        echo "metrics.listen=127.0.0.1:$port" >> "$cfg"
        for kv in ${TB_METRICS_PROPS:-}; do echo "$kv" >> "$cfg"; done
    fi
    "$load" topic "$TRIBUTARY_TEST_KAFKA" "$name.$db.bulk"
    t0=$(now_ms)
    /usr/bin/time -f "%U %S" -o "$work/$name.time" "$tb" run --config "$cfg" 2>>"$work/$name.log" & run_pid=$!
    if [ -n "$port" ]; then
        (while kill -0 "$run_pid" 2>/dev/null; do curl -s -o /dev/null "http://127.0.0.1:$port/metrics"; sleep 1; done) &
        scrape_pid=$!
    fi
    deadline=$((SECONDS + 600))
    until [ "$(status_gtid "$work/$name.status.json")" = "$want" ]; do
        [ $SECONDS -lt $deadline ] || { echo "run $i: not caught up" >&2; exit 1; }
        kill -0 "$run_pid" 2>/dev/null || { echo "run $i: tributary run stopped early" >&2; exit 1; }
        sleep 0.05
    done
    t1=$(now_ms)
    if [ -n "$port" ]; then
        body=$(curl -s "http://127.0.0.1:$port/metrics")
        grep -q "tributary_events_total{connector=\"$name\",table=\"$db.bulk\",op=\"c\"} $rows" <<<"$body" \
            || { echo "run $i: /metrics does not count $rows inserts" >&2; exit 1; }
    fi
    stop_run
    [ -n "$scrape_pid" ] && { wait "$scrape_pid" || true; scrape_pid=; }
    lat=$("$load" latency "$TRIBUTARY_TEST_KAFKA" "$name.$db.bulk")
    last=$(sed -E 's/.*last_append_ms=([0-9]+).*/\1/' <<<"$lat")
    count=$(sed -E 's/.*count=([0-9]+).*/\1/' <<<"$lat")
    [ "$count" = "$rows" ] || { echo "run $i: $count messages on the topic, want $rows" >&2; exit 1; }
    rps=$(awk -v r="$rows" -v a="$t0" -v b="$last" 'BEGIN { printf "%.0f", r / ((b - a) / 1000) }')
    cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$work/$name.time")
    echo "run $i metrics $mode: $rows rows, start to last append $((last - t0)) ms ($rps rows/s), committed after $((t1 - t0)) ms, CPU $cpu s" >&2
    echo "$mode $rps $cpu" >> "$work/results"
done
off=$(awk '$1 == "off" { print $2 }' "$work/results" | median)
on=$(awk '$1 == "on" { print $2 }' "$work/results" | median)
cpu_off=$(awk '$1 == "off" { print $3 }' "$work/results" | median)
cpu_on=$(awk '$1 == "on" { print $3 }' "$work/results" | median)
{
echo "== catch-up of $rows rows, start to last append, medians of $runs runs per mode (alternating)"
echo "metrics off: $off rows/s, CPU $cpu_off s (tributary, user + system, start to stop)"
echo "metrics on, scraped every second: $on rows/s, CPU $cpu_on s"
echo "cost: throughput $(awk -v a="$off" -v b="$on" 'BEGIN { printf "%.1f%%", (1 - b / a) * 100 }'), CPU $(awk -v a="$cpu_off" -v b="$cpu_on" 'BEGIN { printf "%+.1f%%", (b / a - 1) * 100 }')   (target < 2%)"
} | bench_summary metrics_bench
bench_ok=1
