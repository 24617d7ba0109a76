/*
 * ksink_conf: librdkafka configuration for the sink's clients, the log
 * callback, and the translation of librdkafka errors into tb_codes (the one
 * place that happens, STYLE 2).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ksink_int.h"
#include "tb_log.h"

/* ------------------------------------------------------------ errors */

static tb_code ksink_code_of(rd_kafka_resp_err_t rerr, bool *retriable)
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

static tb_code ksink_verror(tb_error *err, tb_code code, bool retriable, const char *what,
                            const char *name, const char *fmt, va_list ap)
{
    char ctx[512];
    vsnprintf(ctx, sizeof(ctx), fmt, ap);
    return tb_error_set(err, code, retriable, "%s: %s (%s)", ctx, what, name);
}

tb_code ksink_kafka_error(tb_error *err, rd_kafka_resp_err_t rerr, const char *fmt, ...)
{
    bool retriable;
    tb_code code = ksink_code_of(rerr, &retriable);
    if (code == TB_OK)
        code = TB_ERR_KAFKA;
    va_list ap;
    va_start(ap, fmt);
    ksink_verror(err, code, retriable, rd_kafka_err2str(rerr), rd_kafka_err2name(rerr), fmt, ap);
    va_end(ap);
    return code;
}

tb_code ksink_kafka_error_obj(tb_error *err, const rd_kafka_error_t *e, const char *fmt, ...)
{
    bool retriable;
    tb_code code = ksink_code_of(rd_kafka_error_code(e), &retriable);
    if (code == TB_OK)
        code = TB_ERR_KAFKA;
    retriable = rd_kafka_error_is_retriable(e) != 0;
    va_list ap;
    va_start(ap, fmt);
    ksink_verror(err, code, retriable, rd_kafka_error_string(e), rd_kafka_error_name(e), fmt, ap);
    va_end(ap);
    return code;
}

/* ------------------------------------------------------------ config */

/* librdkafka calls this from its own threads: it only forwards. */
static void ksink_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    (void)fac;
    tb_log_syslog(level, "kafka", buf);
}

static tb_code ksink_conf_put(rd_kafka_conf_t *conf, const char *key, const char *value, tb_error *err)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
        return tb_error_set(err, TB_ERR_CONFIG, false, "kafka.%s: %s", key, errstr);
    return TB_OK;
}

/* Keys the contract fixes: a kafka.* setting that contradicts them is refused. */
static bool ksink_conf_fixed(const char *key, const char *value, ksink_role role, const char **why)
{
    if (role == KSINK_ROLE_CONSUMER)
        return false;
    if (strcmp(key, "enable.idempotence") == 0 && strcmp(value, "true") != 0) {
        *why = "the sink needs enable.idempotence=true (DESIGN 6)";
        return true;
    }
    if ((strcmp(key, "acks") == 0 || strcmp(key, "request.required.acks") == 0) &&
        strcmp(value, "all") != 0 && strcmp(value, "-1") != 0) {
        *why = "the sink needs acks=all (DESIGN 6)";
        return true;
    }
    if (strcmp(key, "transactional.id") == 0) {
        *why = "the transactional id is the connector name, used when exactly_once=true";
        return true;
    }
    if (strcmp(key, "partitioner") == 0 && strcmp(value, "murmur2_random") != 0) {
        *why = "the sink needs partitioner=murmur2_random (DESIGN 4)";
        return true;
    }
    return false;
}

typedef struct ksink_each_ctx {
    rd_kafka_conf_t *conf;
    ksink_role role;
    tb_error *err;
    tb_code rc;
} ksink_each_ctx;

static void ksink_conf_each(const char *key, const char *value, void *opaque)
{
    ksink_each_ctx *x = opaque;
    const char *why = NULL;
    if (x->rc != TB_OK)
        return;
    if (ksink_conf_fixed(key, value, x->role, &why)) {
        x->rc = tb_error_set(x->err, TB_ERR_CONFIG, false, "kafka.%s=%s: %s", key, value, why);
        return;
    }
    x->rc = ksink_conf_put(x->conf, key, value, x->err);
}

tb_code ksink_conf_new(const cfg *c, ksink_role role, rd_kafka_conf_t **out, tb_error *err)
{
    tb_code rc = TB_OK;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *name = cfg_get_str(c, "name");
    char client_id[256];
    *out = NULL;
    if (!conf)
        return tb_error_set(err, TB_ERR_NOMEM, false, "rd_kafka_conf_new failed");
    snprintf(client_id, sizeof(client_id), "%s%s", name ? name : "tributary",
             role == KSINK_ROLE_CONSUMER ? "-offsets-reader" : "");
    rd_kafka_conf_set_log_cb(conf, ksink_log_cb);

    /* Tuned defaults first, so kafka.* can override them. */
    struct { const char *k, *v; } defs_producer[] = {
        {"client.id", client_id},
        {"linger.ms", "5"},
        {"batch.num.messages", "100000"},
        {"batch.size", "1000000"},
        {"compression.type", "lz4"},
        {"queue.buffering.max.messages", "1000000"},
        {"queue.buffering.max.kbytes", "32768"},
    };
    struct { const char *k, *v; } defs_consumer[] = {
        {"client.id", client_id},
        {"isolation.level", "read_committed"},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "true"},
        {"auto.offset.reset", "earliest"},
    };
    if (role == KSINK_ROLE_CONSUMER) {
        for (size_t i = 0; rc == TB_OK && i < sizeof(defs_consumer) / sizeof(defs_consumer[0]); i++)
            rc = ksink_conf_put(conf, defs_consumer[i].k, defs_consumer[i].v, err);
    } else {
        for (size_t i = 0; rc == TB_OK && i < sizeof(defs_producer) / sizeof(defs_producer[0]); i++)
            rc = ksink_conf_put(conf, defs_producer[i].k, defs_producer[i].v, err);
    }
    if (rc != TB_OK)
        goto out;

    ksink_each_ctx x = {conf, role, err, TB_OK};
    cfg_each_prefixed(c, "kafka.", ksink_conf_each, &x);
    if ((rc = x.rc) != TB_OK)
        goto out;

    if (role != KSINK_ROLE_CONSUMER) {
        if ((rc = ksink_conf_put(conf, "enable.idempotence", "true", err)) != TB_OK ||
            (rc = ksink_conf_put(conf, "acks", "all", err)) != TB_OK ||
            (rc = ksink_conf_put(conf, "partitioner", "murmur2_random", err)) != TB_OK)
            goto out;
    }
    if (role == KSINK_ROLE_TXN && (rc = ksink_conf_put(conf, "transactional.id", name, err)) != TB_OK)
        goto out;
    *out = conf;
    conf = NULL;
out:
    if (conf)
        rd_kafka_conf_destroy(conf);
    return rc;
}

tb_code ksink_client_new(rd_kafka_conf_t *conf, rd_kafka_type_t type, rd_kafka_t **out, tb_error *err)
{
    char errstr[512];
    *out = rd_kafka_new(type, conf, errstr, sizeof(errstr));
    if (!*out) {
        rd_kafka_conf_destroy(conf);
        return tb_error_set(err, TB_ERR_CONFIG, false, "cannot create Kafka client: %s", errstr);
    }
    return TB_OK;
}

long ksink_max_message_bytes(const cfg *c)
{
    const char *v = NULL;
    if (cfg_is_set(c, "kafka.message.max.bytes"))
        v = cfg_get_str(c, "kafka.message.max.bytes");
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 ? n : 1000000;
}

int ksink_request_timeout_ms(const cfg *c)
{
    (void)c;
    return 30000;
}

int64_t ksink_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
