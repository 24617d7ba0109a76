/*
 * ksink_admin: topics through the Kafka Admin API (DESIGN 4).
 *
 * ksink_topic_ensure() sends CreateTopics (kafka_topic_create: cleanup.policy=
 * compact for compacted topics, topic.partitions, topic.replication.factor). When the
 * broker answers TOPIC_ALREADY_EXISTS and the topic must be compacted, it
 * reads the topic's cleanup.policy with DescribeConfigs and refuses anything
 * but "compact" unless topic.check.compact=false. One round trip for a new
 * topic, two for an existing one; the caller caches the outcome per topic.
 */
#include <stdio.h>
#include <string.h>

#include "ksink_int.h"
#include "tb_log.h"

static tb_code ksink_check_compact(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *topic, int timeout_ms,
                                   const bool *stop, tb_error *err)
{
    tb_code rc = TB_OK;
    char errstr[512];
    rd_kafka_event_t *ev = NULL;
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
    if (!res || !opt) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "topic %s: out of memory", topic);
        goto out;
    }
    rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, errstr, sizeof(errstr));
    rd_kafka_DescribeConfigs(rk, &res, 1, opt, q);
    if (!(ev = kafka_admin_wait(rk, q, timeout_ms + 1000, stop))) {
        rc = tb_error_set(err, TB_ERR_KAFKA, true, "topic %s: DescribeConfigs timed out after %d ms", topic,
                          timeout_ms);
        goto out;
    }
    if (rd_kafka_event_error(ev)) {
        rc = kafka_error(err, rd_kafka_event_error(ev), "topic %s: DescribeConfigs", topic);
        goto out;
    }
    const rd_kafka_DescribeConfigs_result_t *dres = rd_kafka_event_DescribeConfigs_result(ev);
    size_t nres = 0;
    const rd_kafka_ConfigResource_t **rs = dres ? rd_kafka_DescribeConfigs_result_resources(dres, &nres) : NULL;
    if (nres != 1) {
        rc = tb_error_set(err, TB_ERR_KAFKA, false, "topic %s: DescribeConfigs returned %zu resources", topic, nres);
        goto out;
    }
    if (rd_kafka_ConfigResource_error(rs[0])) {
        rc = kafka_error(err, rd_kafka_ConfigResource_error(rs[0]), "topic %s: DescribeConfigs", topic);
        goto out;
    }
    size_t nent = 0;
    const rd_kafka_ConfigEntry_t **ents = rd_kafka_ConfigResource_configs(rs[0], &nent);
    const char *policy = NULL;
    for (size_t i = 0; i < nent; i++)
        if (strcmp(rd_kafka_ConfigEntry_name(ents[i]), "cleanup.policy") == 0)
            policy = rd_kafka_ConfigEntry_value(ents[i]);
    if (!policy || strcmp(policy, "compact") != 0)
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "topic %s exists with cleanup.policy=%s, not compact: its changelog would lose rows; "
                          "set cleanup.policy=compact on it, or topic.check.compact=false to use it anyway",
                          topic, policy ? policy : "(unknown)");
out:
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_ConfigResource_destroy(res);
    if (opt)
        rd_kafka_AdminOptions_destroy(opt);
    return rc;
}

tb_code ksink_topic_ensure(rd_kafka_t *rk, const cfg *c, const char *topic, int partitions, bool compact,
                           tb_error *err)
{
    return ksink_topic_ensure_until(rk, c, topic, partitions, compact, NULL, err);
}

tb_code ksink_topic_ensure_until(rd_kafka_t *rk, const cfg *c, const char *topic, int partitions, bool compact,
                                 const bool *stop, tb_error *err)
{
    if (!cfg_get_bool(c, "topic.create"))
        return TB_OK;
    if (partitions <= 0)
        partitions = (int)cfg_get_int(c, "topic.partitions");
    int rf = (int)cfg_get_int(c, "topic.replication.factor");
    int timeout_ms = ksink_request_timeout_ms(c);
    bool exists = false;
    tb_code rc = kafka_topic_create(rk, topic, partitions, rf, compact, timeout_ms, stop, &exists, err);
    if (rc != TB_OK)
        return rc;
    if (!exists) {
        TB_INFO("ksink", "created topic %s (%d partitions, replication factor %d%s)", topic, partitions, rf,
                compact ? ", compacted" : "");
        return TB_OK;
    }
    if (!compact || !cfg_get_bool(c, "topic.check.compact"))
        return TB_OK;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    if (!q)
        return tb_error_set(err, TB_ERR_NOMEM, false, "topic %s: out of memory", topic);
    rc = ksink_check_compact(rk, q, topic, timeout_ms, stop, err);
    rd_kafka_queue_destroy(q);
    return rc;
}

tb_code ksink_offsets_topic(const cfg *c, tb_buf *out)
{
    return tb_buf_printf(out, "%s.offsets", cfg_get_str(c, "name"));
}

tb_code ksink_dlq_topic(const cfg *c, tb_buf *out)
{
    return tb_buf_printf(out, "%s.dlq", cfg_get_str(c, "name"));
}
