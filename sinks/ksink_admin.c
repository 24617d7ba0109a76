/*
 * ksink_admin: topics through the Kafka Admin API (DESIGN 4).
 *
 * ksink_topic_ensure() first asks the metadata for the topic. A topic the
 * cluster does not have is planned from the cluster (its metadata: the
 * brokers; without topic.replication.factor, the answering broker's
 * default.replication.factor, at most the number of brokers; without
 * topic.min.insync.replicas, 2 for a replication factor of 3 or more, else 1)
 * and created with CreateTopics (cleanup.policy=compact for compacted topics,
 * min.insync.replicas, topic.partitions). For a topic the cluster has (the
 * metadata lists it, or the broker answers TOPIC_ALREADY_EXISTS) it takes the
 * topic's replica count from the metadata and reads its
 * cleanup.policy and min.insync.replicas (DescribeConfigs): it refuses anything
 * but "compact" for a compacted topic unless topic.check.compact=false, and
 * WARNs, naming the fix, about a replication factor of 1 on a cluster of
 * several brokers or a min.insync.replicas that loses acknowledged writes or
 * stops them. The caller caches the outcome per topic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ksink_int.h"
#include "tb_clock.h"
#include "tb_log.h"

/* The min.insync.replicas a topic of replication factor rf gets by default:
 * an acknowledged write (acks=all) on two brokers once there are three. */
int ksink_default_min_insync(int rf)
{
    return rf >= 3 ? 2 : 1;
}

void ksink_topic_check_replication(const char *topic, int brokers, int rf, int min_insync)
{
    if (rf <= 0)
        return;
    if (rf == 1 && brokers > 1)
        TB_WARN("ksink",
                "topic %s has replication factor 1 on a cluster of %d brokers: losing the one broker that holds a "
                "partition stops the connector and may lose the topic; raise it with kafka-reassign-partitions "
                "(a new topic gets the cluster's default, or topic.replication.factor)",
                topic, brokers);
    if (min_insync <= 0)
        return;
    if (min_insync > rf)
        TB_WARN("ksink",
                "topic %s: min.insync.replicas=%d is more than its replication factor %d: the brokers refuse every "
                "write (NOT_ENOUGH_REPLICAS); set it: kafka-configs --alter --entity-type topics --entity-name %s "
                "--add-config min.insync.replicas=%d",
                topic, min_insync, rf, topic, ksink_default_min_insync(rf));
    else if (rf >= 3 && min_insync < 2)
        TB_WARN("ksink",
                "topic %s: min.insync.replicas=%d with replication factor %d: a write the brokers acknowledge may "
                "be on one broker only and is lost with it; set it: kafka-configs --alter --entity-type topics "
                "--entity-name %s --add-config min.insync.replicas=2",
                topic, min_insync, rf, topic);
    else if (rf > 1 && min_insync == rf)
        TB_WARN("ksink",
                "topic %s: min.insync.replicas=%d equals its replication factor: losing any one broker stops every "
                "write; set it: kafka-configs --alter --entity-type topics --entity-name %s "
                "--add-config min.insync.replicas=%d",
                topic, min_insync, topic, rf - 1);
}

/* Replication factor and min.insync.replicas for a new topic (see the top). */
static tb_code ksink_topic_plan(rd_kafka_t *rk, const cfg *c, int timeout_ms, const bool *stop, int *rf,
                                int *min_insync, int *brokers, tb_error *err)
{
    kafka_cluster_md md;
    tb_code rc = kafka_cluster_metadata(rk, NULL, timeout_ms, &md, err);
    if (rc != TB_OK)
        return rc;
    *brokers = md.brokers;
    if (cfg_is_set(c, CFGK_TOPIC_REPLICATION_FACTOR)) {
        *rf = (int)cfg_get_int(c, CFGK_TOPIC_REPLICATION_FACTOR);
    } else {
        char id[16], *v = NULL;
        const char *key = "default.replication.factor";
        snprintf(id, sizeof id, "%d", (int)md.broker_id);
        tb_error derr;
        tb_error_clear(&derr);
        if (kafka_describe_configs(rk, RD_KAFKA_RESOURCE_BROKER, id, &key, &v, 1, timeout_ms, stop, &derr) != TB_OK ||
            !v) {
            /* not allowed to read it (DESCRIBE_CONFIGS): the broker applies its default to the new topic and
             * its own min.insync.replicas */
            TB_WARN("ksink",
                    "cannot read the cluster's default.replication.factor (%s): new topics get the broker's "
                    "defaults; set topic.replication.factor and topic.min.insync.replicas to choose",
                    v ? "no value" : derr.msg);
            free(v);
            *rf = -1;
            *min_insync = cfg_is_set(c, CFGK_TOPIC_MIN_INSYNC_REPLICAS) ? (int)cfg_get_int(c, CFGK_TOPIC_MIN_INSYNC_REPLICAS)
                                                                     : 0;
            return TB_OK;
        }
        *rf = atoi(v);
        free(v);
        if (*rf < 1)
            *rf = 1;
        if (md.brokers > 0 && *rf > md.brokers) {
            TB_WARN("ksink",
                    "the cluster's default.replication.factor is %d but its metadata lists %d brokers: new topics "
                    "get replication factor %d (a broker down now leaves them under-replicated for good: set "
                    "topic.replication.factor to wait for it instead)",
                    *rf, md.brokers, md.brokers);
            *rf = md.brokers;
        }
    }
    *min_insync = cfg_is_set(c, CFGK_TOPIC_MIN_INSYNC_REPLICAS) ? (int)cfg_get_int(c, CFGK_TOPIC_MIN_INSYNC_REPLICAS)
                                                             : ksink_default_min_insync(*rf);
    return TB_OK;
}

/* An existing topic: its cleanup.policy (refused unless compact, when compact
 * and topic.check.compact), its replication and min.insync.replicas (WARNs). */
static tb_code ksink_topic_check(rd_kafka_t *rk, const cfg *c, const char *topic, bool compact,
                                 const kafka_cluster_md *known, int timeout_ms, const bool *stop, tb_error *err)
{
    kafka_cluster_md md;
    tb_code rc = TB_OK;
    if (known)
        md = *known;
    else if ((rc = kafka_cluster_metadata(rk, topic, timeout_ms, &md, err)) != TB_OK)
        return rc;
    const char *keys[] = {"cleanup.policy", "min.insync.replicas"};
    char *v[2];
    bool need_policy = compact && cfg_get_bool(c, CFGK_TOPIC_CHECK_COMPACT);
    tb_error derr;
    tb_error_clear(&derr);
    if ((rc = kafka_describe_configs(rk, RD_KAFKA_RESOURCE_TOPIC, topic, keys, v, 2, timeout_ms, stop, &derr)) !=
        TB_OK) {
        if (need_policy) {
            *err = derr;
            return rc;
        }
        /* nothing to refuse: the replication check needs min.insync.replicas, which we may not read */
        TB_WARN("ksink", "%s: its min.insync.replicas is not checked", derr.msg);
        ksink_topic_check_replication(topic, md.brokers, md.replicas, 0);
        return TB_OK;
    }
    const char *policy = v[0];
    if (need_policy && (!policy || strcmp(policy, "compact") != 0))
        rc = tb_error_set(err, TB_ERR_CONFIG, false,
                          "topic %s exists with cleanup.policy=%s, not compact: its changelog would lose rows; "
                          "set cleanup.policy=compact on it, or topic.check.compact=false to use it anyway",
                          topic, policy ? policy : "(unknown)");
    else
        ksink_topic_check_replication(topic, md.brokers, md.replicas, v[1] ? atoi(v[1]) : 0);
    free(v[0]);
    free(v[1]);
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
    if (!cfg_get_bool(c, CFGK_TOPIC_CREATE))
        return TB_OK;
    if (partitions <= 0)
        partitions = (int)cfg_get_int(c, CFGK_TOPIC_PARTITIONS);
    int timeout_ms = ksink_request_timeout_ms(c);
    /* A topic the cluster has (every topic but the new ones, at a restart): its check only, on the
     * metadata of this one request. Missing, it is planned and created below. */
    kafka_cluster_md known;
    bool missing = false;
    tb_code rc = kafka_topic_metadata(rk, topic, timeout_ms, &missing, &known, err);
    if (rc != TB_OK)
        return rc;
    if (!missing && known.replicas > 0)
        return ksink_topic_check(rk, c, topic, compact, &known, timeout_ms, stop, err);
    int rf = 0, min_insync = 0, brokers = 0;
    rc = ksink_topic_plan(rk, c, timeout_ms, stop, &rf, &min_insync, &brokers, err);
    if (rc != TB_OK)
        return rc;
    char misr[16];
    snprintf(misr, sizeof misr, "%d", min_insync);
    char dret[24];
    snprintf(dret, sizeof dret, "%lld", (long long)cfg_get_int(c, CFGK_TOPIC_DELETE_RETENTION_MS));
    const char *configs[8];
    size_t n = 0;
    if (compact) { /* a tombstone stays delete.retention.ms once compacted: the longest a cache may be stopped */
        configs[n++] = "cleanup.policy";
        configs[n++] = "compact";
        configs[n++] = "delete.retention.ms";
        configs[n++] = dret;
    }
    if (min_insync > 0) {
        configs[n++] = "min.insync.replicas";
        configs[n++] = misr;
    }
    configs[n] = NULL;
    bool exists = false;
    /* Retriable refusals (a broker still fenced after its restart, a controller moving) are tried
     * again until the request timeout has passed since the first try. */
    int64_t deadline = tb_mono_ms() + timeout_ms;
    for (;;) {
        tb_error cerr;
        tb_error_clear(&cerr);
        rc = kafka_topic_create(rk, topic, partitions, rf, configs, timeout_ms, stop, &exists, &cerr);
        if (rc == TB_OK)
            break;
        if (!cerr.retriable || tb_mono_ms() >= deadline || (stop && *stop)) {
            if (err)
                *err = cerr;
            return rc;
        }
        TB_DEBUG("ksink", "%s; trying again", cerr.msg);
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!exists) {
        if ((rc = kafka_topic_wait_ready(rk, topic, partitions, timeout_ms, stop, err)) != TB_OK)
            return rc;
        if (rf > 0 && min_insync > 0)
            TB_INFO("ksink", "created topic %s (%d partitions, replication factor %d, min.insync.replicas %d%s)",
                    topic, partitions, rf, min_insync, compact ? ", compacted" : "");
        else
            TB_INFO("ksink", "created topic %s (%d partitions, the broker's default replication%s)", topic, partitions,
                    compact ? ", compacted" : "");
        ksink_topic_check_replication(topic, brokers, rf, min_insync);
        return TB_OK;
    }
    return ksink_topic_check(rk, c, topic, compact, NULL, timeout_ms, stop, err);
}

tb_code ksink_offsets_topic(const cfg *c, tb_buf *out)
{
    return tb_buf_printf(out, "%s.offsets", cfg_get_str(c, CFGK_NAME));
}

tb_code ksink_dlq_topic(const cfg *c, tb_buf *out)
{
    return tb_buf_printf(out, "%s.dlq", cfg_get_str(c, CFGK_NAME));
}
