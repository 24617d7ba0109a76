/*
 * The fault-test controls of scripts/testenv work from a test: a server stopped (or killed)
 * mid-test stops answering, and comes back on the same port with its data.
 *
 *   testenv/kafka_restart_keeps_topics: a topic created before stop-kafka is still there after
 *     start-kafka; while stopped, a metadata request fails.
 *   testenv/mysql_crash_keeps_rows_and_gtid: a committed row and @@gtid_binlog_pos survive
 *     kill-mysql (SIGKILL) + start-mysql; while down, connecting fails.
 *
 * Runs alone (scripts/test runs integration executables one at a time).
 */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <mysql.h>

#include "tb_itest.h"

/* A producer handle for the test broker (used for Admin and metadata); caller destroys. */
static rd_kafka_t *te_kafka(void)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", tb_itest_env("TRIBUTARY_TEST_KAFKA"),
                                   errstr, sizeof errstr),
                 RD_KAFKA_CONF_OK, "%s", errstr);
    rd_kafka_conf_set(conf, "log_level", "0", NULL, 0); /* the broker is down on purpose */
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    return rk;
}

/* Does the broker list topic in its metadata? Fails the test on a metadata error. */
static bool te_has_topic(rd_kafka_t *rk, const char *topic)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, 10000);
    cr_assert_eq(err, RD_KAFKA_RESP_ERR_NO_ERROR, "metadata: %s", rd_kafka_err2str(err));
    bool found = false;
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, topic) == 0 && md->topics[i].err == 0)
            found = true;
    rd_kafka_metadata_destroy(md);
    return found;
}

static void te_create_topic(rd_kafka_t *rk, const char *topic)
{
    char errstr[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, 1, errstr, sizeof errstr);
    cr_assert_not_null(nt, "%s", errstr);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    if (ev == NULL) { /* what we own goes first: one failure, not a LeakSanitizer report too */
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
        cr_assert_fail("CreateTopics %s: no answer in 30 s", topic);
    }
    const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
    cr_assert_not_null(res);
    size_t n = 0;
    const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(rd_kafka_topic_result_error(tr[0]), RD_KAFKA_RESP_ERR_NO_ERROR, "%s: %s", topic,
                 rd_kafka_topic_result_error_string(tr[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
}

TestSuite(testenv, .init = tb_itest_restore_servers);

Test(testenv, kafka_restart_keeps_topics, .timeout = 180, .fini = tb_itest_restore_servers)
{
    char topic[128];
    tb_itest_unique(topic, sizeof topic, "tributary.testenv");
    rd_kafka_t *rk = te_kafka();
    te_create_topic(rk, topic);
    long long deadline = tb_itest_now_ms() + 30000;
    while (!te_has_topic(rk, topic) && tb_itest_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    cr_assert(te_has_topic(rk, topic), "%s not in metadata after CreateTopics", topic);
    rd_kafka_destroy(rk);

    tb_itest_testenv("stop-kafka");
    rk = te_kafka();
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, 2000);
    if (md != NULL)
        rd_kafka_metadata_destroy(md);
    cr_assert_neq(err, RD_KAFKA_RESP_ERR_NO_ERROR, "metadata answered while Kafka is stopped");
    rd_kafka_destroy(rk);

    tb_itest_testenv("start-kafka");
    rk = te_kafka();
    cr_assert(te_has_topic(rk, topic), "%s lost across a broker restart", topic);
    rd_kafka_destroy(rk);
}

static MYSQL *te_mysql(bool must)
{
    const char *port = tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT");
    MYSQL *my = mysql_init(NULL);
    cr_assert_not_null(my);
    unsigned int timeout = 3;
    mysql_optionsv(my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (mysql_real_connect(my, tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST"),
                           tb_itest_env("TRIBUTARY_TEST_MYSQL_USER"),
                           tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD"), NULL,
                           (unsigned)atoi(port), NULL, 0) == NULL) {
        if (must)
            cr_assert_fail("connect to port %s: %s", port, mysql_error(my));
        mysql_close(my);
        return NULL;
    }
    return my;
}

static void te_exec(MYSQL *my, const char *sql)
{
    if (mysql_query(my, sql) != 0)
        cr_assert_fail("%s: %s", sql, mysql_error(my));
}

/* The first column of the first row of sql, copied into out. */
static void te_cell(MYSQL *my, const char *sql, char *out, size_t cap)
{
    te_exec(my, sql);
    MYSQL_RES *res = mysql_store_result(my);
    cr_assert_not_null(res, "%s: %s", sql, mysql_error(my));
    MYSQL_ROW row = mysql_fetch_row(res);
    cr_assert_not_null(row, "%s: no row", sql);
    snprintf(out, cap, "%s", row[0] ? row[0] : "NULL");
    mysql_free_result(res);
}

Test(testenv, mysql_crash_keeps_rows_and_gtid, .timeout = 180, .fini = tb_itest_restore_servers)
{
    char db[96], sql[256], gtid0[256], gtid1[256], v[64];
    tb_itest_unique(db, sizeof db, "tb_testenv");
    MYSQL *my = te_mysql(true);
    snprintf(sql, sizeof sql, "CREATE DATABASE `%s`", db);
    te_exec(my, sql);
    snprintf(sql, sizeof sql, "CREATE TABLE `%s`.t (id INT PRIMARY KEY, v INT)", db);
    te_exec(my, sql);
    snprintf(sql, sizeof sql, "INSERT INTO `%s`.t VALUES (1, 41), (2, 42)", db);
    te_exec(my, sql);
    te_cell(my, "SELECT @@gtid_binlog_pos", gtid0, sizeof gtid0);
    mysql_close(my);

    tb_itest_testenv("kill-mysql");
    my = te_mysql(false);
    cr_assert_null(my, "connected while MariaDB is killed");

    tb_itest_testenv("start-mysql");
    my = te_mysql(true);
    snprintf(sql, sizeof sql, "SELECT SUM(v) FROM `%s`.t", db);
    te_cell(my, sql, v, sizeof v);
    cr_assert_str_eq(v, "83", "rows after the crash: sum %s", v);
    te_cell(my, "SELECT @@gtid_binlog_pos", gtid1, sizeof gtid1);
    cr_assert_str_eq(gtid1, gtid0, "gtid_binlog_pos changed across the crash");
    snprintf(sql, sizeof sql, "DROP DATABASE `%s`", db);
    te_exec(my, sql);
    mysql_close(my);
}
