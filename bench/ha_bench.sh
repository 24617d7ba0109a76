#!/usr/bin/env bash
# bench/ha_bench.sh: takeover time of a standby (DESIGN 12). Not a test.
#
#   bench/ha_bench.sh [RUNS]        (default 10; the median is printed at the end)
#
# Uses the testenv in the environment (eval "$(scripts/testenv up)") or starts its own, and a
# Release build (TB_BENCH_BUILD_DIR, default build-bench-ha). Per run, with a fresh database and
# connector name and the default lease settings (ha.takeover.ms=15000: session timeout 6 s):
#  1. instance A starts and streams; instance B starts and reports "standby" in its status file;
#  2. a writer inserts a row about every 50 ms into the captured table;
#  3. A is killed with SIGKILL at time K (wall clock ms, taken just before the kill);
#  4. once B streams and has caught up, the writer stops; the table's topic is read with kcat:
#     takeover = (CreateTime of the first message stamped after K) - K. Every message stamped
#     after K comes from B (A is dead; the sink stamps a message when it hands it to its Kafka
#     client). The resolution is the writer's interval (~50 ms).
# Prints one line per run and "median takeover_ms=N over RUNS runs".
#
# Measured 2026-12-01 on the shared 2-core machine (Release, testenv MariaDB 10.11 + Kafka 4.1):
#   median takeover_ms=7152 over 10 runs (6247 .. 7852): the 6 s session timeout, up to one
#   1 s heartbeat for the standby to learn of the rebalance, then its start-up.
set -euo pipefail
runs=${1:-10}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup ha

bench_build tributary
tb=$build/app/tributary

my() { mariadb -h "$TRIBUTARY_TEST_MYSQL_HOST" -P "$TRIBUTARY_TEST_MYSQL_PORT" -u "$TRIBUTARY_TEST_MYSQL_USER" \
  -p"$TRIBUTARY_TEST_MYSQL_PASSWORD" -N -B "$@"; }
# wait_for FILE PATTERN SECONDS
wait_for() {
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    if ((SECONDS >= deadline)); then echo "ha_bench: no '$2' in $1 after $3 s" >&2; return 1; fi
    sleep 0.05
  done
}
gtid_seq() { sed -n 's/.*"position":{[^}]*"gtid":"[^"]*-\([0-9]*\)".*/\1/p' "$1"; }

results=()
for run in $(seq 1 "$runs"); do
  name="ha_bench_$$_$run"
  dir="$work/$run"
  mkdir -p "$dir"
  my -e "DROP DATABASE IF EXISTS $name; CREATE DATABASE $name; CREATE TABLE $name.t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)"
  cat >"$dir/c.properties" <<EOF
name=$name
source.host=$TRIBUTARY_TEST_MYSQL_HOST
source.port=$TRIBUTARY_TEST_MYSQL_PORT
source.user=$TRIBUTARY_TEST_MYSQL_USER
source.password=$TRIBUTARY_TEST_MYSQL_PASSWORD
tables.include=$name[.].*
topic.prefix=$name
kafka.bootstrap.servers=$brokers
EOF
  "$tb" run --config "$dir/c.properties" --set status.file="$dir/a.json" >"$dir/a.log" 2>&1 &
  a=$!
  wait_for "$dir/a.json" '"state":"streaming"' 60
  "$tb" run --config "$dir/c.properties" --set status.file="$dir/b.json" >"$dir/b.log" 2>&1 &
  b=$!
  wait_for "$dir/b.json" '"state":"standby"' 60
  ( while :; do my -e "INSERT INTO $name.t (v) VALUES (1)"; sleep 0.05; done ) &
  writer=$!
  sleep 1 # A streams the writer's rows for a moment: the kill hits a busy stream
  k=$(now_ms)
  kill -KILL "$a"
  wait "$a" 2>/dev/null || true
  wait_for "$dir/b.json" '"state":"streaming"' 60
  sleep 1
  kill "$writer"
  wait "$writer" 2>/dev/null || true
  want=$(my -e "SELECT @@global.gtid_binlog_pos" | sed 's/.*-//')
  deadline=$((SECONDS + 60))
  until [[ "$(gtid_seq "$dir/b.json")" -ge "$want" ]] 2>/dev/null; do
    ((SECONDS < deadline)) || { echo "ha_bench: B did not catch up" >&2; exit 1; }
    sleep 0.1
  done
  first=$(kcat -C -b "$brokers" -t "$name.$name.t" -o beginning -e -q -f '%T\n' | awk -v k="$k" '$1 > k' | sort -n | head -1)
  kill -TERM "$b"
  wait "$b" || true
  if [[ -z "$first" ]]; then echo "ha_bench: run $run: no message after the kill" >&2; exit 1; fi
  ms=$((first - k))
  echo "run $run: takeover_ms=$ms"
  results+=("$ms")
done
median=$(printf '%s\n' "${results[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}')
echo "median takeover_ms=$median over $runs runs" | bench_summary ha_bench
