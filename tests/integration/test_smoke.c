/*
 * Smoke test of the test environment (scripts/testenv): the real Kafka broker and the real
 * MariaDB answer, and do what tributary relies on.
 *
 *   kafka/compacted_topic_round_trip: the Admin API creates a compacted topic (checked with
 *     DescribeConfigs), an idempotent producer writes a keyed record and a tombstone, a consumer
 *     reads both back with their keys, the value and the NULL payload.
 *   mysql/binlog_advances: a table is created and a row inserted; the binlog position
 *     (SHOW MASTER STATUS) and the GTID position (@@gtid_binlog_pos) advance, the server runs
 *     with the binlog settings tributary needs.
 *
 * Needs TRIBUTARY_TEST_KAFKA and TRIBUTARY_TEST_MYSQL_{HOST,PORT,USER,PASSWORD}; FAILS (never
 * skips) when one is missing. Topic and database names are unique per run.
 */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <mysql.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tb_cast.h"
#include "tb_itest.h"

#define SMOKE_TIMEOUT_MS 30000

/* A client configuration for the test broker. The caller owns the result (rd_kafka_conf_destroy,
 * or hands it to rd_kafka_new). */
static rd_kafka_conf_t *smoke_kconf(const char *bootstrap)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr),
                 RD_KAFKA_CONF_OK, "%s", errstr);
    return conf;
}

static void smoke_conf_set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char errstr[512];
    cr_assert_eq(rd_kafka_conf_set(conf, k, v, errstr, sizeof errstr), RD_KAFKA_CONF_OK,
                 "%s=%s: %s", k, v, errstr);
}

/* Wait on queue q for an event of type want; the caller destroys the returned event. NULL after
 * SMOKE_TIMEOUT_MS: the caller destroys what it owns (queue, request objects) before failing, so
 * that an unanswered request is one failure, not a LeakSanitizer report too. */
static rd_kafka_event_t *smoke_wait_event(rd_kafka_queue_t *q, rd_kafka_event_type_t want)
{
    long long deadline = tb_itest_now_ms() + SMOKE_TIMEOUT_MS;
    while (tb_itest_now_ms() < deadline) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 1000);
        if (ev == NULL)
            continue;
        if (rd_kafka_event_type(ev) == want)
            return ev;
        rd_kafka_event_destroy(ev);
    }
    return NULL;
}

/* Create topic (1 partition, replication factor 1, cleanup.policy=compact) with the Admin API. */
static void smoke_create_compacted(rd_kafka_t *rk, const char *topic)
{
    char errstr[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, 1, errstr, sizeof errstr);
    cr_assert_not_null(nt, "NewTopic %s: %s", topic, errstr);
    cr_assert_eq(rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact"),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = smoke_wait_event(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT);
    if (ev == NULL) {
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        cr_assert_fail("CreateTopics %s: no answer within %d ms", topic, SMOKE_TIMEOUT_MS);
    }
    cr_assert_eq(rd_kafka_event_error(ev), RD_KAFKA_RESP_ERR_NO_ERROR, "CreateTopics: %s",
                 rd_kafka_event_error_string(ev));
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(rd_kafka_topic_result_name(res[0]), topic);
    cr_assert_eq(rd_kafka_topic_result_error(res[0]), RD_KAFKA_RESP_ERR_NO_ERROR,
                 "CreateTopics %s: %s", topic, rd_kafka_topic_result_error_string(res[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
}

/* The value of topic config key name as the broker reports it, copied into out ("" if absent). */
static void smoke_topic_config_try(rd_kafka_t *rk, const char *topic, const char *name, char *out, size_t cap,
                                   int tries_left)
{
    out[0] = '\0';
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, q);
    rd_kafka_event_t *ev = smoke_wait_event(q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT);
    if (ev == NULL) {
        rd_kafka_queue_destroy(q);
        rd_kafka_ConfigResource_destroy(cr);
        cr_assert_fail("DescribeConfigs %s: no answer within %d ms", topic, SMOKE_TIMEOUT_MS);
    }
    cr_assert_eq(rd_kafka_event_error(ev), RD_KAFKA_RESP_ERR_NO_ERROR, "DescribeConfigs: %s",
                 rd_kafka_event_error_string(ev));
    size_t nres = 0;
    const rd_kafka_ConfigResource_t **res =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &nres);
    cr_assert_eq(nres, 1);
    /* a topic just created may not have reached the broker that answers yet: ask again until it
     * has (the deadline of the whole call, SMOKE_TIMEOUT_MS per answer, bounds it) */
    if (rd_kafka_ConfigResource_error(res[0]) == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && tries_left > 0) {
        rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_ConfigResource_destroy(cr);
        usleep(100000); /* interval of the retry of the condition above */
        smoke_topic_config_try(rk, topic, name, out, cap, tries_left - 1);
        return;
    }
    cr_assert_eq(rd_kafka_ConfigResource_error(res[0]), RD_KAFKA_RESP_ERR_NO_ERROR,
                 "DescribeConfigs %s: %s", topic, rd_kafka_ConfigResource_error_string(res[0]));
    size_t nent = 0;
    const rd_kafka_ConfigEntry_t **ents = rd_kafka_ConfigResource_configs(res[0], &nent);
    for (size_t i = 0; i < nent; i++) {
        if (strcmp(rd_kafka_ConfigEntry_name(ents[i]), name) == 0 &&
            rd_kafka_ConfigEntry_value(ents[i]) != NULL)
            snprintf(out, cap, "%s", rd_kafka_ConfigEntry_value(ents[i]));
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy(cr);
}

static void smoke_topic_config(rd_kafka_t *rk, const char *topic, const char *name, char *out, size_t cap)
{
    smoke_topic_config_try(rk, topic, name, out, cap, 100); /* at most about 10 s of retries */
}

/* Delivery reports: counts successes and remembers the first error. Only counts (O(1)). */
typedef struct smoke_dr {
    int ok;
    rd_kafka_resp_err_t first_err;
} smoke_dr;

static void smoke_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    smoke_dr *dr = opaque;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
        dr->ok++;
    else if (dr->first_err == RD_KAFKA_RESP_ERR_NO_ERROR)
        dr->first_err = m->err;
}

Test(kafka, compacted_topic_round_trip, .timeout = 120)
{
    const char *bootstrap = tb_itest_env("TRIBUTARY_TEST_KAFKA");
    char topic[128], errstr[512], policy[64];
    tb_itest_unique(topic, sizeof topic, "tributary.smoke");

    /* Producer (also the admin client). */
    smoke_dr dr = {0};
    rd_kafka_conf_t *pconf = smoke_kconf(bootstrap);
    smoke_conf_set(pconf, "enable.idempotence", "true");
    smoke_conf_set(pconf, "acks", "all");
    rd_kafka_conf_set_dr_msg_cb(pconf, smoke_on_delivery);
    rd_kafka_conf_set_opaque(pconf, &dr);
    rd_kafka_t *prod = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr);
    cr_assert_not_null(prod, "producer: %s", errstr);

    smoke_create_compacted(prod, topic);
    smoke_topic_config(prod, topic, "cleanup.policy", policy, sizeof policy);
    cr_assert_str_eq(policy, "compact", "topic %s: cleanup.policy is '%s'", topic, policy);

    const char *key = "{\"id\":42}";
    const char *val = "{\"after\":{\"id\":42,\"name\":\"smoke\"}}";
    cr_assert_eq(rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                   RD_KAFKA_V_KEY(TB_UNCONST(key), strlen(key)),
                                   RD_KAFKA_V_VALUE(TB_UNCONST(val), strlen(val)),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                   RD_KAFKA_V_KEY(TB_UNCONST(key), strlen(key)), RD_KAFKA_V_VALUE(NULL, 0),
                                   RD_KAFKA_V_END),
                 RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_eq(rd_kafka_flush(prod, SMOKE_TIMEOUT_MS), RD_KAFKA_RESP_ERR_NO_ERROR,
                 "flush did not finish in %d ms", SMOKE_TIMEOUT_MS);
    cr_assert_eq(dr.first_err, RD_KAFKA_RESP_ERR_NO_ERROR, "delivery failed: %s",
                 rd_kafka_err2str(dr.first_err));
    cr_assert_eq(dr.ok, 2);
    rd_kafka_destroy(prod);

    /* Consumer: partition 0 from the beginning, assigned (no subscription), no commits. */
    rd_kafka_conf_t *cconf = smoke_kconf(bootstrap);
    smoke_conf_set(cconf, "group.id", topic);
    smoke_conf_set(cconf, "enable.auto.commit", "false");
    smoke_conf_set(cconf, "enable.partition.eof", "true");
    rd_kafka_t *cons = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, errstr, sizeof errstr);
    cr_assert_not_null(cons, "consumer: %s", errstr);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t aerr = rd_kafka_assign(cons, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    cr_assert_eq(aerr, RD_KAFKA_RESP_ERR_NO_ERROR, "assign: %s", rd_kafka_err2str(aerr));

    int got = 0;
    bool eof = false;
    long long deadline = tb_itest_now_ms() + SMOKE_TIMEOUT_MS;
    while (!eof && tb_itest_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 500);
        if (m == NULL)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            eof = got >= 2;
        } else {
            cr_assert_eq(m->err, RD_KAFKA_RESP_ERR_NO_ERROR, "consume: %s",
                         rd_kafka_message_errstr(m));
            cr_assert_eq(m->offset, got, "record %d at offset %lld", got, (long long)m->offset);
            cr_assert_eq(m->key_len, strlen(key));
            cr_assert(memcmp(m->key, key, m->key_len) == 0, "record %d: wrong key", got);
            if (got == 0) {
                cr_assert_not_null(m->payload, "record 0 must have a value");
                cr_assert_eq(m->len, strlen(val));
                cr_assert(memcmp(m->payload, val, m->len) == 0, "record 0: wrong value");
            } else {
                cr_assert_null(m->payload, "record 1 must be a tombstone (NULL value)");
                cr_assert_eq(m->len, 0);
            }
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    cr_assert_eq(got, 2, "consumed %d of 2 records from %s", got, topic);
    cr_assert(eof, "no end of partition after the 2 records");
    rd_kafka_consumer_close(cons);
    rd_kafka_destroy(cons);
}

/* Connect to the test MariaDB; the caller closes the handle. */
static MYSQL *smoke_mysql_connect(void)
{
    const char *host = tb_itest_env("TRIBUTARY_TEST_MYSQL_HOST");
    const char *port = tb_itest_env("TRIBUTARY_TEST_MYSQL_PORT");
    const char *user = tb_itest_env("TRIBUTARY_TEST_MYSQL_USER");
    const char *pass = tb_itest_env("TRIBUTARY_TEST_MYSQL_PASSWORD");
    MYSQL *my = mysql_init(NULL);
    cr_assert_not_null(my);
    unsigned int timeout = 10;
    mysql_optionsv(my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (mysql_real_connect(my, host, user, pass, NULL, (unsigned)atoi(port), NULL, 0) == NULL)
        cr_assert_fail("connect %s@%s:%s: %s", user, host, port, mysql_error(my));
    return my;
}

static void smoke_exec(MYSQL *my, const char *sql)
{
    if (mysql_query(my, sql) != 0)
        cr_assert_fail("%s: %s", sql, mysql_error(my));
}

/* Run a query returning one row; copy column col of it into out. */
static void smoke_query_cell(MYSQL *my, const char *sql, unsigned col, char *out, size_t cap)
{
    smoke_exec(my, sql);
    MYSQL_RES *res = mysql_store_result(my);
    cr_assert_not_null(res, "%s: no result: %s", sql, mysql_error(my));
    MYSQL_ROW row = mysql_fetch_row(res);
    cr_assert_not_null(row, "%s: no row", sql);
    cr_assert(col < mysql_num_fields(res));
    snprintf(out, cap, "%s", row[col] ? row[col] : "NULL");
    mysql_free_result(res);
}

Test(mysql, binlog_advances, .timeout = 60)
{
    MYSQL *my = smoke_mysql_connect();
    char db[96], sql[512], v[256];
    char file0[128], pos0[32], gtid0[256], file1[128], pos1[32], gtid1[256];
    tb_itest_unique(db, sizeof db, "tb_smoke");

    const char *checks[][2] = {
        {"SELECT @@log_bin", "1"},
        {"SELECT @@binlog_format", "ROW"},
        {"SELECT @@binlog_row_image", "FULL"},
        {"SELECT @@binlog_row_metadata", "FULL"},
        {"SELECT @@character_set_server", "utf8mb4"},
        {"SELECT @@bind_address", "127.0.0.1"},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        smoke_query_cell(my, checks[i][0], 0, v, sizeof v);
        cr_assert_str_eq(v, checks[i][1], "%s: got %s", checks[i][0], v);
    }

    smoke_query_cell(my, "SHOW MASTER STATUS", 0, file0, sizeof file0);
    smoke_query_cell(my, "SHOW MASTER STATUS", 1, pos0, sizeof pos0);
    smoke_query_cell(my, "SELECT @@gtid_binlog_pos", 0, gtid0, sizeof gtid0);

    snprintf(sql, sizeof sql, "CREATE DATABASE `%s`", db);
    smoke_exec(my, sql);
    snprintf(sql, sizeof sql,
             "CREATE TABLE `%s`.t (id INT PRIMARY KEY, name VARCHAR(32)) ENGINE=InnoDB", db);
    smoke_exec(my, sql);
    snprintf(sql, sizeof sql, "INSERT INTO `%s`.t VALUES (1, 'smoke')", db);
    smoke_exec(my, sql);
    cr_assert_eq(mysql_affected_rows(my), 1);

    snprintf(sql, sizeof sql, "SELECT name FROM `%s`.t WHERE id = 1", db);
    smoke_query_cell(my, sql, 0, v, sizeof v);
    cr_assert_str_eq(v, "smoke");

    smoke_query_cell(my, "SHOW MASTER STATUS", 0, file1, sizeof file1);
    smoke_query_cell(my, "SHOW MASTER STATUS", 1, pos1, sizeof pos1);
    smoke_query_cell(my, "SELECT @@gtid_binlog_pos", 0, gtid1, sizeof gtid1);

    cr_assert(strcmp(file1, file0) > 0 || (strcmp(file1, file0) == 0 && atoll(pos1) > atoll(pos0)),
              "binlog did not advance: %s:%s -> %s:%s", file0, pos0, file1, pos1);
    cr_assert_str_neq(gtid1, gtid0, "gtid_binlog_pos did not advance: %s", gtid0);
    cr_assert_str_neq(gtid1, "", "gtid_binlog_pos is empty after a commit");

    snprintf(sql, sizeof sql, "DROP DATABASE `%s`", db);
    smoke_exec(my, sql);
    mysql_close(my);
}
