/*
 * ksink_conf: librdkafka configuration for the sink's clients (fixed
 * settings, tuned defaults, kafka.* keys), on kafka/kafka.h's configuration,
 * log callback and error translation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ksink_int.h"
#include "tb_log.h"

/* ------------------------------------------------------------ config */

/* The librdkafka client type of a role. */
static rd_kafka_type_t ksink_role_type(ksink_role role)
{
    return role == KSINK_ROLE_CONSUMER || role == KSINK_ROLE_SCAN ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER;
}

/* Keys the contract fixes: a kafka.* setting that contradicts them is refused. */
static bool ksink_conf_fixed(const char *key, const char *value, ksink_role role, const char **why)
{
    if (ksink_role_type(role) == RD_KAFKA_CONSUMER)
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
        *why = "the transactional id is the connector name, used when exactly.once=true";
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
    x->rc = kafka_conf_pass(x->conf, ksink_role_type(x->role), key, value, x->err);
}

tb_code ksink_conf_new(const cfg *c, ksink_role role, rd_kafka_conf_t **out, tb_error *err)
{
    tb_code rc = TB_OK;
    rd_kafka_conf_t *conf = kafka_conf_new();
    const char *name = cfg_get_str(c, CFGK_NAME);
    char client_id[256];
    *out = NULL;
    if (!conf)
        return tb_error_set(err, TB_ERR_NOMEM, false, "kafka configuration: out of memory");
    snprintf(client_id, sizeof(client_id), "%s%s", name ? name : "tributary",
             role == KSINK_ROLE_CONSUMER ? "-offsets-reader" : role == KSINK_ROLE_SCAN ? "-reader" : "");

    /* Tuned defaults first, so kafka.* can override them. */
    struct { const char *k, *v; } defs_producer[] = {
        {"client.id", client_id},
        {"linger.ms", "5"}, /* ksink.h: pushed at once when the caller waits */
        {"batch.num.messages", "100000"},
        {"batch.size", "1000000"},
        {"compression.type", "lz4"},
        {"queue.buffering.max.messages", "1000000"},
    };
    struct { const char *k, *v; } defs_consumer[] = {
        {"client.id", client_id},
        {"isolation.level", "read_committed"},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "true"},
        {"auto.offset.reset", "earliest"},
    };
    bool consumer = ksink_role_type(role) == RD_KAFKA_CONSUMER;
    if (consumer) {
        for (size_t i = 0; rc == TB_OK && i < sizeof(defs_consumer) / sizeof(defs_consumer[0]); i++)
            rc = kafka_conf_set(conf, defs_consumer[i].k, defs_consumer[i].v, err);
    } else {
        for (size_t i = 0; rc == TB_OK && i < sizeof(defs_producer) / sizeof(defs_producer[0]); i++)
            rc = kafka_conf_set(conf, defs_producer[i].k, defs_producer[i].v, err);
        /* the sink makes its topics (compacted, replicated as planned): a broker with
         * auto.create.topics.enable must not make one of its own, with the broker's defaults,
         * when a topic that was deleted is produced to or asked about */
        if (rc == TB_OK && cfg_get_bool(c, CFGK_TOPIC_CREATE))
            rc = kafka_conf_set(conf, "allow.auto.create.topics", "false", err);
        /* The bytes of messages handed to the client and not yet acknowledged: the bulk of
         * the memory of a catch-up or a snapshot (each message also costs a few hundred bytes
         * the bound does not count). KSINK_QUEUE_KB keeps the 1M-row catch-up and snapshot
         * near 30 MiB of RSS (docs/STATUS.md), about 15% below the rate of a 32 MiB queue;
         * twice the largest message, if more, so that one always fits. */
        char kb[32];
        long max_kb = ksink_max_message_bytes(c) / 512 + 1;
        snprintf(kb, sizeof kb, "%ld", max_kb > KSINK_QUEUE_KB ? max_kb : (long)KSINK_QUEUE_KB);
        if (rc == TB_OK)
            rc = kafka_conf_set(conf, "queue.buffering.max.kbytes", kb, err);
    }
    if (rc == TB_OK && role == KSINK_ROLE_SCAN) {
        /* one pass over a topic: the prefetch queue (64 MiB by default) and a fetch response
         * (fetch.max.bytes, 50 MiB; 1 MiB a partition) kept small. A response is queued whole,
         * decompressed, over the queue's bound: 256 KiB a partition. A batch larger than that
         * still comes, alone (Kafka returns at least one). */
        char kb[32], fetch[32];
        long max_msg = ksink_max_message_bytes(c);
        snprintf(kb, sizeof kb, "%d", KSINK_SCAN_QUEUE_KB);
        snprintf(fetch, sizeof fetch, "%ld", max_msg > 1048576 ? max_msg : 1048576);
        if ((rc = kafka_conf_set(conf, "queued.max.messages.kbytes", kb, err)) == TB_OK &&
            (rc = kafka_conf_set(conf, "fetch.max.bytes", fetch, err)) == TB_OK)
            rc = kafka_conf_set(conf, "max.partition.fetch.bytes", "262144", err);
        /* librdkafka 2.4 and later: re-check a partition whose queue was full after 10 ms, not
         * 1 s (older versions do not know the key: ksink_topic_read wakes the fetcher instead) */
        char errstr[256];
        if (rc == TB_OK) /* the result is not looked at: unknown before 2.4, handled there */
            (void)rd_kafka_conf_set(conf, "fetch.queue.backoff.ms", "10", errstr, sizeof errstr);
    }
    if (rc != TB_OK)
        goto out;

    ksink_each_ctx x = {conf, role, err, TB_OK};
    cfg_each_prefixed(c, "kafka.", ksink_conf_each, &x);
    if ((rc = x.rc) != TB_OK)
        goto out;

    if (!consumer) {
        /* a message larger than the queue's bound would wait for room forever */
        char v[32];
        size_t vlen = sizeof v;
        long max_msg = ksink_max_message_bytes(c);
        if (rd_kafka_conf_get(conf, "queue.buffering.max.kbytes", v, &vlen) == RD_KAFKA_CONF_OK &&
            strtol(v, NULL, 10) * 1024 < max_msg) {
            rc = tb_error_set(err, TB_ERR_CONFIG, false,
                              "kafka.queue.buffering.max.kbytes=%s is smaller than a message may be "
                              "(kafka.message.max.bytes=%ld): such a message would never be sent; raise it "
                              "to at least %ld",
                              v, max_msg, (max_msg + 1023) / 1024);
            goto out;
        }
        if ((rc = kafka_conf_set(conf, "enable.idempotence", "true", err)) != TB_OK ||
            (rc = kafka_conf_set(conf, "acks", "all", err)) != TB_OK ||
            (rc = kafka_conf_set(conf, "partitioner", "murmur2_random", err)) != TB_OK)
            goto out;
    }
    if (role == KSINK_ROLE_TXN && (rc = kafka_conf_set(conf, "transactional.id", name, err)) != TB_OK)
        goto out;
    *out = conf;
    conf = NULL;
out:
    if (conf)
        rd_kafka_conf_destroy(conf);
    return rc;
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

