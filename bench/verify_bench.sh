#!/usr/bin/env bash
# bench/verify_bench.sh: `tributary verify` of a 1M-row table against its topic, beside a naive
# baseline (the table dumped sorted with the mariadb client, the topic dumped with kcat and reduced to
# the last value per key by a Python script, then diff).
#
#   bench/verify_bench.sh [RUNS] [ROWS]
#
# RUNS (default 3) runs of each, interleaved; ROWS (default 1000000). Uses the testenv in the
# environment (TRIBUTARY_TEST_*), or starts one. Builds tributary as a Release tree
# (build-bench-verify, or TB_BENCH_BUILD_DIR). The topic is filled once by `tributary run` with
# snapshot.mode=initial_only. Reports medians of wall time, CPU time (user + system, children
# included) and peak RSS (the largest process of the pipeline, /usr/bin/time %M), and the load
# average. Goals: faster than the baseline, RSS under 64 MiB (verify.memory.max.bytes bounds the
# digest map; a larger table is compared in hash partitions on disk, DESIGN 10a).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
runs="${1:-3}"
rows="${2:-1000000}"
bench_setup verify
bench_build tributary
bin="$build/app/tributary"

name="vbench$$"
mysql_q "CREATE DATABASE $name;
         CREATE TABLE $name.t (id BIGINT NOT NULL PRIMARY KEY, a INT NOT NULL, b VARCHAR(32) NOT NULL,
                               c DOUBLE NOT NULL, d DATETIME NOT NULL) ENGINE=InnoDB;
         INSERT INTO $name.t SELECT seq, seq % 100000, MD5(seq), seq / 7, '2024-01-01' + INTERVAL seq SECOND
           FROM $name.seq_1_to_$rows"
cat >"$work/run.properties" <<EOF
name=$name
source.type=mysql
source.host=$TRIBUTARY_TEST_MYSQL_HOST
source.port=$TRIBUTARY_TEST_MYSQL_PORT
source.user=$TRIBUTARY_TEST_MYSQL_USER
source.password=$TRIBUTARY_TEST_MYSQL_PASSWORD
tables.include=^$name[.]
topic.prefix=$name
kafka.bootstrap.servers=$brokers
offsets.storage=kafka
snapshot.mode=initial_only
ha.enabled=false
status.file=$work/status.json
EOF
topic="$name.$name.t"
echo "verify_bench: snapshot of $rows rows into $topic" >&2
"$bin" run --config "$work/run.properties" >"$work/run.log" 2>&1

cat >"$work/lastper.py" <<'EOF'
import json, sys
rows = {}
for line in sys.stdin.buffer:
    key, _, value = line.rstrip(b"\n").partition(b"\t")
    if not value:
        rows.pop(key, None)
        continue
    a = json.loads(value)["after"]
    if a is None:
        rows.pop(key, None)
    else:
        rows[key] = a
for a in rows.values():
    print("%d\t%d\t%s\t%r\t%s" % (a["id"], a["a"], a["b"], a["c"], a["d"].replace("T", " ")))
EOF
cat >"$work/baseline.sh" <<EOF
set -e
mariadb -N -B -h $TRIBUTARY_TEST_MYSQL_HOST -P $TRIBUTARY_TEST_MYSQL_PORT -u $TRIBUTARY_TEST_MYSQL_USER \
  -p$TRIBUTARY_TEST_MYSQL_PASSWORD -e "SELECT id, a, b, c, d FROM $name.t" | LC_ALL=C sort >"$work/src.tsv"
kcat -C -b $brokers -t $topic -e -q -f '%k\t%s\n' | python3 "$work/lastper.py" | LC_ALL=C sort >"$work/topic.tsv"
diff "$work/src.tsv" "$work/topic.tsv" | grep -c '^[<>]' >"$work/baseline.diffs" || true
EOF

measure() { # label command... -> "wall cpu rss_kb"
  /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "${@:2}" >"$work/$1.out" 2>"$work/$1.err" || true
  awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$work/time.txt"
}

: >"$work/verify.txt"
: >"$work/baseline.txt"
for ((i = 0; i < runs; i++)); do
  # --wait-ms 0: the connector (initial_only) has stopped after its snapshot; other writers on a
  # shared server move the source position, which verify would otherwise wait for (60 s)
  measure verify "$bin" verify --config "$work/run.properties" --json --wait-ms 0 >>"$work/verify.txt"
  measure baseline bash "$work/baseline.sh" >>"$work/baseline.txt"
done
grep -q '"equal":true' "$work/verify.out" || { echo "verify_bench: verify did not find the topic equal" >&2; cat "$work/verify.err" >&2; exit 1; }
col() { awk -v c="$1" '{ print $c }' "$2" | median; }
{
printf 'verify_bench: %d rows, %d runs each (medians)      wall s   CPU s   peak RSS MiB\n' "$rows" "$runs"
printf '  tributary verify --against topics   %7.2f %7.2f %8.1f\n' "$(col 1 "$work/verify.txt")" \
  "$(col 2 "$work/verify.txt")" "$(echo "$(col 3 "$work/verify.txt") / 1024" | bc -l)"
printf '  baseline (mariadb|sort, kcat|py|sort, diff) %7.2f %7.2f %8.1f   (%s differing lines)\n' \
  "$(col 1 "$work/baseline.txt")" "$(col 2 "$work/baseline.txt")" \
  "$(echo "$(col 3 "$work/baseline.txt") / 1024" | bc -l)" "$(cat "$work/baseline.diffs")"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
} | bench_summary verify_bench
mysql_q "DROP DATABASE $name"
bench_ok=1
