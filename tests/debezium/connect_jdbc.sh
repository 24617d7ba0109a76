#!/usr/bin/env bash
# tests/debezium/connect_jdbc.sh: the Debezium JDBC sink (3.6.0.Final, on Kafka Connect 4.1.0
# standalone) reads tributary's topics (value.encoding=debezium, value.schemas=true,
# key.schemas=true) back into a second database of the testenv MariaDB; after a snapshot and a
# stream of inserts, updates, key changes and deletes on a table of every type with edge values,
# each sink table equals its source table row for row (SELECT of both, compared as text).
# TIME values stay within 00:00:00..23:59:59.999999: the sink writes io.debezium.time.MicroTime
# through java.time.LocalTime and fails on the rest of MariaDB's range (-838:59:59..838:59:59),
# Debezium's own messages included. Then Kafka Streams (4.1.0) KTables over row-format topics of
# both encodings hold exactly the source's keys.
# Needs the testenv variables and the jars of scripts/connect (scripts/deps). Exit 0 = pass.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:?usage: connect_jdbc.sh TRIBUTARY_BINARY}
libs="${TRIBUTARY_CACHE:-${HOME:-/root}/.cache/tributary}/connect-4.1.0/libs"
fail() { echo "connect_jdbc: FAIL: $*" >&2; exit 1; }
for v in TRIBUTARY_TEST_KAFKA TRIBUTARY_TEST_MYSQL_HOST TRIBUTARY_TEST_MYSQL_PORT TRIBUTARY_TEST_MYSQL_USER \
         TRIBUTARY_TEST_MYSQL_PASSWORD; do
  [[ -n "${!v:-}" ]] || fail "$v is not set: run inside eval \"\$(scripts/testenv up)\""
done
[[ -f "$libs/.complete" ]] || fail "no Kafka Connect jars in $libs: run scripts/deps"

id="cj$$_$(date +%s)"
work=$(mktemp -d "/tmp/tb-connect-jdbc.XXXXXX")
src="${id}_src" dst="${id}_dst"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ "${ok:-0}" == 1 ]]; then rm -rf "$work"; else echo "connect_jdbc: logs kept in $work" >&2; fi
}
trap cleanup EXIT
my() {
  MYSQL_PWD="$TRIBUTARY_TEST_MYSQL_PASSWORD" mariadb --protocol=tcp -h "$TRIBUTARY_TEST_MYSQL_HOST" \
    -P "$TRIBUTARY_TEST_MYSQL_PORT" -u "$TRIBUTARY_TEST_MYSQL_USER" --default-character-set=utf8mb4 "$@"
}

my -e "CREATE DATABASE $src CHARACTER SET utf8mb4; CREATE DATABASE $dst CHARACTER SET utf8mb4;"
my "$src" <<'SQL'
SET SESSION time_zone = '+00:00';
CREATE TABLE t (
  id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  c_tinyint TINYINT, c_smallint_u SMALLINT UNSIGNED, c_int INT, c_bigint BIGINT, c_bigint_u BIGINT UNSIGNED,
  c_dec DECIMAL(65,30), c_dec2 DECIMAL(10,2), c_float FLOAT, c_double DOUBLE,
  c_date DATE, c_time TIME, c_time6 TIME(6), c_datetime DATETIME, c_datetime6 DATETIME(6), c_ts6 TIMESTAMP(6) NULL,
  c_year YEAR, c_char CHAR(8), c_varchar VARCHAR(64), c_text TEXT, c_blob BLOB, c_varbinary VARBINARY(16),
  c_enum ENUM('red','green','blue'), c_set SET('a','b','c'), c_bit1 BIT(1), c_bit64 BIT(64)
) ENGINE=InnoDB;
CREATE TABLE u (id INT NOT NULL PRIMARY KEY, d DECIMAL(20,4), dd DATE, tm TIME(6), dt DATETIME(6),
  ts TIMESTAMP(6) NULL, f DOUBLE, s VARCHAR(20), b VARBINARY(8)) ENGINE=InnoDB;
INSERT INTO u VALUES (1, -1234567890123456.7891, '1000-01-01', '00:00:00.001', '1970-01-01 00:00:00.000001',
  '2001-02-03 04:05:06.789', 2.5e-300, 'ü😀', x'00ff'), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO t VALUES
 (1, -128, 0, -2147483648, -9223372036854775808, 0,
  -99999999999999999999999999999999999.999999999999999999999999999999, -99999999.99, -3.40282e38, -1.7976931348623157e308,
  '1000-01-01', '00:00:00', '00:00:00.000000', '1000-01-01 00:00:00', '1000-01-01 00:00:00.000000',
  '1970-01-01 00:00:01.000000', 1901, '', '', '', x'', x'00ff', 'red', '', b'0', b'0'),
 (18446744073709551615, 127, 65535, 2147483647, 9223372036854775807, 18446744073709551615,
  99999999999999999999999999999999999.999999999999999999999999999999, 99999999.99, 3.40282e38, 1.7976931348623157e308,
  '9999-12-31', '23:59:59', '23:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999',
  '2038-01-19 03:14:07.999999', 2155, 'ĀBC😀', '😀 𝄞 ✓ é', 'tab	and "quote"', x'00ff00', x'ffffffff', 'blue', 'a,b,c', b'1',
  b'1111111111111111111111111111111111111111111111111111111111111111'),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL);
SQL

# The sink's MariaDB dialect (Hibernate) caps DECIMAL precision at 38, so a table it creates holds
# DECIMAL(65,30) as decimal(38,30) and refuses the largest values: the target table is created
# with the source's definition; schema.evolution=basic would add any column it lacks.
my -e "CREATE TABLE $dst.t LIKE $src.t"

cat >"$work/tributary.properties" <<EOF
name=$id
source.type=mysql
source.host=$TRIBUTARY_TEST_MYSQL_HOST
source.port=$TRIBUTARY_TEST_MYSQL_PORT
source.user=$TRIBUTARY_TEST_MYSQL_USER
source.password=$TRIBUTARY_TEST_MYSQL_PASSWORD
tables.include=$src[.](t|u)
topic.prefix=$id
kafka.bootstrap.servers=$TRIBUTARY_TEST_KAFKA
offsets.storage=file
offsets.file=$work/offsets
status.file=$work/status.json
value.encoding=debezium
value.schemas=true
key.schemas=true
debezium.bigint.unsigned.handling.mode=precise
EOF
"$bin" run --config "$work/tributary.properties" >"$work/tributary.log" 2>&1 &
pids+=($!)
# Two more connectors on table t, value.format=row (a table-shaped topic), one per encoding, for
# the Kafka Streams KTables at the end.
for enc in tributary debezium; do
  sed -e "s/^name=.*/name=${id}_$enc/" -e "s/^topic.prefix=.*/topic.prefix=${id}_$enc/" \
      -e "s|^offsets.file=.*|offsets.file=$work/offsets.$enc|" -e "s|^status.file=.*|status.file=$work/status.$enc.json|" \
      -e "s/^value.encoding=.*/value.encoding=$enc/" -e "/schemas=/d" -e "/bigint.unsigned/d" \
      -e "s/^tables.include=.*/tables.include=$src[.]t/" "$work/tributary.properties" >"$work/row.$enc.properties"
  echo "value.format=row" >>"$work/row.$enc.properties"
  "$bin" run --config "$work/row.$enc.properties" >"$work/row.$enc.log" 2>&1 &
  pids+=($!)
done

cat >"$work/worker.properties" <<EOF
bootstrap.servers=$TRIBUTARY_TEST_KAFKA
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.file.filename=$work/connect.offsets
offset.flush.interval.ms=1000
plugin.discovery=service_load
listeners=http://127.0.0.1:0
EOF
cat >"$work/sink.properties" <<EOF
name=$id-jdbc
connector.class=io.debezium.connector.jdbc.JdbcSinkConnector
tasks.max=1
topics.regex=$id[.]$src[.].*
connection.url=jdbc:mariadb://$TRIBUTARY_TEST_MYSQL_HOST:$TRIBUTARY_TEST_MYSQL_PORT/$dst?nullDatabaseMeansCurrent=true
connection.username=$TRIBUTARY_TEST_MYSQL_USER
connection.password=$TRIBUTARY_TEST_MYSQL_PASSWORD
insert.mode=upsert
primary.key.mode=record_key
delete.enabled=true
schema.evolution=basic
collection.name.format=\${source.table}
consumer.override.auto.offset.reset=earliest
EOF
java -Xmx512m -Djava.io.tmpdir="$work" -cp "$libs/*" org.apache.kafka.connect.cli.ConnectStandalone \
  "$work/worker.properties" "$work/sink.properties" >"$work/connect.log" 2>&1 &
pids+=($!)

rows() { my -N -B -e "SET time_zone='+00:00'; SELECT * FROM $1 ORDER BY id" 2>&1; }
same() { # true when each sink table equals its source table, row for row
  local tb a b
  for tb in t u; do
    a=$(rows "$src.$tb") && b=$(rows "$dst.$tb") && [[ "$a" == "$b" ]] || return 1
  done
}
wait_same() { # $1: what
  local deadline=$((SECONDS + 90))
  until same; do
    (( SECONDS < deadline )) || {
      diff <(rows "$src.t"; rows "$src.u") <(rows "$dst.t"; rows "$dst.u") >&2 || true
      grep -E "ERROR|Exception" "$work/connect.log" | head -20 >&2 || true
      fail "$1: the sink's table differs from the source after 90 s"
    }
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "a process stopped early (logs in $work)"; done
    sleep 0.5
  done
  echo "connect_jdbc: $1: sink equals source" >&2
}
wait_same "snapshot"
# the table the sink created (schema.evolution=basic) has sensible column types
types=$(my -N -B -e "SELECT GROUP_CONCAT(CONCAT(COLUMN_NAME, ' ', DATA_TYPE) ORDER BY ORDINAL_POSITION)
  FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$dst' AND TABLE_NAME = 'u'")
want="id int,d decimal,dd date,tm time,dt datetime,ts timestamp,f double,s longtext,b longblob"
[[ "$types" == "$want" ]] || fail "sink table types: $types, want $want"

my "$src" <<'SQL'
SET SESSION time_zone = '+00:00';
UPDATE u SET d = 0.0001, s = NULL WHERE id = 1;
UPDATE u SET id = 3, tm = '23:59:59.999' WHERE id = 2;
INSERT INTO t (id, c_int, c_varchar, c_dec, c_datetime6) VALUES (4, 4, 'four', 0.000000000000000000000000000001, '1969-12-31 23:59:59.999999');
UPDATE t SET c_int = 42, c_varchar = 'updated ✓', c_dec2 = -0.5, c_set = 'b', c_blob = NULL WHERE id = 1;
UPDATE t SET c_text = NULL, c_bit64 = b'1', c_time = '12:34:56' WHERE id = 18446744073709551615;
UPDATE t SET id = 44 WHERE id = 4;
DELETE FROM t WHERE id = 3;
START TRANSACTION;
DELETE FROM t WHERE id = 1;
INSERT INTO t (id, c_int, c_date) VALUES (1, 1, '2025-05-05');
COMMIT;
SQL
wait_same "inserts, updates, key change, deletes"

# Kafka Streams: a KTable over each row-format topic holds exactly the source's keys (the deletes,
# the tombstones and the key change applied), each with its row.
for enc in tributary debezium; do
  my -N -B -e "SELECT id FROM $src.t ORDER BY id" | while read -r k; do
    # Debezium's bigint.unsigned.handling.mode=long (the default) writes 2^64-1 as -1
    [[ "$enc" == debezium && "$k" == 18446744073709551615 ]] && k=-1
    printf '{"id":%s}\n' "$k"
  done >"$work/keys.$enc"
  java -Xmx256m -Djava.io.tmpdir="$work" -cp "$libs/*" "$here/KTableDump.java" "$TRIBUTARY_TEST_KAFKA" "${id}_$enc.$src.t" "${id}_ks_$enc" \
    "$work/streams.$enc" "$work/keys.$enc" >"$work/ktable.$enc" 2>"$work/streams.$enc.log" ||
    fail "KTable over ${id}_$enc.$src.t: $(tail -1 "$work/streams.$enc.log")"
  n=$(grep -c '"id":' "$work/ktable.$enc")
  [[ "$n" == "$(wc -l <"$work/keys.$enc")" ]] || fail "KTable ($enc): $n rows with an id, want $(wc -l <"$work/keys.$enc")"
  echo "connect_jdbc: KTable over the $enc-encoded topic equals the source's keys" >&2
done
ok=1
echo "connect_jdbc: PASS" >&2
