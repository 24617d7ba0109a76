#!/usr/bin/env bash
# bench/metrics_bench.sh: the cost of metrics.listen on an end-to-end catch-up, MariaDB -> Kafka.
# Not a test.
#
#   bench/metrics_bench.sh [RUNS]     (default 5 per mode; medians are printed at the end)
#
# Uses the testenv in the environment (eval "$(scripts/testenv up)") or starts its own, and the
# Release tree of bench/e2e_bench.sh (build-e2e-rel). TB_E2E_ROWS rows (default 1000000, 5-column
# table, 1000-row INSERTs) are written once; then each run is a new connector (its own name and
# topics) that catches up on them from the GTID before the load (snapshot.mode=never), alternating
# metrics off and metrics on (metrics.listen on 127.0.0.1, scraped with curl every second, as
# Prometheus would), in the order off on on off off on ... Time = start to the committed GTID
# (status file) equal to the load's end; CPU = the process's user + system time (/usr/bin/time).
# Prints both per run, the medians of each mode, and the cost. TB_METRICS_PROPS adds properties to
# the metrics-on runs (e.g. "kafka.statistics.interval.ms=0": no librdkafka statistics, which
# metrics.listen otherwise turns on every 5 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
rows=${TB_E2E_ROWS:-1000000}
build=$root/build-e2e-rel

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTB_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target tributary e2e_load >/dev/null
tb=$build/app/tributary
load=$build/bench/e2e_load

own_env=
if [ -z "${TRIBUTARY_TEST_DIR:-}" ]; then
    eval "$("$root/scripts/testenv" up)"
    own_env=1
fi
work=$(mktemp -d /tmp/tributary-metrics-bench.XXXXXX)
run_pid=
scrape_pid=
done_ok=
cleanup() {
    set +e
    [ -n "$scrape_pid" ] && kill "$scrape_pid" 2>/dev/null
    [ -n "$run_pid" ] && kill -TERM "$run_pid" 2>/dev/null && wait "$run_pid"
    [ -n "$own_env" ] && "$root/scripts/testenv" down >/dev/null 2>&1
    if [ -n "$done_ok" ]; then rm -rf "$work"; else echo "kept $work (logs)" >&2; fi
}
trap cleanup EXIT

mysql_q() {
    mariadb -N -B -h "$TRIBUTARY_TEST_MYSQL_HOST" -P "$TRIBUTARY_TEST_MYSQL_PORT" -u "$TRIBUTARY_TEST_MYSQL_USER" \
        -p"$TRIBUTARY_TEST_MYSQL_PASSWORD" -e "$1"
}
now_ms() { date +%s%3N; }
status_gtid() { python3 -c 'import json,sys
try:
    p = json.load(open(sys.argv[1])).get("position") or {}
    print(p.get("gtid") or "")
except Exception:
    print("")' "$1"; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
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
    child=$(pgrep -P "$run_pid" || true)
    kill -TERM "${child:-$run_pid}"; wait "$run_pid"; run_pid=
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
echo "== catch-up of $rows rows, start to last append, medians of $runs runs per mode (alternating)"
echo "metrics off: $off rows/s, CPU $cpu_off s (tributary, user + system, start to stop)"
echo "metrics on, scraped every second: $on rows/s, CPU $cpu_on s"
echo "cost: throughput $(awk -v a="$off" -v b="$on" 'BEGIN { printf "%.1f%%", (1 - b / a) * 100 }'), CPU $(awk -v a="$cpu_off" -v b="$cpu_on" 'BEGIN { printf "%+.1f%%", (b / a - 1) * 100 }')   (target < 2%)"
done_ok=1
