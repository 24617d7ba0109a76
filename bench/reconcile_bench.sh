#!/usr/bin/env bash
# bench/reconcile_bench.sh: the reconcile step after a resnapshot (DESIGN 6a).
#
#   bench/reconcile_bench.sh [RUNS] [ROWS]
#
# A table of ROWS rows (default 1000000) is snapshotted into its topic by `tributary run`; then,
# in each of RUNS rounds (default 3): 10% of the rows are deleted without row events
# (sql_log_bin=0: the topic cannot know), the binlog is purged, and `tributary run` with
# snapshot.mode=when_needed snapshots the table again; its reconcile step reads the topic
# (ROWS + the earlier rounds' records) and deletes the 10% of keys the table lost. The rows are
# inserted back (streamed) before the next round. Reports, medians over the rounds: the reconcile
# step's time (from its log line), the keys it deleted, and the peak RSS of the whole run
# (snapshot included: /usr/bin/time). Release build in build-bench-reconcile (TB_BENCH_BUILD_DIR).
# Uses the testenv in the environment (TRIBUTARY_TEST_*) or starts one.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
runs="${1:-3}"
rows="${2:-1000000}"
bench_setup reconcile
bench_build tributary
bin="$build/app/tributary"
db="rcbench$$"
cfg="$work/run.properties"
cat >"$cfg" <<CFG
name=$db
source.type=mysql
source.host=$TRIBUTARY_TEST_MYSQL_HOST
source.port=$TRIBUTARY_TEST_MYSQL_PORT
source.user=$TRIBUTARY_TEST_MYSQL_USER
source.password=$TRIBUTARY_TEST_MYSQL_PASSWORD
tables.include=^$db[.]
topic.prefix=$db
kafka.bootstrap.servers=$brokers
offsets.storage=kafka
offsets.commit.interval.ms=200
status.file=$work/status.json
snapshot.mode=when_needed
heartbeat.interval.ms=200
source.heartbeat.interval.ms=500
CFG

caught_up() { # wait until the committed GTID is the server's
  local want deadline=$(( $(now_ms) + 600000 ))
  while :; do
    want=$(mysql_q "SELECT @@global.gtid_binlog_pos")
    [[ "$(status_gtid "$work/status.json")" == "$want" ]] && return 0
    (( $(now_ms) < deadline )) || { echo "not caught up" >&2; return 1; }
    sleep 0.2
  done
}

purge() {
  mysql_q "FLUSH BINARY LOGS"
  local cur
  for _ in $(seq 1 150); do
    cur=$(mysql_q "SHOW MASTER STATUS" | cut -f1)
    mysql_q "PURGE BINARY LOGS TO '$cur'"
    [[ "$(mysql_q "SHOW BINARY LOGS" | head -1 | cut -f1)" == "$cur" ]] && return 0
    sleep 0.2
  done
  echo "binlogs not purged" >&2
  return 1
}

mysql_q "CREATE DATABASE $db"
mysql_q "CREATE TABLE $db.t (id BIGINT PRIMARY KEY, a INT NOT NULL, b VARCHAR(32) NOT NULL)"
mysql_q "CREATE TABLE $db.side (id INT PRIMARY KEY)"
mysql_q "INSERT INTO $db.t SELECT seq, seq % 1000, CONCAT('row-', seq) FROM $db.seq_1_to_$rows"
"$bin" run --config "$cfg" >"$work/first.log" 2>&1 &
run_pid=$!
caught_up
stop_run

: >"$work/ms"; : >"$work/rss"; : >"$work/keys"
for round in $(seq 1 "$runs"); do
  mysql_q "SET SESSION sql_log_bin = 0; DELETE FROM $db.t WHERE id % 10 = $((round % 10))"
  # a logged transaction the stopped connector has not read, purged with its binlog: its
  # stored GTID is then gone from the server (with none, the server still serves from it)
  mysql_q "INSERT INTO $db.side VALUES ($round)"
  purge
  log="$work/round$round.log"
  /usr/bin/time -v "$bin" run --config "$cfg" >"$log" 2>&1 &
  run_pid=$!
  caught_up
  # the rows back, streamed, for the next round
  mysql_q "INSERT INTO $db.t SELECT seq, seq % 1000, CONCAT('row-', seq) FROM $db.seq_1_to_$rows WHERE seq % 10 = $((round % 10))"
  caught_up
  stop_run
  line=$(grep "$db.t: reconcile after snapshot: [0-9]* key(s)" "$log" | tail -1)
  echo "$line" | sed -n 's/.*, \([0-9]*\) ms$/\1/p' >>"$work/ms"
  echo "$line" | sed -n 's/.*: \([0-9]*\) key(s) its topic held.*/\1/p' >>"$work/keys"
  sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$log" >>"$work/rss"
  echo "round $round: reconcile $(tail -1 "$work/ms") ms, $(tail -1 "$work/keys") keys deleted, peak RSS $(tail -1 "$work/rss") kB" >&2
done
mysql_q "DROP DATABASE $db"
{
echo "reconcile of a $rows-key topic, 10% of the keys gone at the source, medians of $runs (load: $(cut -d' ' -f1-3 /proc/loadavg)):"
echo "  reconcile step: $(median <"$work/ms") ms, $(median <"$work/keys") keys deleted"
echo "  peak RSS of the run (snapshot + reconcile): $(( $(median <"$work/rss") / 1024 )) MB"
} | bench_summary reconcile_bench
bench_ok=1
