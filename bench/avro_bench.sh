#!/usr/bin/env bash
# bench/avro_bench.sh: the cost of Avro (DESIGN 4b) against JSON, `tributary run` end to end,
# MariaDB -> Kafka. Not a test.
#
#   bench/avro_bench.sh [RUNS]       (default 3; medians are printed at the end)
#
# Uses the testenv in the environment when it has a schema registry (eval "$(scripts/testenv up
# --registry)"), otherwise starts its own with one. Builds a Release tree in build-bench-avro
# (TB_BENCH_BUILD_DIR; set-up in bench/lib.sh). Per round, with a fresh database:
#  1. two connectors on the same database, one with key.converter=value.converter=avro
#     (schema.registry.url) and one with the JSON defaults, each with its own name and topics
#     (pre-created with message.timestamp.type=LogAppendTime), take their (empty) snapshot and stop;
#  2. ROWS rows of a 5-column table are written (1000-row INSERTs, one transaction each) while
#     both are stopped (bench/e2e_load.c, as bench/e2e_bench.sh);
#  3. each connector in turn (JSON first in odd rounds, Avro first in even ones) is started under
#     /usr/bin/time and stopped once its committed GTID (status file) equals @@gtid_binlog_pos:
#     rows/s = rows / (broker append time of the last message - start time); CPU = user + system
#     time of /usr/bin/time; bytes = key + value bytes of the table's topic (every message read
#     back: e2e_load size; the count must equal ROWS).
# The schema is registered once per Avro run (the first message); the rest is the per-message
# cost: render the Connect JSON, parse it, encode the Avro body.
# Prints the load average (uptime) before and after, the medians of each encoding and the ratio
# Avro/JSON of each figure.
# Environment: TB_AVRO_ROWS (1000000), TB_AVRO_KAFKA_PROPS (extra connector properties, both runs).
#
# Figures: docs/STATUS.md (Benchmarks) and bench/RESULTS.md list the latest with this command.
set -euo pipefail
runs=${1:-3}
rows=${TB_AVRO_ROWS:-1000000}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ -z "${TRIBUTARY_TEST_KAFKA:-}" ]]; then
    export TRIBUTARY_TESTENV_REGISTRY=1 # bench_setup's own testenv: with the registry
elif [[ -z "${TRIBUTARY_TEST_REGISTRY_URL:-}" ]]; then
    echo "avro_bench: the testenv in the environment has no schema registry (scripts/testenv up --registry)" >&2
    exit 2
fi
bench_keep_work=1
bench_setup avro
bench_build tributary e2e_load
tb=$build/app/tributary
load=$build/bench/e2e_load
registry=$TRIBUTARY_TEST_REGISTRY_URL


# config TAG DB I: the properties of connector TAG (json or avro) on database DB in round I;
# the connector's name on stdout
config() {
    local tag=$1 db=$2 i=$3 name=${2}_$1 sid
    local cfg=$work/$name.properties
    sid=$((7100 + 2 * i))
    [[ $tag == avro ]] && sid=$((sid + 1))
    cat > "$cfg" <<PROPS
name=$name
source.type=mysql
source.host=$TRIBUTARY_TEST_MYSQL_HOST
source.port=$TRIBUTARY_TEST_MYSQL_PORT
source.user=$TRIBUTARY_TEST_MYSQL_USER
source.password=$TRIBUTARY_TEST_MYSQL_PASSWORD
source.server.id=$sid
tables.include=^$db[.]
topic.prefix=$name
kafka.bootstrap.servers=$TRIBUTARY_TEST_KAFKA
offsets.storage=kafka
status.file=$work/$name.status.json
snapshot.mode=initial
log.level=warn
PROPS
    if [[ $tag == avro ]]; then
        printf 'key.converter=avro\nvalue.converter=avro\nschema.registry.url=%s\n' "$registry" >> "$cfg"
    fi
    for kv in ${TB_AVRO_KAFKA_PROPS:-}; do echo "$kv" >> "$cfg"; done
    echo "$name"
}

# catch_up TAG DB I: the catch-up of connector TAG over the rows written, a line of figures
# appended to $work/results.TAG
catch_up() {
    local tag=$1 db=$2 i=$3 name=${2}_$1
    local cfg=$work/$name.properties
    t0=$(now_ms)
    /usr/bin/time -v -o "$work/$name.time" "$tb" run --config "$cfg" 2>>"$work/$name.log" & run_pid=$!
    wait_caught_up "$work/$name.status.json" 900
    stop_run
    size=$("$load" size "$TRIBUTARY_TEST_KAFKA" "$name.$db.bulk")
    cpu_s=$(awk -F: '/User time|System time/ { gsub(/ /, "", $2); s += $2 } END { printf "%.2f", s }' "$work/$name.time")
    last=$(sed -E 's/.*last_append_ms=([0-9]+).*/\1/' <<<"$size")
    count=$(sed -E 's/.*count=([0-9]+).*/\1/' <<<"$size")
    kb=$(sed -E 's/.*key_bytes=([0-9]+).*/\1/' <<<"$size")
    vb=$(sed -E 's/.*value_bytes=([0-9]+).*/\1/' <<<"$size")
    [ "$count" = "$rows" ] || { echo "round $i ($tag): $count messages on the topic, want $rows" >&2; exit 1; }
    rps=$(awk -v r="$rows" -v a="$t0" -v b="$last" 'BEGIN { printf "%.0f", r / ((b - a) / 1000) }')
    echo "round $i ($tag): $rows rows in $((last - t0)) ms from the start ($rps rows/s), CPU ${cpu_s} s, on the topic: keys $kb bytes, values $vb bytes ($(((kb + vb) / rows)) bytes a message)" >&2
    echo "$rps $cpu_s $((kb + vb)) $kb $vb" >> "$work/results.$tag"
    if grep -qE "ERROR|WARN" "$work/$name.log"; then echo "round $i ($tag) log:" >&2; grep -E "ERROR|WARN" "$work/$name.log" | head -5 >&2; fi
}

echo "load before: $(uptime)" >&2
load_before=$(uptime | sed -E 's/.*load average: //')
: > "$work/results.json"
: > "$work/results.avro"
for i in $(seq 1 "$runs"); do
    db=avb_$$_$i
    mysql_q "CREATE DATABASE $db"
    "$load" bulk "$db" bulk 0 1 >/dev/null
    for tag in json avro; do
        name=$(config "$tag" "$db" "$i")
        "$load" topic "$TRIBUTARY_TEST_KAFKA" "$name.$db.bulk"
        "$tb" run --config "$work/$name.properties" 2>>"$work/$name.log" & run_pid=$!
        wait_caught_up "$work/$name.status.json" 60
        stop_run
    done
    "$load" bulk "$db" bulk "$rows" 1000 >&2
    if ((i % 2)); then order=(json avro); else order=(avro json); fi
    for tag in "${order[@]}"; do catch_up "$tag" "$db" "$i"; done
done
echo "load after: $(uptime)" >&2
load_after=$(uptime | sed -E 's/.*load average: //')

{
echo "== tributary run, MariaDB -> Kafka, Avro (key and value, schema registry) vs JSON, medians of $runs rounds (rows=$rows; load average before: $load_before, after: $load_after)"
for tag in json avro; do
    r="$work/results.$tag"
    echo "$tag: catch-up rows/s (start to last append) $(col "$r" 1), CPU s $(col "$r" 2), bytes on the topic $(col "$r" 3) (keys $(col "$r" 4), values $(col "$r" 5); $(awk -v b="$(col "$r" 3)" -v n="$rows" 'BEGIN { printf "%.1f", b / n }') a message)"
done
echo "== Avro / JSON (medians)"
for spec in "1:catch-up rows/s" "2:CPU s" "3:bytes on the topic" "5:value bytes"; do
    n=${spec%%:*}
    awk -v a="$(col "$work/results.avro" "$n")" -v b="$(col "$work/results.json" "$n")" -v w="${spec#*:}" \
        'BEGIN { printf "%-22s %s / %s = %.2f\n", w ":", a, b, (b > 0 ? a / b : 0) }'
done
} | bench_summary avro_bench
bench_ok=1
