/* kafka: librdkafka glue shared by sinks/ and cache/ (see kafka.h). */
#include "kafka.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "tb_clock.h"
#include "tb_log.h"

/* ------------------------------------------------------------ errors */

static tb_code kafka_code_of(rd_kafka_resp_err_t rerr, bool *retriable)
{
    *retriable = false;
    switch (rerr) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
        return TB_OK;
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PROTOCOL:
        return TB_ERR_CONFIG;
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
        return TB_ERR_INVALID;
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
        *retriable = true;
        return TB_ERR_KAFKA;
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        return TB_ERR_NOT_FOUND;
    default:
        return TB_ERR_KAFKA;
    }
}

static tb_code kafka_verror(tb_error *err, tb_code code, bool retriable, const char *what, const char *name,
                            const char *fmt, va_list ap)
{
    char ctx[512];
    vsnprintf(ctx, sizeof(ctx), fmt, ap);
    return tb_error_set(err, code, retriable, "%s: %s (%s)", ctx, what, name);
}

tb_code kafka_error(tb_error *err, rd_kafka_resp_err_t rerr, const char *fmt, ...)
{
    bool retriable;
    tb_code code = kafka_code_of(rerr, &retriable);
    if (code == TB_OK)
        code = TB_ERR_KAFKA;
    va_list ap;
    va_start(ap, fmt);
    kafka_verror(err, code, retriable, rd_kafka_err2str(rerr), rd_kafka_err2name(rerr), fmt, ap);
    va_end(ap);
    return code;
}

tb_code kafka_error_obj(tb_error *err, const rd_kafka_error_t *e, const char *fmt, ...)
{
    bool retriable;
    tb_code code = kafka_code_of(rd_kafka_error_code(e), &retriable);
    if (code == TB_OK)
        code = TB_ERR_KAFKA;
    retriable = rd_kafka_error_is_retriable(e) != 0;
    va_list ap;
    va_start(ap, fmt);
    kafka_verror(err, code, retriable, rd_kafka_error_string(e), rd_kafka_error_name(e), fmt, ap);
    va_end(ap);
    return code;
}

/* ------------------------------------------------------------ configuration */

void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    (void)fac;
    tb_log_syslog(level, "kafka", buf);
}

rd_kafka_conf_t *kafka_conf_new(void)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (conf)
        rd_kafka_conf_set_log_cb(conf, kafka_log_cb);
    return conf;
}

tb_code kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, tb_error *err)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
        return tb_error_set(err, TB_ERR_CONFIG, false, "kafka.%s: %s", key, errstr);
    return TB_OK;
}

tb_code kafka_client_new(rd_kafka_conf_t *conf, rd_kafka_type_t type, const char *what, rd_kafka_t **out,
                         tb_error *err)
{
    char errstr[512];
    *out = rd_kafka_new(type, conf, errstr, sizeof(errstr));
    if (!*out) {
        rd_kafka_conf_destroy(conf);
        return tb_error_set(err, TB_ERR_CONFIG, false, "cannot create the %s: %s", what, errstr);
    }
    return TB_OK;
}

/* ------------------------------------------------------------ admin */

rd_kafka_event_t *kafka_admin_wait(rd_kafka_t *rk, rd_kafka_queue_t *q, int timeout_ms, const bool *stop)
{
    int64_t deadline = tb_mono_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - tb_mono_ms();
        if (left <= 0)
            return NULL;
        if (stop && left > 100)
            left = 100;
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, (int)left);
        if (ev)
            return ev;
        if (stop) {
            rd_kafka_poll(rk, 0);
            if (*stop)
                return NULL;
        }
    }
}

tb_code kafka_topic_create(rd_kafka_t *rk, const char *topic, int partitions, int replication_factor, bool compact,
                           int timeout_ms, const bool *stop, bool *exists, tb_error *err)
{
    tb_code rc = TB_OK;
    char errstr[512];
    rd_kafka_event_t *ev = NULL;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, replication_factor, errstr, sizeof(errstr));
    if (exists)
        *exists = false;
    if (!nt) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "topic %s: %s", topic, errstr);
        goto out;
    }
    if (!q || !opt) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "topic %s: out of memory", topic);
        goto out;
    }
    if (compact && rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact")) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "topic %s: cannot set cleanup.policy", topic);
        goto out;
    }
    rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, errstr, sizeof(errstr));
    rd_kafka_AdminOptions_set_operation_timeout(opt, timeout_ms, errstr, sizeof(errstr));
    rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
    if (!(ev = kafka_admin_wait(rk, q, timeout_ms + 1000, stop))) {
        rc = tb_error_set(err, TB_ERR_KAFKA, true, "topic %s: CreateTopics timed out after %d ms", topic, timeout_ms);
        goto out;
    }
    if (rd_kafka_event_error(ev)) {
        rc = kafka_error(err, rd_kafka_event_error(ev), "topic %s: CreateTopics", topic);
        goto out;
    }
    const rd_kafka_CreateTopics_result_t *cres = rd_kafka_event_CreateTopics_result(ev);
    size_t nres = 0;
    const rd_kafka_topic_result_t **trs = cres ? rd_kafka_CreateTopics_result_topics(cres, &nres) : NULL;
    rd_kafka_resp_err_t terr = nres == 1 ? rd_kafka_topic_result_error(trs[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
    if (terr == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        if (exists)
            *exists = true;
    } else if (terr != RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *detail = nres == 1 ? rd_kafka_topic_result_error_string(trs[0]) : NULL;
        rc = kafka_error(err, terr, "topic %s: CreateTopics%s%s", topic, detail ? ": " : "", detail ? detail : "");
    }
out:
    if (ev)
        rd_kafka_event_destroy(ev);
    if (opt)
        rd_kafka_AdminOptions_destroy(opt);
    if (nt)
        rd_kafka_NewTopic_destroy(nt);
    if (q)
        rd_kafka_queue_destroy(q);
    return rc;
}
