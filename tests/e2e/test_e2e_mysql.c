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
 */
#include "e2e_tables.h"

/* Records in topic whose key is key_json (values, not tombstones). */
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
    json_t *want = json_loads(key_json, 0, &je);
    cr_assert_not_null(want);
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
        if (k && m->payload && json_equal(k, want))
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
    kill(r.pid, SIGTERM);
    cr_assert_eq(e2e_wait(r.pid, 30000), 0, "tributary run did not stop cleanly; see %s", r.log);
    e2e_assert_clean_log(r.log);

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
