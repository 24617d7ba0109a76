/*
 * MySQL/MariaDB statements and types through the built tributary against the
 * testenv MariaDB and Kafka (docs/statements.md), each checked by comparing
 * the source, the topic read as a KTable and the cache built from it.
 *
 * xa: XA transactions (capture/mysql/binlog_xa.c). Rows of an XA
 * transaction reach the topic once, at XA COMMIT, never after XA ROLLBACK,
 * also when the connector is killed (kill -9) between XA PREPARE and XA
 * COMMIT / ROLLBACK and restarted; XA COMMIT ... ONE PHASE is an ordinary
 * transaction.
 *
 * keyless_created: tables without a key created while streaming (CREATE
 * TABLE, CREATE TABLE ... AS SELECT) are refused as at start: an ERROR
 * naming each with the fix, their events counted in
 * tributary_events_skipped_total{reason="no_key"} and never sent (no topic,
 * no null key); one named by key.columns is keyed by it; the other tables go
 * on, and the cache built from the topics equals the source.
 *
 * sequences_not_captured: MariaDB SEQUENCEs (at start and created while
 * streaming) are named once at INFO as not captured, their row events
 * counted under reason sequence, never sent, never the keyless ERROR.
 *
 * oversize_metrics: messages over kafka.message.max.bytes under
 * oversize.policy=dlq and =skip are counted in
 * tributary_events_dead_lettered_total / tributary_events_skipped_total
 * {reason="oversize"}, not in tributary_events_total; the dead-letter topic
 * holds one record per dead-lettered message.
 *
 * text_types: MariaDB UUID, INET6 and INET4 columns (logged as BINARY(16) /
 * BINARY(4)) carry their text form from the snapshot and from the binlog, in
 * value.encoding=tributary and debezium, under one schema record (type char,
 * source_type uuid/inet6/inet4); topic and cache equal the source.
 *
 * case_variant_tables: source tables whose names differ only in case
 * (`Orders` and `orders`, which SQLite cannot hold apart) beside an ordinary
 * one, snapshotted and streamed, the cache killed and resumed: every table is
 * cached (one under its own name, the other under the documented mapped name
 * docs/cache.md gives, recorded in _tributary_tables with its topic), each
 * equals its source table, and `cache get` finds a row by either source name.
 *
 * idle_source_sends_at_once: with kafka.linger.ms at two minutes, rows written one by one to
 * an idle source reach their topic at once (the run pushes what the sink holds before it waits
 * for its source); topic and cache equal the source.
 *
 * system_versioned: MariaDB tables WITH SYSTEM VERSIONING (implicit and
 * explicit TIMESTAMP(6) periods), at start and created while streaming: topic
 * and cache hold the current rows keyed by the declared key, history rows and
 * DELETE HISTORY are no changes, a DELETE is a delete; tributary verify exits
 * 0. A transaction-precise table (which MariaDB logs as statements) stops the
 * run at its first change with an error that says so.
 */
#include "e2e_tables.h"

/* Records in topic whose key is key_json (values, not tombstones); key_json
 * NULL: every record. 0 when the topic does not exist. */
static size_t records_with_key(const char *topic, const char *key_json)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", "e2e-mysql", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    cr_assert_eq(rd_kafka_metadata(rk, 0, rkt, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    size_t n = 0;
    if (md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) { /* not created yet */
        rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
        return 0;
    }
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
    for (int p = 0; p < md->topics[0].partition_cnt; p++)
        rd_kafka_topic_partition_list_add(parts, topic, md->topics[0].partitions[p].id)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    cr_assert_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    json_error_t je;
    json_t *want = key_json ? json_loads(key_json, 0, &je) : NULL;
    cr_assert(!key_json || want);
    long long deadline = tb_itest_now_ms() + 60000;
    for (int left = parts->cnt; left > 0;) {
        cr_assert(tb_itest_now_ms() < deadline, "topic %s not read to its end in 60 s", topic);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rd_kafka_message_destroy(m);
            left--;
            continue;
        }
        cr_assert(!m->err, "consume %s: %s", topic, rd_kafka_message_errstr(m));
        json_t *k = m->key ? json_loadb(m->key, m->key_len, 0, &je) : NULL;
        if (!want || (k && m->payload && json_equal(k, want)))
            n++;
        json_decref(k);
        rd_kafka_message_destroy(m);
    }
    json_decref(want);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return n;
}

/* Wait until topic holds a record with key key_json. */
static void wait_key(const st_run *r, const char *topic, const char *key_json)
{
    long long deadline = tb_itest_now_ms() + 60000;
    while (records_with_key(topic, key_json) == 0) {
        cr_assert_eq(e2e_wait(r->pid, 0), -2, "tributary run stopped early; see %s", r->log);
        cr_assert(tb_itest_now_ms() < deadline, "no record %s in %s in 60 s; see %s", key_json, topic, r->log);
        usleep(100000);
    }
}

static void kill9_restart(st_run *r)
{
    kill(r->pid, SIGKILL);
    cr_assert_eq(e2e_wait(r->pid, 10000), -1);
    st_start(r);
}

Test(e2e_mysql, xa, .timeout = 300, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2exa", NULL);
    MYSQL *m = e2e_mysql(), *m2 = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "t", "snap", 5);
    st_table(m, r.db, "u", "snap", 3);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.t", r.db, r.db);

    /* prepared and committed, rolled back, one phase: without a restart */
    MYSQL *ma = e2e_mysql();
    e2e_sql(ma, "XA START '%s-a'", r.db);
    e2e_sql(ma, "INSERT INTO %s.t VALUES (10, 'xa-a', 10)", r.db);
    e2e_sql(ma, "UPDATE %s.t SET v = 'xa-a' WHERE id = 1", r.db);
    e2e_sql(ma, "UPDATE %s.u SET n = 100 WHERE id = 1", r.db);
    e2e_sql(ma, "XA END '%s-a'", r.db);
    e2e_sql(ma, "XA PREPARE '%s-a'", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (11, 'between', 11)", r.db); /* another transaction in between */
    e2e_sql(m2, "XA START '%s-b',X'71',7", r.db);
    e2e_sql(m2, "INSERT INTO %s.t VALUES (12, 'xa-b rolled back', 12)", r.db);
    e2e_sql(m2, "DELETE FROM %s.t WHERE id = 2", r.db);
    e2e_sql(m2, "XA END '%s-b',X'71',7", r.db);
    e2e_sql(m2, "XA PREPARE '%s-b',X'71',7", r.db);
    e2e_sql(ma, "XA COMMIT '%s-a'", r.db);
    mysql_close(ma);
    e2e_sql(m2, "XA ROLLBACK '%s-b',X'71',7", r.db);
    e2e_sql(m, "XA START '%s-c'", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (13, 'one phase', 13)", r.db);
    e2e_sql(m, "XA END '%s-c'", r.db);
    e2e_sql(m, "XA COMMIT '%s-c' ONE PHASE", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);

    /* prepared, then the connector is killed and restarted, then XA COMMIT */
    e2e_sql(m2, "XA START '%s-d'", r.db);
    e2e_sql(m2, "INSERT INTO %s.t VALUES (20, 'xa-d', 20)", r.db);
    e2e_sql(m2, "UPDATE %s.t SET n = 300 WHERE id = 3", r.db);
    e2e_sql(m2, "XA END '%s-d'", r.db);
    e2e_sql(m2, "XA PREPARE '%s-d'", r.db);
    mysql_close(m2); /* the prepared transaction outlives its session */
    e2e_sql(m, "INSERT INTO %s.t VALUES (30, 'after prepare d', 30)", r.db);
    wait_key(&r, topic, "{\"id\":30}");
    cr_expect_eq(records_with_key(topic, "{\"id\":20}"), 0, "a prepared row was sent before its XA COMMIT");
    kill9_restart(&r);
    e2e_sql(m, "INSERT INTO %s.t VALUES (31, 'after restart', 31)", r.db);
    wait_key(&r, topic, "{\"id\":31}");
    cr_expect_eq(records_with_key(topic, "{\"id\":20}"), 0, "a prepared row was sent before its XA COMMIT");
    e2e_sql(m, "XA COMMIT '%s-d'", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);

    /* prepared, killed, restarted, then XA ROLLBACK */
    m2 = e2e_mysql();
    e2e_sql(m2, "XA START '%s-e'", r.db);
    e2e_sql(m2, "INSERT INTO %s.t VALUES (40, 'xa-e rolled back', 40)", r.db);
    e2e_sql(m2, "DELETE FROM %s.t WHERE id = 4", r.db);
    e2e_sql(m2, "XA END '%s-e'", r.db);
    e2e_sql(m2, "XA PREPARE '%s-e'", r.db);
    mysql_close(m2);
    e2e_sql(m, "INSERT INTO %s.t VALUES (41, 'after prepare e', 41)", r.db);
    wait_key(&r, topic, "{\"id\":41}");
    kill9_restart(&r);
    e2e_sql(m, "XA ROLLBACK '%s-e'", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (42, 'after rollback e', 42)", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);

    cr_expect_eq(records_with_key(topic, "{\"id\":10}"), 1, "the row of XA 'a' was not sent once");
    cr_expect_eq(records_with_key(topic, "{\"id\":12}"), 0, "a row of a rolled-back XA transaction was sent");
    cr_expect_eq(records_with_key(topic, "{\"id\":20}"), 1, "the row of XA 'd' was not sent once");
    cr_expect_eq(records_with_key(topic, "{\"id\":40}"), 0, "a row of a rolled-back XA transaction was sent");
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    st_assert_equal(&r, m, "t", cols, "id, v, n");
    st_assert_equal(&r, m, "u", cols, "id, v, n");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* With linger.ms at two minutes, a row written while the source is otherwise idle still reaches
 * its topic at once: the run has librdkafka send what it holds whenever it waits for its source
 * (sink_push). Offsets in a file, so that no offsets record's flush sends the data with it. */
Test(e2e_mysql, idle_source_sends_at_once, .timeout = 180, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2eidle", "kafka.linger.ms=120000\n");
    FILE *f = fopen(r.cfg, "a");
    cr_assert_not_null(f);
    fprintf(f, "offsets.storage=file\noffsets.file=%s/offsets\n", r.dir);
    fclose(f);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "t", "snap", 3);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    char topic[300];
    snprintf(topic, sizeof topic, "%s.%s.t", r.db, r.db);
    for (int i = 4; i <= 6; i++) {
        e2e_sql(m, "INSERT INTO %s.t VALUES (%d, 'idle', %d)", r.db, i, i);
        char key[32];
        snprintf(key, sizeof key, "{\"id\":%d}", i);
        wait_key(&r, topic, key); /* 60 s at most, linger.ms 120 s */
    }
    st_stop(&r);
    st_cache_build(&r);
    st_assert_equal(&r, m, "t", (const char *const[]){"id", "v", "n", NULL}, "id, v, n");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_mysql, keyless_created, .timeout = 300, .fini = e2e_kill_children)
{
    st_run r;
    unsigned port = e2e_free_port();
    char extra[128];
    snprintf(extra, sizeof extra, "metrics.listen=127.0.0.1:%u\n", port);
    st_setup(&r, "e2ekl", extra);
    FILE *f = fopen(r.cfg, "a");
    cr_assert_not_null(f);
    fprintf(f, "key.columns.%s.k2=id\n", r.db);
    fclose(f);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "t", "snap", 5);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);

    e2e_sql(m, "CREATE TABLE %s.k1 (id INT, v VARCHAR(20), n INT)", r.db);
    for (int i = 1; i <= 16; i++)
        e2e_sql(m, "INSERT INTO %s.k1 VALUES (%d, 'k1', %d)", r.db, i, i);
    e2e_sql(m, "INSERT INTO %s.t VALUES (6, 'between', 6)", r.db);
    e2e_sql(m, "CREATE TABLE %s.k2 (id INT, v VARCHAR(20), n INT)", r.db);
    for (int i = 1; i <= 4; i++)
        e2e_sql(m, "INSERT INTO %s.k2 VALUES (%d, 'k2', %d)", r.db, i, i);
    e2e_sql(m, "UPDATE %s.k2 SET v = 'upd' WHERE id = 2", r.db);
    e2e_sql(m, "DELETE FROM %s.k2 WHERE id = 3", r.db);
    e2e_sql(m, "CREATE TABLE %s.k3 AS SELECT * FROM %s.t", r.db, r.db);
    e2e_sql(m, "UPDATE %s.k1 SET n = 0", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (7, 'after', 7)", r.db);
    e2e_sql(m, "UPDATE %s.t SET v = 'upd' WHERE id = 1", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);

    cr_expect_eq(e2e_table_metric(port, "tributary_events_skipped_total", r.db, "k1", "reason", "no_key"), 32,
                 "16 inserts and 16 updates of k1 refused");
    cr_expect_eq(e2e_table_metric(port, "tributary_events_skipped_total", r.db, "k3", "reason", "no_key"), 6,
                 "the 6 rows of k3 (CREATE TABLE ... AS SELECT) refused");
    st_stop(&r);
    char want[512];
    snprintf(want, sizeof want, "ERROR run: table %s.k1 has no primary key", r.db);
    cr_expect_eq(st_log_count(&r, want), 1, "no (or more than one) ERROR naming k1 in %s", r.log);
    snprintf(want, sizeof want, "set key.columns.%s.k3=<columns>", r.db);
    cr_expect_eq(st_log_count(&r, want), 1, "no ERROR naming the fix for k3 in %s", r.log);
    snprintf(want, sizeof want, "table %s.k2 has no primary key", r.db);
    cr_expect_eq(st_log_count(&r, want), 0, "k2 has key.columns: %s", r.log);
    char topic[256];
    snprintf(topic, sizeof topic, "%s.%s.k1", r.db, r.db);
    cr_expect_eq(records_with_key(topic, NULL), 0, "records of the refused table k1 in its topic");

    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    st_assert_equal(&r, m, "t", cols, "id, v, n");
    st_assert_equal(&r, m, "k2", cols, "id, v, n");
    char ctable[200];
    snprintf(ctable, sizeof ctable, "%s.k1", r.db);
    cr_expect(!st_cache_has(r.cache, ctable), "the cache has the refused table k1");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* MariaDB SEQUENCEs (one there at start, one created while streaming) are not captured: an INFO
 * naming each once (at start or at its first row event), never the keyless table's ERROR, their
 * events counted under reason sequence, no topic records; the tables beside them go on. */
Test(e2e_mysql, sequences_not_captured, .timeout = 300, .fini = e2e_kill_children)
{
    st_run r;
    unsigned port = e2e_free_port();
    char extra[128];
    snprintf(extra, sizeof extra, "metrics.listen=127.0.0.1:%u\n", port);
    st_setup(&r, "e2eseq", extra);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "t", "snap", 5);
    e2e_sql(m, "CREATE SEQUENCE %s.s0 NOCACHE", r.db);
    e2e_sql(m, "DO NEXTVAL(%s.s0)", r.db);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    for (int i = 0; i < 3; i++)
        e2e_sql(m, "DO NEXTVAL(%s.s0)", r.db);
    e2e_sql(m, "CREATE SEQUENCE %s.s1 START WITH 100 NOCACHE", r.db);
    for (int i = 0; i < 2; i++)
        e2e_sql(m, "DO NEXTVAL(%s.s1)", r.db);
    e2e_sql(m, "INSERT INTO %s.t VALUES (6, 'after', 6)", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    for (int i = 0; i < 2; i++) {
        char seq[8];
        snprintf(seq, sizeof seq, "s%d", i);
        cr_expect_geq(e2e_table_metric(port, "tributary_events_skipped_total", r.db, seq, "reason", "sequence"), 2,
                      "%s: its row events not counted as sequence", seq);
    }
    st_stop(&r);
    char want[512];
    cr_expect_eq(st_log_count(&r, "has no primary key"), 0, "a sequence reported as a keyless table: %s", r.log);
    for (int i = 0; i < 2; i++) {
        snprintf(want, sizeof want, "%s.s%d is a SEQUENCE: not captured", r.db, i);
        cr_expect_eq(st_log_count(&r, want), 1, "s%d not named once in %s", i, r.log);
        char topic[256];
        snprintf(topic, sizeof topic, "%s.%s.s%d", r.db, r.db, i);
        cr_expect_eq(records_with_key(topic, NULL), 0, "records of sequence s%d in its topic", i);
    }
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    st_assert_equal(&r, m, "t", cols, "id, v, n");
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(e2e_mysql, oversize_metrics, .timeout = 300, .fini = e2e_kill_children)
{
    const char *policies[] = {"dlq", "skip"};
    for (int pi = 0; pi < 2; pi++) {
        st_run r;
        unsigned port = e2e_free_port();
        char extra[256];
        snprintf(extra, sizeof extra, "metrics.listen=127.0.0.1:%u\noversize.policy=%s\n"
                 "kafka.message.max.bytes=4000\n", port, policies[pi]);
        st_setup(&r, "e2eover", extra);
        MYSQL *m = e2e_mysql();
        e2e_sql(m, "CREATE DATABASE %s", r.db);
        e2e_sql(m, "CREATE TABLE %s.b (id INT PRIMARY KEY, v LONGTEXT)", r.db);
        e2e_sql(m, "INSERT INTO %s.b VALUES (1, 'small')", r.db);
        st_start(&r);
        wait_caught_up(m, r.status, r.pid, r.log);
        for (int i = 2; i <= 4; i++)
            e2e_sql(m, "INSERT INTO %s.b VALUES (%d, REPEAT('x', 6000))", r.db, i);
        e2e_sql(m, "INSERT INTO %s.b VALUES (5, 'small too')", r.db);
        wait_caught_up(m, r.status, r.pid, r.log);
        cr_expect_eq(e2e_table_metric(port, "tributary_events_total", r.db, "b", "op", "c"), 1,
                     "%s: only the small streamed row is sent", policies[pi]);
        long long over = pi == 0 ? e2e_table_metric(port, "tributary_events_dead_lettered_total", r.db, "b", NULL, NULL)
                                 : e2e_table_metric(port, "tributary_events_skipped_total", r.db, "b", "reason",
                                                    "oversize");
        cr_expect_eq(over, 3, "%s: three oversize rows", policies[pi]);
        st_stop(&r);
        char dlq[200];
        snprintf(dlq, sizeof dlq, "%s.dlq", r.db);
        cr_expect_eq(records_with_key(dlq, NULL), pi == 0 ? 3 : 0, "%s: records in %s", policies[pi], dlq);
        e2e_sql(m, "DROP DATABASE %s", r.db);
        mysql_close(m);
        e2e_rmtree(r.dir);
    }
}

Test(e2e_mysql, text_types, .timeout = 300, .fini = e2e_kill_children)
{
    const char *encodings[] = {"tributary", "debezium"};
    static const char *const vals[] = {
        "'123e4567-e89b-12d3-a456-426614174000', '2001:db8::1', '192.168.1.1'",
        "'6ccd780c-baba-4026-9564-5b8c656024db', '::ffff:1.2.3.4', '0.0.0.0'",
        "'00000000-0000-0000-0000-000000000000', '::', '255.255.255.255'",
        "'ffffffff-ffff-ffff-ffff-ffffffffffff', 'fe80::1:2:3:4', '10.0.0.0'",
        "NULL, NULL, NULL",
        "UUID(), '::1.2.3.4', '1.2.3.4'",
    };
    size_t nv = sizeof vals / sizeof vals[0];
    for (int ei = 0; ei < 2; ei++) {
        st_run r;
        char extra[128];
        snprintf(extra, sizeof extra, "value.encoding=%s\n", encodings[ei]);
        st_setup(&r, "e2etxt", extra);
        MYSQL *m = e2e_mysql();
        e2e_sql(m, "CREATE DATABASE %s", r.db);
        e2e_sql(m, "CREATE TABLE %s.ty (id INT PRIMARY KEY, u UUID, i6 INET6, i4 INET4)", r.db);
        for (size_t i = 0; i < nv; i++)
            e2e_sql(m, "INSERT INTO %s.ty VALUES (%zu, %s)", r.db, i + 1, vals[i]);
        st_start(&r);
        wait_caught_up(m, r.status, r.pid, r.log);
        for (size_t i = 0; i < nv; i++) /* the same values from the binlog */
            e2e_sql(m, "INSERT INTO %s.ty SELECT id + 100, u, i6, i4 FROM %s.ty WHERE id = %zu", r.db, r.db, i + 1);
        e2e_sql(m, "UPDATE %s.ty SET u = '11111111-2222-3333-4444-555555555555', i6 = '1::', i4 = '8.8.8.8' "
                   "WHERE id = 2", r.db);
        wait_caught_up(m, r.status, r.pid, r.log);
        st_stop(&r);
        cr_expect_eq(st_log_count(&r, "read as text"), 0, "%s: a type read as text: %s", encodings[ei], r.log);

        json_t *rec = st_schema_record(&r, "ty");
        cr_assert_not_null(rec, "no schema record of ty");
        cr_expect_eq(json_integer_value(json_object_get(rec, "version")), 1,
                     "%s: the binlog wrote another schema record than the snapshot's", encodings[ei]);
        json_t *cols = json_object_get(rec, "columns");
        static const char *const st[] = {"uuid", "inet6", "inet4"};
        for (size_t c = 1; c <= 3; c++) {
            json_t *col = json_array_get(cols, c);
            cr_expect_str_eq(json_string_value(json_object_get(col, "source_type")), st[c - 1]);
            cr_expect_str_eq(json_string_value(json_object_get(col, "type")), "char");
        }
        json_decref(rec);
        st_cache_build(&r);
        const char *tcols[] = {"id", "u", "i6", "i4", NULL};
        st_assert_equal(&r, m, "ty", tcols, "id, u, i6, i4");
        e2e_sql(m, "DROP DATABASE %s", r.db);
        mysql_close(m);
        e2e_rmtree(r.dir);
    }
}

/* The cache table that holds topic's rows (_tributary_tables), or "" when none. */
static void cache_table_of(const char *path, const char *topic, char *out, size_t cap)
{
    sqlite3 *db = NULL;
    out[0] = '\0';
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT tbl FROM _tributary_tables WHERE topic = ?1", -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, topic, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

Test(e2e_mysql, case_variant_tables, .timeout = 300, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2ecase", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    st_table(m, r.db, "Orders", "upper", 4);
    st_table(m, r.db, "orders", "lower", 6);
    st_table(m, r.db, "items", "item", 3);
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    st_cache_build(&r); /* the snapshot's rows */
    e2e_sql(m, "INSERT INTO %s.Orders VALUES (10, 'upper10', 10)", r.db);
    e2e_sql(m, "UPDATE %s.orders SET v = 'changed' WHERE id = 2", r.db);
    e2e_sql(m, "DELETE FROM %s.orders WHERE id = 3", r.db);
    e2e_sql(m, "DELETE FROM %s.Orders WHERE id = 1", r.db);
    e2e_sql(m, "INSERT INTO %s.items VALUES (4, 'item4', 4)", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    st_stop(&r);
    st_cache_build(&r); /* resumed from its stored offsets: the streamed changes */

    const char *names[] = {"Orders", "orders", "items"};
    const char *tcols[] = {"id", "v", "n", NULL};
    char tables[3][256];
    for (int i = 0; i < 3; i++) {
        char topic[256];
        snprintf(topic, sizeof topic, "%s.%s.%s", r.db, r.db, names[i]);
        cache_table_of(r.cache, topic, tables[i], sizeof tables[i]);
        cr_assert(tables[i][0], "no cache table holds topic %s", topic);
        tb_buf src, top, cache;
        tb_buf_init(&src, 0);
        tb_buf_init(&top, 0);
        tb_buf_init(&cache, 0);
        st_source_rows(m, r.db, names[i], "id, v, n", &src);
        st_topic_table(topic, tcols, &top);
        st_cache_rows(r.cache, tables[i], "id, v, n", &cache);
        cr_expect_str_eq(tb_buf_cstr(&top), tb_buf_cstr(&src), "%s: topic as a KTable differs from the source",
                         names[i]);
        cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&src), "%s: cache table %s differs from the source",
                         names[i], tables[i]);
        tb_buf_free(&src);
        tb_buf_free(&top);
        tb_buf_free(&cache);
    }
    /* One of the two case variants keeps its name, the other takes the mapped one of docs/cache.md. */
    char plain[2][200];
    snprintf(plain[0], sizeof plain[0], "%s.Orders", r.db);
    snprintf(plain[1], sizeof plain[1], "%s.orders", r.db);
    int kept = strcmp(tables[0], plain[0]) == 0 ? 0 : 1;
    cr_assert_str_eq(tables[kept], plain[kept], "neither Orders nor orders kept its name: %s, %s", tables[0],
                     tables[1]);
    unsigned long long h = 0xcbf29ce484222325ULL; /* 64-bit FNV-1a of the exact name, as documented */
    for (const char *c = plain[1 - kept]; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
    char mapped[256];
    snprintf(mapped, sizeof mapped, "%s~%016llx", plain[1 - kept], h);
    cr_expect_str_eq(tables[1 - kept], mapped, "the other case variant is not cached under the documented name");
    char items[200];
    snprintf(items, sizeof items, "%s.items", r.db);
    cr_expect_str_eq(tables[2], items);

    /* cache get takes the source name of either table. */
    for (int i = 0; i < 2; i++) {
        char tname[200], clog[400], want[64];
        snprintf(tname, sizeof tname, "%s.%s", r.db, names[i]);
        snprintf(clog, sizeof clog, "%s/get%d.log", r.dir, i);
        const char *gargs[] = {"cache", "get", "--db", r.cache, "--table", tname, "--key", "{\"id\":2}", NULL};
        pid_t gp = e2e_spawn(gargs, clog);
        cr_assert_eq(e2e_wait(gp, 30000), 0, "cache get --table %s failed; see %s", tname, clog);
        tb_buf out;
        tb_buf_init(&out, 0);
        cr_assert(e2e_slurp(clog, &out));
        snprintf(want, sizeof want, "\"%s\"", i == 0 ? "upper2" : "changed");
        cr_expect(strstr(tb_buf_cstr(&out), want), "cache get --table %s: %s lacks %s", tname, tb_buf_cstr(&out),
                  want);
        tb_buf_free(&out);
    }
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

/* Change statements of the system_versioned test, on each of its tables. */
static void sv_changes(MYSQL *m, const char *db, const char *t, int base)
{
    e2e_sql(m, "INSERT INTO %s.%s (id, v, n) VALUES (%d, 'new', 1), (%d, 'new', 2)", db, t, base, base + 1);
    e2e_sql(m, "UPDATE %s.%s SET v = 'changed' WHERE id = 1", db, t);
    e2e_sql(m, "UPDATE %s.%s SET n = n + 10 WHERE id <= 3", db, t);
    e2e_sql(m, "UPDATE %s.%s SET id = %d WHERE id = 3", db, t, base + 2); /* a key change */
    e2e_sql(m, "DELETE FROM %s.%s WHERE id = 4", db, t);
    e2e_sql(m, "BEGIN");
    e2e_sql(m, "UPDATE %s.%s SET v = 'in tx' WHERE id = 2", db, t);
    e2e_sql(m, "DELETE FROM %s.%s WHERE id = %d", db, t, base + 1);
    e2e_sql(m, "INSERT INTO %s.%s (id, v, n) VALUES (4, 'back', 4)", db, t);
    e2e_sql(m, "COMMIT");
    e2e_sql(m, "DELETE HISTORY FROM %s.%s", db, t); /* history rows deleted: no change of the table */
    e2e_sql(m, "UPDATE %s.%s SET v = 'after history' WHERE id = 5", db, t);
}

/* MariaDB system-versioned tables (WITH SYSTEM VERSIONING: implicit row_start/row_end, an
 * explicit TIMESTAMP(6) period; with history rows before the snapshot, and one created while
 * streaming): the topic and the cache hold the
 * table's current rows, keyed by the declared key alone (the server adds the period's end to
 * it); history rows the server writes on UPDATE and DELETE, and DELETE HISTORY, are no
 * changes; a DELETE, which the server logs as an update of the period's end, is a delete.
 * tributary verify finds the topics equal to the source. */
Test(e2e_mysql, system_versioned, .timeout = 300, .fini = e2e_kill_children)
{
    st_run r;
    st_setup(&r, "e2esv", NULL);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    const char *names[] = {"imp", "ts", "late"};
    e2e_sql(m, "CREATE TABLE %s.imp (id INT PRIMARY KEY, v VARCHAR(20), n INT) WITH SYSTEM VERSIONING", r.db);
    e2e_sql(m,
            "CREATE TABLE %s.ts (id INT PRIMARY KEY, v VARCHAR(20), n INT, "
            "s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, e TIMESTAMP(6) GENERATED ALWAYS AS ROW END, "
            "PERIOD FOR SYSTEM_TIME(s, e)) WITH SYSTEM VERSIONING",
            r.db);
    for (int t = 0; t < 2; t++) {
        for (int i = 1; i <= 6; i++)
            e2e_sql(m, "INSERT INTO %s.%s (id, v, n) VALUES (%d, 'snap%d', %d)", r.db, names[t], i, i, i);
        e2e_sql(m, "UPDATE %s.%s SET v = 'old' WHERE id = 6", r.db, names[t]); /* history before the snapshot */
        e2e_sql(m, "DELETE FROM %s.%s WHERE id = 6", r.db, names[t]);
    }
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "CREATE TABLE %s.late (id INT PRIMARY KEY, v VARCHAR(20), n INT) WITH SYSTEM VERSIONING", r.db);
    for (int i = 1; i <= 5; i++)
        e2e_sql(m, "INSERT INTO %s.late (id, v, n) VALUES (%d, 'late%d', %d)", r.db, i, i, i);
    for (int t = 0; t < 3; t++)
        sv_changes(m, r.db, names[t], 100);
    wait_caught_up(m, r.status, r.pid, r.log);

    const char *vargs[] = {"verify", "--config", r.cfg, "--wait-ms", "30000", NULL};
    char vlog[400];
    snprintf(vlog, sizeof vlog, "%s/verify.log", r.dir);
    pid_t vp = e2e_spawn(vargs, vlog);
    cr_expect_eq(e2e_wait(vp, 120000), 0, "tributary verify does not find the topics equal to the source; see %s",
                 vlog);

    st_stop(&r);
    st_cache_build(&r);
    const char *cols[] = {"id", "v", "n", NULL};
    for (int t = 0; t < 3; t++) {
        st_assert_equal(&r, m, names[t], cols, "id, v, n");
        char topic[256];
        snprintf(topic, sizeof topic, "%s.%s.%s", r.db, r.db, names[t]);
        cr_expect_geq(records_with_key(topic, "{\"id\":1}"), 2, "%s: no records keyed {\"id\":1} alone", names[t]);
    }

    /* Transaction-precise history (BIGINT UNSIGNED period): MariaDB logs its changes as statements
     * even under binlog_format=ROW, so the run stops at the first one, saying why, committing nothing
     * past it. */
    e2e_sql(m,
            "CREATE TABLE %s.trx (id INT PRIMARY KEY, v VARCHAR(20), n INT, "
            "s BIGINT UNSIGNED GENERATED ALWAYS AS ROW START, e BIGINT UNSIGNED GENERATED ALWAYS AS ROW END, "
            "PERIOD FOR SYSTEM_TIME(s, e)) ENGINE=InnoDB WITH SYSTEM VERSIONING",
            r.db);
    e2e_sql(m, "INSERT INTO %s.trx (id, v, n) VALUES (1, 'trx', 1)", r.db);
    st_start(&r);
    cr_assert_eq(e2e_wait(r.pid, 60000), 1, "a transaction-precise table's change did not stop the run; see %s",
                 r.log);
    char want[256];
    snprintf(want, sizeof want, "%s.trx is captured, but this INSERT on it was logged as a statement", r.db);
    cr_expect_eq(st_log_count(&r, want), 1, "no error naming %s.trx in %s", r.db, r.log);
    cr_expect_geq(st_log_count(&r, "system-versioned with transaction-precise history"), 1,
                  "the error does not name transaction-precise history; see %s", r.log);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}
