/* Unit tests of kafka/: errors name the key or topic, librdkafka's codes become tb_codes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cache_kafka.h"
#include "kafka.h"
#include "tb_log.h"

#include <librdkafka/rdkafka_mock.h> /* after rdkafka.h (kafka.h) */

Test(kafka, conf_errors_name_the_key_not_the_value)
{
    rd_kafka_conf_t *conf = kafka_conf_new();
    cr_assert_not_null(conf);
    tb_error err;
    cr_assert_eq(kafka_conf_set(conf, "linger.ms", "5", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(kafka_conf_set(conf, "linger.ms", "soon", &err), TB_ERR_CONFIG);
    cr_expect_eq(strncmp(err.msg, "kafka.linger.ms: ", 17), 0, "%s", err.msg);
    cr_assert_eq(kafka_conf_set(conf, "no.such.property", "secret-value", &err), TB_ERR_CONFIG);
    cr_expect_eq(strncmp(err.msg, "kafka.no.such.property: ", 24), 0, "%s", err.msg);
    cr_expect_null(strstr(err.msg, "secret-value"), "the value may be a secret: %s", err.msg);
    rd_kafka_conf_destroy(conf);
}

/* The cache builds its clients through the same layer: a bad kafka.* key is named as the
 * user wrote it (it used to read "kafka configuration: ..."). */
Test(kafka, cache_conf_errors_name_the_key)
{
    const char *props[] = {"fetch.wait.max.ms", "often", NULL};
    tb_error err;
    rd_kafka_conf_t *conf = cache_kafka_conf("127.0.0.1:1", RD_KAFKA_CONSUMER, props, &err);
    cr_assert_null(conf);
    cr_expect_eq(err.code, TB_ERR_CONFIG);
    cr_expect_eq(strncmp(err.msg, "kafka.fetch.wait.max.ms: ", 25), 0, "%s", err.msg);
}

/* The role of a property comes from the linked librdkafka's own table: a producer property
 * (global, topic, or an alias of one) is ignored by a consumer and the other way round;
 * properties for both, and keys librdkafka does not list, are not. */
Test(kafka, prop_roles_come_from_librdkafka)
{
    const struct {
        const char *key;
        bool by_producer, by_consumer;
    } cases[] = {
        {"linger.ms", false, true},
        {"queue.buffering.max.ms", false, true}, /* an alias of linger.ms */
        {"batch.size", false, true},
        {"acks", false, true},             /* a topic property */
        {"compression.type", false, true}, /* global and topic */
        {"fetch.wait.max.ms", true, false},
        {"isolation.level", true, false},
        {"auto.offset.reset", true, false}, /* a topic property */
        {"bootstrap.servers", false, false},
        {"client.id", false, false},
        {"security.protocol", false, false},
        {"no.such.property", false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(kafka_prop_ignored_by(cases[i].key, RD_KAFKA_PRODUCER), cases[i].by_producer, "%s by a producer",
                     cases[i].key);
        cr_expect_eq(kafka_prop_ignored_by(cases[i].key, RD_KAFKA_CONSUMER), cases[i].by_consumer, "%s by a consumer",
                     cases[i].key);
    }
}

typedef struct ignored_log {
    int lines;
    char last[512];
} ignored_log;

static void ignored_sink(tb_log_level level, const char *line, void *opaque)
{
    ignored_log *l = opaque;
    if (level <= TB_LOG_WARN && strstr(line, "will be ignored")) {
        l->lines++;
        snprintf(l->last, sizeof l->last, "%s", line);
    }
}

/* librdkafka's CONFWARN lines, logged while rd_kafka_new runs (in this thread), for a client of
 * type built from props by cache_kafka_conf (pass: through kafka_conf_pass) or by setting each
 * one as it is. */
static int warned_ignored(rd_kafka_type_t type, const char *const *props, bool pass)
{
    tb_error err;
    rd_kafka_conf_t *conf = pass ? cache_kafka_conf("127.0.0.1:1", type, props, &err) : kafka_conf_new();
    cr_assert_not_null(conf, "%s", err.msg);
    for (size_t i = 0; !pass && props[i]; i += 2)
        cr_assert_eq(kafka_conf_set(conf, props[i], props[i + 1], &err), TB_OK, "%s", err.msg);
    ignored_log l = {0};
    tb_log_set_sink(ignored_sink, &l); /* also keeps the client's refused connections out of the output */
    rd_kafka_t *rk = NULL;
    tb_code rc = kafka_client_new(conf, type, "client", &rk, &err);
    if (rc == TB_OK)
        rd_kafka_destroy(rk);
    tb_log_set_sink(NULL, NULL);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    return l.lines;
}

/* kafka.* settings reach every client the run and the cache make: a producer setting given to
 * a consumer (the offsets reader, the lease, a topic scan) made librdkafka warn at each one.
 * Each client now gets the settings of its role, and a bad value of the other role's setting
 * is still an error naming the key. */
Test(kafka, each_client_gets_the_settings_of_its_role)
{
    const char *props[] = {"linger.ms", "7", "batch.size", "100000", "fetch.wait.max.ms", "50",
                           "socket.keepalive.enable", "true", NULL};
    /* the oracle: librdkafka warns when given them all */
    cr_expect_eq(warned_ignored(RD_KAFKA_CONSUMER, props, false), 2);
    cr_expect_eq(warned_ignored(RD_KAFKA_PRODUCER, props, false), 1);
    cr_expect_eq(warned_ignored(RD_KAFKA_CONSUMER, props, true), 0);
    cr_expect_eq(warned_ignored(RD_KAFKA_PRODUCER, props, true), 0);

    /* what is left out is still checked */
    const char *bad[] = {"linger.ms", "soon", NULL};
    tb_error err;
    cr_expect_null(cache_kafka_conf("127.0.0.1:1", RD_KAFKA_CONSUMER, bad, &err));
    cr_expect_eq(err.code, TB_ERR_CONFIG);
    cr_expect_eq(strncmp(err.msg, "kafka.linger.ms: ", 17), 0, "%s", err.msg);
    rd_kafka_conf_t *conf = kafka_conf_new();
    cr_expect_eq(kafka_conf_pass(conf, RD_KAFKA_PRODUCER, "fetch.wait.max.ms", "often", &err), TB_ERR_CONFIG);
    cr_expect_eq(strncmp(err.msg, "kafka.fetch.wait.max.ms: ", 25), 0, "%s", err.msg);
    /* and what is kept is set */
    cr_assert_eq(kafka_conf_pass(conf, RD_KAFKA_PRODUCER, "linger.ms", "9", &err), TB_OK, "%s", err.msg);
    char v[32];
    size_t vlen = sizeof v;
    cr_assert_eq(rd_kafka_conf_get(conf, "linger.ms", v, &vlen), RD_KAFKA_CONF_OK);
    cr_expect_str_eq(v, "9");
    rd_kafka_conf_destroy(conf);
}

Test(kafka, errors_translate_codes_and_retriable)
{
    tb_error err;
    cr_expect_eq(kafka_error(&err, RD_KAFKA_RESP_ERR__TRANSPORT, "topic %s", "t1"), TB_ERR_KAFKA);
    cr_expect(err.retriable);
    cr_expect_eq(strncmp(err.msg, "topic t1: ", 10), 0, "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "(_TRANSPORT)"), "%s", err.msg);
    /* what a broker restarting answers for a while: tried again (ksink_wait_kafka) */
    const rd_kafka_resp_err_t restarting[] = {RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
                                              RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH,
                                              RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION};
    for (size_t i = 0; i < sizeof restarting / sizeof *restarting; i++) {
        cr_expect_eq(kafka_error(&err, restarting[i], "topic t [0]: watermarks"), TB_ERR_KAFKA);
        cr_expect(err.retriable, "%s", err.msg);
    }
    cr_expect_eq(kafka_error(&err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "x"), TB_ERR_NOT_FOUND);
    cr_expect_not(err.retriable);
    cr_expect_eq(kafka_error(&err, RD_KAFKA_RESP_ERR__INVALID_ARG, "x"), TB_ERR_CONFIG);
    cr_expect_eq(kafka_error(&err, RD_KAFKA_RESP_ERR_NO_ERROR, "x"), TB_ERR_KAFKA, "never TB_OK");
}

/* A topic librdkafka refuses to describe (here: -5 partitions) is an error naming the topic,
 * before any request: the cache's copy passed the NULL it got on to CreateTopics. */
Test(kafka, topic_create_checks_the_new_topic)
{
    rd_kafka_conf_t *conf = kafka_conf_new();
    tb_error err;
    cr_assert_eq(kafka_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err), TB_OK, "%s", err.msg);
    rd_kafka_t *rk = NULL;
    cr_assert_eq(kafka_client_new(conf, RD_KAFKA_PRODUCER, "test producer", &rk, &err), TB_OK, "%s", err.msg);
    bool exists = true;
    cr_expect_eq(kafka_topic_create(rk, "some.topic", -5, 1, NULL, 1000, NULL, &exists, &err), TB_ERR_CONFIG);
    cr_expect_eq(strncmp(err.msg, "topic some.topic: ", 18), 0, "%s", err.msg);
    cr_expect_not(exists);
    /* no broker: the request times out, retriable, naming the topic */
    cr_expect_eq(kafka_topic_create(rk, "some.topic", 1, 1, NULL, 200, NULL, &exists, &err), TB_ERR_KAFKA);
    cr_expect(err.retriable, "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "some.topic"), "%s", err.msg);
    rd_kafka_destroy(rk);
}

Test(kafka, client_new_takes_the_configuration_on_failure)
{
    rd_kafka_conf_t *conf = kafka_conf_new();
    tb_error err;
    /* a transactional producer without idempotence cannot be created */
    cr_assert_eq(kafka_conf_set(conf, "transactional.id", "t", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(kafka_conf_set(conf, "enable.idempotence", "false", &err), TB_OK, "%s", err.msg);
    rd_kafka_t *rk = NULL;
    cr_expect_eq(kafka_client_new(conf, RD_KAFKA_PRODUCER, "DLQ producer", &rk, &err), TB_ERR_CONFIG);
    cr_expect_null(rk);
    cr_expect_eq(strncmp(err.msg, "cannot create the DLQ producer: ", 32), 0, "%s", err.msg);
}

/* A combination librdkafka refuses only when the client is made is reported with the names a
 * user sets: kafka.<property>, each in backquotes as librdkafka wrote them. */
Test(kafka, client_new_names_the_kafka_settings)
{
    rd_kafka_conf_t *conf = kafka_conf_new();
    tb_error err;
    /* over message.timeout.ms, left at its default (300000); librdkafka checks the two when the
     * configuration has topic properties, as the sink's has (acks) */
    cr_assert_eq(kafka_conf_set(conf, "linger.ms", "400000", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(kafka_conf_set(conf, "acks", "all", &err), TB_OK, "%s", err.msg);
    rd_kafka_t *rk = NULL;
    cr_expect_eq(kafka_client_new(conf, RD_KAFKA_PRODUCER, "Kafka client", &rk, &err), TB_ERR_CONFIG);
    cr_expect_null(rk);
    cr_expect_str_eq(err.msg,
                     "cannot create the Kafka client: `kafka.message.timeout.ms` must be greater than "
                     "`kafka.linger.ms`");
}

/* kafka_topic_wait_ready: the metadata names the leaders at once (the mock cluster's topic), but
 * a topic is ready only once each leader answers a ListOffsets for its partition: refused
 * (NOT_LEADER_FOR_PARTITION, as a broker answers before it takes writes for a new topic's
 * partition) a few times it waits and succeeds; refused throughout it fails, retriable, saying
 * so. */
Test(kafka, wait_ready_waits_for_leaders_that_answer)
{
    char errstr[256];
    rd_kafka_conf_t *mconf = rd_kafka_conf_new();
    rd_kafka_conf_set(mconf, "log_level", "3", errstr, sizeof errstr);
    rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mconf, errstr, sizeof errstr);
    cr_assert_not_null(mrk, "%s", errstr);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(mrk, 1);
    cr_assert_not_null(mc);
    cr_assert_eq(rd_kafka_mock_topic_create(mc, "t.ready", 2, 1), RD_KAFKA_RESP_ERR_NO_ERROR);

    rd_kafka_conf_t *conf = kafka_conf_new();
    tb_error err;
    cr_assert_eq(kafka_conf_set(conf, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(mc), &err), TB_OK,
                 "%s", err.msg);
    rd_kafka_t *rk = NULL;
    cr_assert_eq(kafka_client_new(conf, RD_KAFKA_PRODUCER, "test producer", &rk, &err), TB_OK, "%s", err.msg);

    cr_assert_eq(kafka_topic_wait_ready(rk, "t.ready", 2, 10000, NULL, &err), TB_OK, "%s", err.msg);
    rd_kafka_mock_push_request_errors(mc, 2 /* ListOffsets */, 3, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                      RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                      RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
    cr_assert_eq(kafka_topic_wait_ready(rk, "t.ready", 2, 10000, NULL, &err), TB_OK, "%s", err.msg);

    rd_kafka_resp_err_t refused[400];
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        refused[i] = RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
    rd_kafka_mock_push_request_errors_array(mc, 2, sizeof refused / sizeof refused[0], refused);
    tb_error_clear(&err);
    cr_assert_eq(kafka_topic_wait_ready(rk, "t.ready", 2, 1500, NULL, &err), TB_ERR_KAFKA);
    cr_expect(err.retriable, "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "t.ready"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "do not answer"), "%s", err.msg);
    rd_kafka_destroy(rk);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(mrk);
}
