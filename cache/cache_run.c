/*
 * cache_run: the consume-apply-commit loop of the table cache.
 *
 * Two consumers: one reads the "<prefix>.schema" partitions (always assigned,
 * in every mode: every cache needs every table's descriptor) and is drained
 * first, up to its high watermarks, so tables are typed before rows arrive;
 * the other reads the table topics, by assignment (global mode: every
 * partition, new topics found by a periodic metadata scan) or as a member of
 * a consumer group (cooperative-sticky, incremental assign/unassign in the
 * rebalance callback). Both start each partition at the offset stored in the
 * cache file. enable.auto.commit=false: Kafka's committed offsets are unused.
 *
 * A batch (cache.batch.size messages, or what arrived before the consumer
 * went idle, or one second's worth) is one SQLite transaction together with
 * the next offsets of the partitions it touched. A message below a
 * partition's next offset is a duplicate (a refetch) and is not applied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "av_msg.h"
#include "cache_apply.h"
#include "cache_kafka.h"
#include "tb_clock.h"
#include "tb_log.h"

typedef struct cache_ctx {
    const cache_opts *o;
    cache_store *s;
    rd_kafka_t *rk;     /* table topics */
    rd_kafka_t *rks;    /* schema topics */
    rd_kafka_queue_t *q, *qs; /* their consumer queues */
    rd_kafka_t *dlq;    /* producer, policy dlq */
    char *dlq_topic;
    regex_t re;
    bool re_ok;
    char *prefix;       /* known <prefix> (options or a schema topic) */
    int64_t alive0;     /* alive_at when this run opened the file: the end of the last run */
    char *ret_topic;    /* the topic whose delete.retention.ms is ret_ms (-1 unknown) */
    int64_t ret_ms;
    cache_part *parts;
    size_t nparts, cap;
    int64_t batch_n;
    double batch_t0;
    bool assigned_once; /* the table consumer got its (first) assignment */
    bool listed;        /* a topic listing succeeded */
    bool caught_up;
    bool closing;
    bool failed;
    tb_error fatal;
    int64_t msgs, last_msgs;
    int64_t applied0, skipped0, dlq0; /* the store's counters when this run began */
    double last_progress, last_log, last_meta;
    int dlq_pending, dlq_failed;
    cache_nudge *nudge; /* wakes the table consumer's fetcher (cache_nudge.c) */
    rd_kafka_t *rkh;    /* cache.debezium.history.topic reader (partition 0, assigned) */
    int64_t hist_next;  /* its next offset */
    cache_partition_lag *lags; /* progress(): per-partition lag, reused */
    size_t lags_cap;
    av_msg *avro;       /* Avro topics: the registry's schemas by id (opened at the first Avro message) */
    tb_buf *avbuf;      /* their keys and values as Kafka Connect JSON, kept until the batch is flushed */
    size_t avbuf_n, avbuf_cap;
} cache_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool is_schema_topic(const cache_ctx *c, const char *topic)
{
    size_t n = strlen(topic);
    if (c->o->topic_prefix && *c->o->topic_prefix) {
        size_t pl = strlen(c->o->topic_prefix);
        return n == pl + 7 && strncmp(topic, c->o->topic_prefix, pl) == 0 && strcmp(topic + pl, ".schema") == 0;
    }
    return n > 7 && strcmp(topic + n - 7, ".schema") == 0;
}

static bool wanted_topic(const cache_ctx *c, const char *topic)
{
    size_t n = strlen(topic);
    if (strncmp(topic, "__", 2) == 0 || (n > 10 && strcmp(topic + n - 10, ".cache.dlq") == 0))
        return false;
    if (c->o->name) {
        size_t nl = strlen(c->o->name);
        if (n == nl + 8 && strncmp(topic, c->o->name, nl) == 0 && strcmp(topic + nl, ".offsets") == 0)
            return false;
    }
    if (c->o->topic_prefix && *c->o->topic_prefix) { /* transaction metadata (transaction.topic), not a table */
        size_t pl = strlen(c->o->topic_prefix);
        if (n == pl + 12 && strncmp(topic, c->o->topic_prefix, pl) == 0 && strcmp(topic + pl, ".transaction") == 0)
            return false;
    }
    return c->re_ok && regexec(&c->re, topic, 0, NULL, 0) == 0;
}

static cache_part *part_find(cache_ctx *c, const char *topic, int32_t p, bool create)
{
    for (size_t i = 0; i < c->nparts; i++)
        if (c->parts[i].partition == p && strcmp(c->parts[i].topic, topic) == 0)
            return &c->parts[i];
    if (!create)
        return NULL;
    if (c->nparts == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        cache_part *np = realloc(c->parts, cap * sizeof(*np));
        if (!np)
            return NULL;
        c->parts = np;
        c->cap = cap;
    }
    cache_part *cp = &c->parts[c->nparts];
    memset(cp, 0, sizeof(*cp));
    if (!(cp->topic = strdup(topic)))
        return NULL;
    cp->partition = p;
    cp->next = cache_store_get_offset(c->s, topic, p);
    cp->high = -1;
    cp->schema = is_schema_topic(c, topic);
    c->nparts++;
    return cp;
}

static tb_code set_fatal(cache_ctx *c, const tb_error *e)
{
    if (!c->failed) {
        c->failed = true;
        c->fatal = *e;
    }
    return e->code;
}

/* A refused login or a broker certificate that does not verify does not heal by retrying, and
 * the consumer would retry for ever: the run fails with the broker's reason (the sink does the
 * same, sinks/ksink.c). Served by rd_kafka_poll: in the main loop every 100 ms, and when a
 * topic listing failed. */
static void error_cb(rd_kafka_t *rk, int rerr, const char *reason, void *opaque)
{
    (void)rk;
    cache_ctx *c = opaque;
    bool auth = rerr == RD_KAFKA_RESP_ERR__AUTHENTICATION;
    bool cert = rerr == RD_KAFKA_RESP_ERR__SSL && reason && strstr(reason, "certificate verify failed");
    if (!auth && !cert) {
        TB_WARN("cache", "%s (%s)", reason, rd_kafka_err2name((rd_kafka_resp_err_t)rerr));
        return;
    }
    tb_error e;
    tb_error_set(&e, TB_ERR_KAFKA, false, "Kafka %s: %s (check %s)",
                 auth ? "authentication failed" : "TLS certificate verification failed", reason,
                 auth ? "kafka.sasl.username, kafka.sasl.password(.file) and kafka.sasl.mechanisms"
                      : "kafka.ssl.ca.location");
    set_fatal(c, &e);
}

/* ------------------------------------------------------------- commit */

static void dlq_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    cache_ctx *c = opaque;
    (void)rk;
    c->dlq_pending--;
    if (m->err || kafka_dr_unconfirmed(m)) /* no offset: not written for sure (kafka.h) */
        c->dlq_failed++;
}

static tb_code commit(cache_ctx *c)
{
    tb_error e;
    tb_code rc = TB_OK;
    if (!c->s->in_tx)
        return TB_OK;
    if (c->dlq) { /* the DLQ copies must be in Kafka before their offsets are stored */
        rd_kafka_flush(c->dlq, 30000);
        if (c->dlq_pending > 0 || c->dlq_failed > 0) {
            tb_error_set(&e, TB_ERR_KAFKA, true, "could not write %d message(s) to %s",
                         c->dlq_failed + c->dlq_pending, c->dlq_topic);
            cache_store_rollback(c->s);
            return set_fatal(c, &e);
        }
    }
    for (size_t i = 0; rc == TB_OK && i < c->nparts; i++) {
        cache_part *p = &c->parts[i];
        if (p->dirty && p->next >= 0)
            rc = cache_store_put_offset(c->s, p->topic, p->partition, p->next, p->high, &e);
    }
    if (rc == TB_OK)
        rc = cache_store_commit(c->s, &e);
    if (rc != TB_OK) {
        cache_store_rollback(c->s);
        return set_fatal(c, &e);
    }
    for (size_t i = 0; i < c->nparts; i++)
        c->parts[i].dirty = false;
    c->batch_n = 0;
    return TB_OK;
}

static tb_code begin(cache_ctx *c)
{
    tb_error e;
    if (c->s->in_tx)
        return TB_OK;
    if (cache_store_begin(c->s, &e) != TB_OK)
        return set_fatal(c, &e);
    c->batch_t0 = now_s();
    return TB_OK;
}

/* ------------------------------------------------------------- assignment */

/* The topic's delete.retention.ms into p->ret_ms (DescribeConfigs; once per topic and run, -1
 * when unknown, with a WARN; -2 until asked). */
static void topic_retention(cache_ctx *c, rd_kafka_t *rk, cache_part *p)
{
    if (!c->ret_topic || strcmp(c->ret_topic, p->topic) != 0) {
        const char *keys[] = {"delete.retention.ms"};
        char *v[1] = {NULL};
        tb_error e;
        free(c->ret_topic);
        c->ret_topic = strdup(p->topic);
        c->ret_ms = -1;
        if (kafka_describe_configs(rk, RD_KAFKA_RESOURCE_TOPIC, p->topic, keys, v, 1, 10000, NULL, &e) != TB_OK)
            TB_WARN("cache", "%s: its delete.retention.ms is unknown (%s): a resume after a long stop, or a cache "
                             "that falls behind for long, is not checked",
                    p->topic, e.msg);
        else if (v[0])
            c->ret_ms = strtoll(v[0], NULL, 10);
        free(v[0]);
    }
    p->ret_ms = c->ret_ms;
}

/* A gap within this of the latest record read is not checked: a delete.retention.ms under a
 * second keeps no tombstone for any reader, and the topic's setting is asked only when needed. */
#define CACHE_GAP_FLOOR_MS 1000

/* The tombstone horizon. Kafka removes a tombstone of a compacted topic no sooner than the topic's
 * delete.retention.ms after it was appended. A tombstone the cache never read leaves a gap: the
 * next offset it reads (a record, or the partition's end) is past the one it expected. Such a gap
 * is harmless (records compaction superseded, transaction markers) unless the records in it were
 * appended more than delete.retention.ms ago, that is, after the latest write time of what the
 * cache had read (p->fresh_ms: the timestamps of its records, CreateTime, the time tributary's
 * and Connect's producers send them) by more than that. Then deletes compacted away meanwhile
 * would be missed and their rows kept for ever: policy rebuild drops the partition's rows and
 * replays it from the beginning (*replay); fail stops with the fix named. At assignment a
 * partition resumed at its stored offset is checked against alive_at, the end of the last run
 * (resumed: the cache was stopped); a replay from the beginning only once it reached its end
 * (nothing was held before). */
static tb_code check_fresh(cache_ctx *c, cache_part *p, bool resumed, bool *replay, tb_error *err)
{
    *replay = false;
    int64_t behind = tb_wall_ms() - p->fresh_ms;
    if (p->schema || !p->checked || p->fresh_ms <= 0 || (!resumed && behind <= CACHE_GAP_FLOOR_MS))
        return TB_OK;
    if (p->ret_ms == -2) /* not asked yet: once per topic and run */
        topic_retention(c, c->rk, p);
    if (p->ret_ms < 0 || behind <= p->ret_ms)
        return TB_OK;
    char what[96];
    snprintf(what, sizeof what, resumed ? "the cache was stopped for %.1f s" : "the cache fell %.1f s behind it",
             (double)behind / 1000);
    double ret_s = (double)p->ret_ms / 1000;
    if (c->o->offline_fail)
        return tb_error_set(err, TB_ERR_STATE, false,
                            "%s [%d]: %s, longer than the topic's delete.retention.ms (%.1f s): deletes compacted "
                            "away meanwhile would be missed; rebuild the cache (delete %s, or set "
                            "cache.offline.policy=rebuild), or raise delete.retention.ms on the topic "
                            "(topic.delete.retention.ms for new topics)",
                            p->topic, (int)p->partition, what, ret_s, c->o->db_path);
    TB_WARN("cache",
            "%s [%d]: %s, longer than the topic's delete.retention.ms (%.1f s): rebuilding the partition from the "
            "beginning (deletes compacted away meanwhile are not in it; cache.offline.policy=rebuild)",
            p->topic, (int)p->partition, what, ret_s);
    tb_code rc = begin(c);
    if (rc == TB_OK && (rc = cache_store_drop_partition(c->s, p->topic, p->partition, err)) == TB_OK) {
        p->next = -1;
        p->checked = false;
        *replay = true;
    }
    return rc;
}

/* Assign these partitions (topic/partition filled) to rk at their stored offsets. */
static tb_code assign(cache_ctx *c, rd_kafka_t *rk, rd_kafka_topic_partition_list_t *l)
{
    tb_error e;
    for (int i = 0; i < l->cnt; i++) {
        rd_kafka_topic_partition_t *tp = &l->elems[i];
        if (rk == c->rk && (is_schema_topic(c, tp->topic) || !wanted_topic(c, tp->topic))) {
            /* group mode: the schema topic is read by the schema consumer; the regex may also
             * match <name>.offsets or a DLQ, which are not tables: never read them */
            tp->offset = RD_KAFKA_OFFSET_END;
            continue;
        }
        cache_part *p = part_find(c, tp->topic, tp->partition, true);
        if (!p)
            return set_fatal(c, (tb_error_set(&e, TB_ERR_NOMEM, false, "out of memory"), &e));
        int64_t lo = -1, hi = -1;
        rd_kafka_resp_err_t ke = rd_kafka_query_watermark_offsets(rk, tp->topic, tp->partition, &lo, &hi, 10000);
        if (ke)
            TB_WARN("cache", "%s [%d]: high watermark unknown: %s", tp->topic, (int)tp->partition,
                    rd_kafka_err2str(ke));
        p->high = ke ? -1 : hi;
        p->ret_ms = -2; /* asked when needed: at a resume, or at the first gap (check_fresh) */
        if (p->next >= 0 && c->alive0 > 0)
            topic_retention(c, rk, p);
        p->fresh_ms = p->next >= 0 ? c->alive0 : 0;
        p->checked = p->next >= 0;
        p->end_at = p->high;
        bool replay;
        if (check_fresh(c, p, true, &replay, &e) != TB_OK)
            return set_fatal(c, &e);
        p->assigned = true;
        p->dirty = p->next >= 0;
        /* from the beginning: start at the low watermark just read, a concrete offset (librdkafka
         * resolves a logical BEGINNING of a partition it has just learnt about by a query it
         * retries 500 ms later; a log start that moved meanwhile is reset to the earliest) */
        tp->offset = p->next >= 0 ? p->next : !ke && lo >= 0 ? lo : RD_KAFKA_OFFSET_BEGINNING;
        TB_INFO("cache", "%s [%d]: assigned at %s%lld (high watermark %lld)", tp->topic, (int)tp->partition,
                p->next >= 0 ? "offset " : "the beginning, ", (long long)(p->next >= 0 ? p->next : lo),
                (long long)p->high);
    }
    rd_kafka_error_t *ke = rd_kafka_incremental_assign(rk, l);
    if (ke) {
        tb_error_set(&e, TB_ERR_KAFKA, true, "assign: %s", rd_kafka_error_string(ke));
        rd_kafka_error_destroy(ke);
        return set_fatal(c, &e);
    }
    return TB_OK;
}

static tb_code revoke_parts(cache_ctx *c, rd_kafka_t *rk, rd_kafka_topic_partition_list_t *l)
{
    tb_error e;
    tb_code rc = commit(c);
    for (int i = 0; rc == TB_OK && i < l->cnt; i++) {
        cache_part *p = part_find(c, l->elems[i].topic, l->elems[i].partition, false);
        if (!p || (rk == c->rk && p->schema))
            continue;
        p->assigned = false;
        TB_INFO("cache", "%s [%d]: revoked at offset %lld%s", p->topic, (int)p->partition, (long long)p->next,
                c->o->drop_on_revoke && !c->closing ? ", dropping its rows" : "");
        if (c->o->drop_on_revoke && !c->closing && !p->schema) {
            if ((rc = begin(c)) == TB_OK && (rc = cache_store_drop_partition(c->s, p->topic, p->partition, &e)) != TB_OK)
                set_fatal(c, &e);
            p->next = -1;
            p->dirty = false;
        }
    }
    if (rc == TB_OK)
        rc = commit(c);
    rd_kafka_error_t *ke = rd_kafka_incremental_unassign(rk, l);
    if (ke) {
        TB_WARN("cache", "unassign: %s", rd_kafka_error_string(ke));
        rd_kafka_error_destroy(ke);
    }
    return rc;
}

typedef struct owned_ctx {
    cache_ctx *c;
    const rd_kafka_topic_partition_list_t *l;
} owned_ctx;

/* A stored partition this instance keeps at its first group assignment: a schema
 * partition, or one of the assignment. */
static bool owned(const char *topic, int32_t partition, void *opaque)
{
    const owned_ctx *o = opaque;
    return is_schema_topic(o->c, topic) || rd_kafka_topic_partition_list_find(o->l, topic, partition) != NULL;
}

/* Group mode with cache.on.revoke=drop, the first assignment of this process: the rows
 * of partitions the file holds from an earlier run but the group did not give back
 * (another instance took them over while this one was down) are dropped with their
 * offsets, as a revoke would have, so that each row is in one instance only; a
 * partition assigned later is read again from its beginning. */
static void drop_unowned(cache_ctx *c, const rd_kafka_topic_partition_list_t *l)
{
    tb_error e;
    owned_ctx o = {c, l};
    if (begin(c) != TB_OK)
        return;
    TB_INFO("cache", "first assignment (%d partitions): dropping the rows of stored partitions not assigned", l->cnt);
    if (cache_store_drop_partitions_unless(c->s, owned, &o, &e) != TB_OK) {
        set_fatal(c, &e);
        return;
    }
    commit(c);
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *l, void *opaque)
{
    cache_ctx *c = opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (!c->assigned_once && c->o->mode == CACHE_MODE_GROUP && c->o->drop_on_revoke)
            drop_unowned(c, l);
        assign(c, rk, l);
        c->assigned_once = true;
    } else {
        revoke_parts(c, rk, l);
    }
}

/* A schema topic "<X>.schema" the regex leaves out, read all the same: its prefix is the
 * configured topic.prefix, or a topic the regex takes is "<X>.<db>.<table>". */
static bool schema_of_wanted(const cache_ctx *c, const struct rd_kafka_metadata *md, const char *topic)
{
    if (!is_schema_topic(c, topic))
        return false;
    if (c->o->topic_prefix && *c->o->topic_prefix)
        return true;
    size_t pl = strlen(topic) - 7;
    for (int i = 0; i < md->topic_cnt; i++) {
        const char *u = md->topics[i].topic;
        if (!md->topics[i].err && strncmp(u, topic, pl) == 0 && u[pl] == '.' && !is_schema_topic(c, u) &&
            wanted_topic(c, u))
            return true;
    }
    return false;
}

/* Global mode: assign every partition of every matching topic not yet assigned.
 * Sets c->listed once the broker answered (until then nothing can be caught up).
 * The listing goes through `via`: a consumer whose connection has no fetch
 * waiting at the end of a partition answers at once (the broker answers a
 * connection's requests in order, a waiting fetch after fetch.wait.max.ms). */
static tb_code scan_topics(cache_ctx *c, rd_kafka_t *via, bool schema_only)
{
    const struct rd_kafka_metadata *md = NULL;
    tb_error e;
    tb_code rc = TB_OK;
    rd_kafka_resp_err_t ke = rd_kafka_metadata(via, 1, NULL, &md, 10000);
    if (ke) {
        rd_kafka_poll(via, 0); /* error_cb: a refused login ends the run */
        if (!c->failed)
            TB_WARN("cache", "listing topics: %s", rd_kafka_err2str(ke));
        return TB_OK;
    }
    c->listed = true;
    rd_kafka_topic_partition_list_t *ls = rd_kafka_topic_partition_list_new(8);
    rd_kafka_topic_partition_list_t *lt = rd_kafka_topic_partition_list_new(8);
    for (int i = 0; i < md->topic_cnt; i++) {
        const rd_kafka_metadata_topic_t *t = &md->topics[i];
        if (t->err || (!wanted_topic(c, t->topic) && !schema_of_wanted(c, md, t->topic)))
            continue;
        bool schema = is_schema_topic(c, t->topic);
        if (schema && !c->prefix && !(c->o->topic_prefix && *c->o->topic_prefix))
            c->prefix = strndup(t->topic, strlen(t->topic) - 7);
        if (!schema && (schema_only || c->o->mode == CACHE_MODE_GROUP))
            continue;
        for (int j = 0; j < t->partition_cnt; j++) {
            cache_part *p = part_find(c, t->topic, t->partitions[j].id, false);
            if (p && p->assigned)
                continue;
            rd_kafka_topic_partition_list_add(schema ? ls : lt, t->topic, t->partitions[j].id);
        }
    }
    rd_kafka_metadata_destroy(md);
    if (ls->cnt)
        rc = assign(c, c->rks, ls);
    if (rc == TB_OK && lt->cnt)
        rc = assign(c, c->rk, lt);
    if (rc == TB_OK && (ls->cnt || lt->cnt) && c->o->mode == CACHE_MODE_GLOBAL && !schema_only)
        c->caught_up = false;
    rd_kafka_topic_partition_list_destroy(ls);
    rd_kafka_topic_partition_list_destroy(lt);
    (void)e;
    return rc;
}

/* Replay a topic's partitions (partition -1: all) from the beginning: their rows were dropped. */
static tb_code rewind_parts(cache_ctx *c, const char *topic, int32_t partition, tb_error *err)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
    for (size_t i = 0; i < c->nparts; i++) {
        cache_part *p = &c->parts[i];
        if (strcmp(p->topic, topic) != 0 || (partition >= 0 && p->partition != partition))
            continue;
        p->next = -1;
        p->dirty = false;
        p->skip_stale = true;
        p->checked = false;
        p->end_at = -1;
        if (p->assigned)
            rd_kafka_topic_partition_list_add(l, topic, p->partition)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    tb_code rc = TB_OK;
    if (l->cnt) {
        rd_kafka_error_t *ke = rd_kafka_seek_partitions(c->rk, l, 10000);
        if (ke) {
            rc = tb_error_set(err, TB_ERR_KAFKA, true, "rewinding %s: %s", topic, rd_kafka_error_string(ke));
            rd_kafka_error_destroy(ke);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/* An incompatible schema change dropped a table: replay its topic. */
static tb_code rewind_topic(const char *topic, void *opaque, tb_error *err)
{
    return rewind_parts(opaque, topic, -1, err);
}

/* ------------------------------------------------------------- Debezium's schema history */

/* Read cache.debezium.history.topic on from where the last read ended to its high watermark
 * (cache_history.c). Debezium writes it with one partition. A record that is not a history
 * record, or a topic that cannot be read, is a WARN: the columns concerned keep the shortest
 * exact fraction. */
static void history_read(void *opaque)
{
    cache_ctx *c = opaque;
    const char *topic = c->o->dbz_history_topic;
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t ke = rd_kafka_query_watermark_offsets(c->rkh, topic, 0, &lo, &hi, 10000);
    if (ke) {
        TB_WARN("cache", "cache.debezium.history.topic=%s: %s: the fsp of Debezium's temporal columns is unknown",
                topic, rd_kafka_err2str(ke));
        return;
    }
    if (c->hist_next < lo)
        c->hist_next = lo;
    if (c->hist_next >= hi)
        return;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, 0)->offset = c->hist_next;
    ke = rd_kafka_assign(c->rkh, l);
    rd_kafka_topic_partition_list_destroy(l);
    int64_t deadline = tb_mono_ms() + 30000;
    while (!ke && c->hist_next < hi && tb_mono_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rkh, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            c->hist_next = m->offset > c->hist_next ? m->offset : c->hist_next;
        } else if (m->err) {
            TB_WARN("cache", "cache.debezium.history.topic=%s: %s", topic, rd_kafka_message_errstr(m));
        } else if (m->offset >= c->hist_next) {
            tb_error e;
            if (m->payload && cache_history_add(c->s->history, m->payload, m->len, &e) != TB_OK)
                TB_WARN("cache", "%s [0] offset %lld: not a schema history record (%s): passed over", topic,
                        (long long)m->offset, e.msg);
            c->hist_next = m->offset + 1;
        }
        rd_kafka_message_destroy(m);
    }
    if (ke || c->hist_next < hi)
        TB_WARN("cache", "cache.debezium.history.topic=%s: read to offset %lld of %lld%s%s", topic,
                (long long)c->hist_next, (long long)hi, ke ? ": " : " in 30 s", ke ? rd_kafka_err2str(ke) : "");
    rd_kafka_assign(c->rkh, NULL);
}

static tb_code history_open(cache_ctx *c, tb_error *err)
{
    rd_kafka_conf_t *conf = cache_kafka_conf(c->o->brokers, RD_KAFKA_CONSUMER, c->o->kafka_props, err);
    if (!conf)
        return err ? err->code : TB_ERR_CONFIG;
    char gid[300];
    snprintf(gid, sizeof gid, "%s-cache-history-%ld", c->o->name ? c->o->name : "tributary", (long)getpid());
    tb_code rc = kafka_conf_set(conf, "group.id", gid, err);
    if (rc == TB_OK)
        rc = kafka_conf_set(conf, "enable.auto.commit", "false", err);
    if (rc == TB_OK)
        rc = kafka_conf_set(conf, "enable.partition.eof", "true", err);
    if (rc != TB_OK) {
        rd_kafka_conf_destroy(conf);
        return rc;
    }
    if ((rc = kafka_client_new(conf, RD_KAFKA_CONSUMER, "history reader", &c->rkh, err)) != TB_OK)
        return rc;
    if (!(c->s->history = cache_history_new()))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    c->s->history_refresh = history_read;
    c->s->history_opaque = c;
    history_read(c);
    TB_INFO("cache", "cache.debezium.history.topic=%s: %lld records read", c->o->dbz_history_topic,
            (long long)cache_history_records(c->s->history));
    return TB_OK;
}

/* ------------------------------------------------------------- bad input */

static tb_code dlq_open(cache_ctx *c, tb_error *err)
{
    tb_buf t;
    tb_buf_init(&t, 0);
    if (tb_buf_printf(&t, "%s.cache.dlq", c->o->name ? c->o->name : "tributary") != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    c->dlq_topic = tb_buf_detach(&t, NULL);
    rd_kafka_conf_t *conf = cache_kafka_conf(c->o->brokers, RD_KAFKA_PRODUCER, c->o->kafka_props, err);
    if (!conf)
        return err ? err->code : TB_ERR_CONFIG;
    tb_code rc = kafka_conf_set(conf, "enable.idempotence", "true", err);
    if (rc != TB_OK) {
        rd_kafka_conf_destroy(conf);
        return rc;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, dlq_dr_cb);
    rd_kafka_conf_set_opaque(conf, c);
    if ((rc = kafka_client_new(conf, RD_KAFKA_PRODUCER, "DLQ producer", &c->dlq, err)) != TB_OK)
        return rc;
    /* create the DLQ topic unless it exists (the broker may not auto-create); a failure is
     * a warning: producing to it reports what is wrong */
    tb_error terr;
    bool exists = false;
    if (kafka_topic_create(c->dlq, c->dlq_topic, 1, -1, NULL, 15000, NULL, &exists, &terr) != TB_OK ||
        (!exists && kafka_topic_wait_ready(c->dlq, c->dlq_topic, 1, 15000, NULL, &terr) != TB_OK))
        TB_WARN("cache", "creating %s: %s", c->dlq_topic, terr.msg);
    return TB_OK;
}

/* A message the cache cannot apply: fail, skip (logged, counted) or copy to the DLQ. */
static tb_code bad_message(cache_ctx *c, const rd_kafka_message_t *m, const tb_error *why)
{
    const char *topic = rd_kafka_topic_name(m->rkt);
    tb_error e;
    switch (c->o->error_policy) {
    case CACHE_ERR_SKIP:
        TB_WARN("cache", "%s [%d] offset %lld: skipped (cache.error.policy=skip): %s", topic, (int)m->partition,
                (long long)m->offset, why->msg);
        c->s->skipped++;
        return TB_OK;
    case CACHE_ERR_DLQ: {
        char part[16], off[24];
        snprintf(part, sizeof(part), "%d", (int)m->partition);
        snprintf(off, sizeof(off), "%lld", (long long)m->offset);
        rd_kafka_resp_err_t ke = rd_kafka_producev(
            c->dlq, RD_KAFKA_V_TOPIC(c->dlq_topic), RD_KAFKA_V_KEY(m->key, m->key_len),
            RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_HEADER("tributary.topic", topic, -1), RD_KAFKA_V_HEADER("tributary.partition", part, -1),
            RD_KAFKA_V_HEADER("tributary.offset", off, -1), RD_KAFKA_V_HEADER("tributary.error", why->msg, -1),
            RD_KAFKA_V_END);
        if (ke) {
            tb_error_set(&e, TB_ERR_KAFKA, true, "%s [%d] offset %lld: cannot copy to %s: %s", topic,
                         (int)m->partition, (long long)m->offset, c->dlq_topic, rd_kafka_err2str(ke));
            return set_fatal(c, &e);
        }
        c->dlq_pending++;
        c->s->dlq++;
        TB_WARN("cache", "%s [%d] offset %lld: copied to %s: %s", topic, (int)m->partition, (long long)m->offset,
                c->dlq_topic, why->msg);
        return TB_OK;
    }
    case CACHE_ERR_FAIL:
    default:
        tb_error_set(&e, TB_ERR_INVALID, false, "%s [%d] offset %lld: %s (cache.error.policy=fail)", topic,
                     (int)m->partition, (long long)m->offset, why->msg);
        return set_fatal(c, &e);
    }
}

/* ------------------------------------------------------------- messages */

static bool stopping(const cache_ctx *c);

/* An Avro key or value (Confluent's wire format) as the Kafka Connect JSON the codec writes
 * (avro/av_msg.h), in a buffer kept until the batch is flushed (pending upserts point into it).
 * A registry that cannot be reached is asked again (backoff to 5 s) for
 * schema.registry.retry.timeout.ms, the consumer's position held meanwhile. */
static tb_code avro_json(cache_ctx *c, const void *msg, size_t len, const char **out, size_t *out_len, tb_error *err)
{
    const cache_opts *o = c->o;
    if (!o->registry_url || !*o->registry_url)
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "an Avro message (Confluent's wire format): set schema.registry.url (and its "
                            "schema.registry.* credentials) so that the cache can fetch its schema");
    tb_code rc;
    if (!c->avro) {
        sreg_opts so = {o->registry_url, o->registry_user, o->registry_password, o->registry_ca,
                        o->registry_timeout_ms > 0 ? o->registry_timeout_ms : 10000};
        if ((rc = av_msg_open(&so, &c->avro, err)) != TB_OK)
            return rc;
    }
    if (c->avbuf_n == c->avbuf_cap) {
        size_t cap = c->avbuf_cap ? 2 * c->avbuf_cap : 64;
        tb_buf *v = realloc(c->avbuf, cap * sizeof(*v));
        if (!v)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        for (size_t i = c->avbuf_cap; i < cap; i++)
            tb_buf_init(&v[i], 0);
        c->avbuf = v;
        c->avbuf_cap = cap;
    }
    tb_buf *b = &c->avbuf[c->avbuf_n];
    int64_t deadline = tb_mono_ms() + o->registry_retry_ms, backoff = 200;
    while ((rc = av_msg_json(c->avro, msg, len, b, err)) == TB_ERR_IO && err->retriable && !stopping(c) &&
           tb_mono_ms() + backoff < deadline) {
        TB_WARN("cache", "schema registry %s: %s; asking again in %lld ms", o->registry_url, err->msg,
                (long long)backoff);
        for (int64_t until = tb_mono_ms() + backoff; tb_mono_ms() < until && !stopping(c);) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
        }
        backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
    }
    if (rc != TB_OK)
        return rc;
    c->avbuf_n++;
    *out = b->data;
    *out_len = b->len;
    return TB_OK;
}

static tb_code handle(cache_ctx *c, const rd_kafka_message_t *m, bool from_schema_consumer)
{
    tb_error e;
    tb_code rc;
    const char *topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "?";
    if (!from_schema_consumer && m->rkt && is_schema_topic(c, topic))
        return TB_OK; /* group mode: the schema consumer reads it */
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        cache_part *p = part_find(c, topic, m->partition, false);
        if (!p || p->skip_stale)
            return TB_OK;
        if (p->next >= 0 && m->offset > p->next) { /* compacted-away or control records at the end */
            bool replay;
            if ((rc = check_fresh(c, p, false, &replay, &e)) != TB_OK)
                return set_fatal(c, &e);
            if (replay)
                return rewind_parts(c, topic, m->partition, &e) == TB_OK ? TB_OK : set_fatal(c, &e);
            if ((rc = begin(c)) != TB_OK)
                return rc;
            p->next = m->offset;
            p->dirty = true;
        }
        p->checked = true; /* at the end: from here on its gaps are checked */
        return TB_OK;
    }
    if (m->err) {
        TB_WARN("cache", "consumer: %s%s%s", m->rkt ? topic : "", m->rkt ? ": " : "", rd_kafka_message_errstr(m));
        if (m->err == RD_KAFKA_RESP_ERR__FATAL)
            return set_fatal(c, (tb_error_set(&e, TB_ERR_KAFKA, false, "consumer: %s", rd_kafka_message_errstr(m)), &e));
        return TB_OK;
    }
    cache_part *p = part_find(c, topic, m->partition, false);
    if (!p || !p->assigned || p->skip_stale)
        return TB_OK; /* a message of a partition revoked meanwhile, or fetched before a rewind */
    if (p->next >= 0 && m->offset < p->next)
        return TB_OK; /* already applied (refetch after a seek or rebalance) */
    if (!p->schema) {
        if (p->next >= 0 && m->offset > p->next) { /* a gap: did tombstones vanish in it? */
            bool replay;
            if ((rc = check_fresh(c, p, false, &replay, &e)) != TB_OK)
                return set_fatal(c, &e);
            if (replay)
                return rewind_parts(c, topic, m->partition, &e) == TB_OK ? TB_OK : set_fatal(c, &e);
        }
        rd_kafka_timestamp_type_t tst;
        int64_t ts = rd_kafka_message_timestamp(m, &tst);
        if (ts > p->fresh_ms)
            p->fresh_ms = ts;
    }
    if ((rc = begin(c)) != TB_OK)
        return rc;
    tb_error_clear(&e);
    if (p->schema) {
        char *prefix = strndup(topic, strlen(topic) - 7);
        rc = prefix ? cache_apply_schema(c->s, prefix, m->key, m->key_len, m->payload, m->len, rewind_topic, c, &e)
                    : tb_error_set(&e, TB_ERR_NOMEM, false, "out of memory");
        free(prefix);
    } else {
        const char *key = m->key, *value = m->payload;
        size_t klen = m->key_len, vlen = m->len;
        rc = TB_OK;
        if (av_msg_is_avro(key, klen))
            rc = avro_json(c, m->key, m->key_len, &key, &klen, &e);
        if (rc == TB_OK && av_msg_is_avro(value, vlen))
            rc = avro_json(c, m->payload, m->len, &value, &vlen, &e);
        if (rc == TB_OK)
            rc = cache_apply_msg(c->s, topic,
                                 c->o->topic_prefix && *c->o->topic_prefix ? c->o->topic_prefix : c->prefix,
                                 m->partition, key, klen, value, vlen, &e);
    }
    if (rc == TB_ERR_INVALID) {
        if (c->o->error_policy == CACHE_ERR_FAIL) {
            commit(c); /* keep what was applied before the bad message */
            return bad_message(c, m, &e);
        }
        rc = bad_message(c, m, &e);
    } else if (rc != TB_OK) {
        tb_error_prefix(&e, rc, "%s [%d] offset %lld: ", topic, (int)m->partition, (long long)m->offset);
        cache_store_rollback(c->s);
        return set_fatal(c, &e);
    }
    if (rc != TB_OK)
        return rc;
    p->next = m->offset + 1;
    p->dirty = true;
    if (p->end_at >= 0 && p->next >= p->end_at)
        p->checked = true; /* a replay reached the end it had when assigned */
    c->batch_n++;
    c->msgs++;
    if (c->batch_n >= c->o->batch_size)
        return commit(c);
    return TB_OK;
}

static void progress(cache_ctx *c, bool force)
{
    double t = now_s();
    if (!force && t - c->last_progress < 1.0)
        return;
    cache_progress pr = {0};
    double dt = t - c->last_progress;
    pr.messages = c->msgs;
    pr.applied = c->s->applied - c->applied0;
    pr.rows_per_s = dt > 0 ? (double)(c->msgs - c->last_msgs) / dt : 0;
    if (c->nparts > c->lags_cap) {
        cache_partition_lag *nl = realloc(c->lags, c->nparts * sizeof(*nl));
        if (nl) {
            c->lags = nl;
            c->lags_cap = c->nparts;
        }
    }
    for (size_t i = 0; i < c->nparts; i++) {
        const cache_part *p = &c->parts[i];
        if (p->assigned && p->high > 0 && p->high > p->next)
            pr.remaining += p->high - (p->next > 0 ? p->next : 0);
        if (!p->assigned || pr.nparts >= c->lags_cap)
            continue;
        /* the newest high watermark the consumer's fetches brought (no request to the broker) */
        int64_t lo = -1, hi = -1, high = p->high;
        rd_kafka_t *rk = p->schema ? c->rks : c->rk;
        if (rk && rd_kafka_get_watermark_offsets(rk, p->topic, p->partition, &lo, &hi) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            hi > high)
            high = hi;
        int64_t next = p->next > 0 ? p->next : 0;
        c->lags[pr.nparts++] = (cache_partition_lag){p->topic, p->partition, high < 0 ? -1 : high > next ? high - next : 0};
    }
    pr.parts = c->lags;
    pr.eta_s = pr.rows_per_s > 0 ? (double)pr.remaining / pr.rows_per_s : -1;
    pr.caught_up = c->caught_up;
    c->last_progress = t;
    c->last_msgs = c->msgs;
    if (c->o->progress)
        c->o->progress(&pr, c->o->progress_opaque);
    else if (t - c->last_log >= 5.0) {
        c->last_log = t;
        TB_INFO("cache", "%lld messages, %.0f rows/s, %lld to the start watermarks%s", (long long)pr.messages,
                pr.rows_per_s, (long long)pr.remaining, pr.caught_up ? " (caught up)" : "");
    }
}

/* All assigned partitions (of the given consumer, NULL = both) reached their start watermark. */
static bool all_caught_up(const cache_ctx *c, int which)
{
    for (size_t i = 0; i < c->nparts; i++) {
        const cache_part *p = &c->parts[i];
        if (!p->assigned || (which == 1 && !p->schema))
            continue;
        if (p->high > 0 && p->next < p->high)
            return false;
    }
    return true;
}

static tb_code check_caught_up(cache_ctx *c)
{
    tb_error e;
    if (c->caught_up || !c->assigned_once || !all_caught_up(c, 0))
        return TB_OK;
    tb_code rc;
    if ((rc = begin(c)) != TB_OK)
        return rc;
    if (cache_store_put_state(c->s, "caught_up", 1, &e) != TB_OK ||
        cache_store_put_state(c->s, "caught_up_at", tb_wall_ms(), &e) != TB_OK)
        return set_fatal(c, &e);
    if ((rc = commit(c)) != TB_OK)
        return rc;
    c->caught_up = true;
    TB_INFO("cache", "caught up with the high watermarks recorded at start: %lld messages in this run (%lld applied, "
            "%lld skipped, %lld sent to the DLQ, the rest schema records); %lld applied in all runs (`cache "
            "status`)",
            (long long)c->msgs, (long long)(c->s->applied - c->applied0), (long long)(c->s->skipped - c->skipped0),
            (long long)(c->s->dlq - c->dlq0), (long long)c->s->applied);
    progress(c, true);
    return TB_OK;
}

/* ------------------------------------------------------------- the run */

void cache_opts_init(cache_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->batch_size = 5000;
    o->busy_timeout_ms = 5000;
    o->metadata_refresh_ms = 5000;
    o->name = "tributary";
}

static rd_kafka_t *new_consumer(cache_ctx *c, const char *group, bool group_mode, tb_error *err)
{
    char refresh[24];
    /* librdkafka's prefetch dominates the peak RSS: its defaults (1 MiB per partition and fetch,
     * fetching until queued.min.messages are queued) keep the loop fed now that cache_nudge.c
     * wakes the fetcher; the 4 MiB fetches that used to hide the fetcher's one-second tick cost
     * about 130 MiB more peak RSS and were slower (1M replay: 2.8 s / 176 MiB vs 3.0 s / 308 MiB,
     * docs/cache.md). */
    rd_kafka_conf_t *conf = cache_kafka_conf(c->o->brokers, RD_KAFKA_CONSUMER, c->o->kafka_props, err);
    if (!conf)
        return NULL;
    snprintf(refresh, sizeof(refresh), "%d", c->o->metadata_refresh_ms > 0 ? c->o->metadata_refresh_ms : 5000);
    const char *kv[] = {"group.id", group, "enable.auto.commit", "false", "enable.auto.offset.store", "false",
                        "enable.partition.eof", "true", "auto.offset.reset", "earliest",
                        "topic.metadata.refresh.interval.ms", refresh,
                        group_mode ? "partition.assignment.strategy" : NULL, "cooperative-sticky", NULL};
    for (size_t i = 0; kv[i]; i += 2)
        if (kafka_conf_set(conf, kv[i], kv[i + 1], err) != TB_OK) {
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    if (group_mode)
        rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_opaque(conf, c);
    rd_kafka_t *rk = NULL;
    tb_ignore(kafka_client_new(conf, RD_KAFKA_CONSUMER, "Kafka consumer", &rk, err)); /* NULL and err say it */
    return rk;
}

static bool stopping(const cache_ctx *c)
{
    return c->failed || (c->o->stop && *c->o->stop);
}

#define CACHE_POLL_MAX 1024

/* Consume up to CACHE_POLL_MAX messages from one consumer and apply them.
 * rd_kafka_consume_batch_queue waits until the array is full or the timeout
 * passed, so it only takes what is queued (timeout 0); when nothing is, one
 * message is awaited for up to timeout_ms: no batch waits for stragglers. */
static void poll_batch(cache_ctx *c, rd_kafka_queue_t *q, int timeout_ms, bool schema, bool *got)
{
    rd_kafka_message_t *msgs[CACHE_POLL_MAX];
    ssize_t n = rd_kafka_consume_batch_queue(q, 0, msgs, CACHE_POLL_MAX);
    if (n == 0 && timeout_ms > 0 && (msgs[0] = rd_kafka_consume_queue(q, timeout_ms)) != NULL)
        n = 1;
    *got = n > 0;
    for (ssize_t i = 0; i < n; i++)
        if (!stopping(c))
            handle(c, msgs[i], schema);
    tb_error e; /* pending upserts point into msgs: run them first, also when stopping (a rollback
                 * after a failure has dropped them already) */
    if (cache_store_flush(c->s, &e) != TB_OK) {
        cache_store_rollback(c->s);
        set_fatal(c, &e);
    }
    for (ssize_t i = 0; i < n; i++)
        rd_kafka_message_destroy(msgs[i]);
    c->avbuf_n = 0; /* the Avro messages' JSON: reused */
    cache_store_release(c->s); /* values decoded from those messages */
    for (size_t i = 0; i < c->nparts; i++)
        c->parts[i].skip_stale = false;
}

static tb_code run_loop(cache_ctx *c, tb_error *err)
{
    tb_code rc = TB_OK;
    bool got;
    /* phase 1: every table descriptor, before any row */
    scan_topics(c, c->rks, true);
    while (!stopping(c) && (!c->listed || !all_caught_up(c, 1))) {
        if (!c->listed) {
            scan_topics(c, c->rks, true);
            continue;
        }
        poll_batch(c, c->qs, 200, true, &got);
        if (!got)
            commit(c);
    }
    commit(c);
    if (stopping(c))
        goto out;
    /* phase 2: the table topics */
    if (c->o->mode == CACHE_MODE_GROUP) {
        tb_buf pat;
        tb_buf_init(&pat, 0);
        rc = c->o->topics[0] == '^' ? tb_buf_puts(&pat, c->o->topics) : tb_buf_printf(&pat, "^.*%s", c->o->topics);
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, tb_buf_cstr(&pat), RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t ke = rc == TB_OK ? rd_kafka_subscribe(c->rk, l) : RD_KAFKA_RESP_ERR__INVALID_ARG;
        rd_kafka_topic_partition_list_destroy(l);
        tb_buf_free(&pat);
        if (ke) {
            rc = tb_error_set(err, TB_ERR_KAFKA, false, "subscribe to %s: %s", c->o->topics, rd_kafka_err2str(ke));
            goto out;
        }
        TB_INFO("cache", "joining the consumer group for topics %s", c->o->topics);
    } else {
        scan_topics(c, c->rk, false); /* c->rk fetches nothing yet */
        c->assigned_once = true; /* c->listed is true: phase 1 waited for it */
    }
    c->last_meta = now_s();
    double last_schema = 0, last_file = now_s(), last_alive = now_s();
    while (!stopping(c)) {
        double t = now_s();
        if (t - last_schema >= 0.1) { /* schema records are rare: look every 100 ms */
            last_schema = t;
            if (c->rk)
                rd_kafka_poll(c->rk, 0); /* error_cb */
            if (c->rks)
                rd_kafka_poll(c->rks, 0);
            do
                poll_batch(c, c->qs, 0, true, &got);
            while (got && !stopping(c));
        }
        poll_batch(c, c->q, 100, false, &got);
        t = now_s();
        if (got)
            cache_nudge_check(c->nudge, c->q, c->parts, c->nparts);
        if (c->s->in_tx && (!got || t - c->batch_t0 >= 1.0))
            commit(c);
        if (t - last_alive >= 30.0) { /* idle and caught up: still reading every tombstone */
            last_alive = t;
            if (!c->s->in_tx && begin(c) == TB_OK)
                commit(c); /* the commit records alive_at */
        }
        if (c->o->mode == CACHE_MODE_GLOBAL && t - c->last_meta >= c->o->metadata_refresh_ms / 1000.0) {
            c->last_meta = t;
            scan_topics(c, c->rks, false);
        }
        if (t - last_file >= 1.0) { /* the file deleted or replaced under the cache */
            last_file = t;
            tb_error fe;
            if (cache_store_check_file(c->s, &fe) != TB_OK) {
                cache_store_rollback(c->s);
                set_fatal(c, &fe);
                break;
            }
        }
        if (!c->s->in_tx)
            check_caught_up(c);
        if (c->caught_up && c->o->until_caught_up)
            break;
        progress(c, false);
    }
    commit(c);
out:
    if (c->failed) {
        if (err)
            *err = c->fatal;
        return c->fatal.code;
    }
    return rc;
}

tb_code cache_run(const cache_opts *o, tb_error *err)
{
    cache_ctx c;
    tb_code rc;
    tb_buf gid;
    memset(&c, 0, sizeof(c));
    c.o = o;
    tb_buf_init(&gid, 0);
    if (!o->db_path || !o->topics)
        return tb_error_set(err, TB_ERR_CONFIG, false, "the cache needs a file (--db, cache.path) and a topic regex "
                                                       "(--topics, cache.topics)");
    if (regcomp(&c.re, o->topics, REG_EXTENDED | REG_NOSUB) != 0)
        return tb_error_set(err, TB_ERR_CONFIG, false, "bad topic regex %s", o->topics);
    c.re_ok = true;
    if ((rc = cache_store_open_busy(o->db_path, false, o->busy_timeout_ms, &c.s, err)) != TB_OK)
        goto out;
    c.alive0 = cache_store_get_state(c.s, "alive_at", 0);
    c.s->dbz = o->dbz;
    c.s->drop_on_drop = o->drop_on_drop;
    c.applied0 = c.s->applied;
    c.skipped0 = c.s->skipped;
    c.dlq0 = c.s->dlq;
    if (tb_buf_printf(&gid, "%s-cache-assign-%ld", o->name ? o->name : "tributary", (long)getpid()) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if (!(c.rks = new_consumer(&c, tb_buf_cstr(&gid), false, err))) {
        rc = err ? err->code : TB_ERR_KAFKA;
        goto out;
    }
    if (o->mode == CACHE_MODE_GROUP) {
        tb_buf g;
        tb_buf_init(&g, 0);
        if (!o->group_id)
            tb_buf_printf(&g, "%s-cache", o->name ? o->name : "tributary");
        TB_INFO("cache", "group mode: consumer group %s", o->group_id ? o->group_id : tb_buf_cstr(&g));
        c.rk = new_consumer(&c, o->group_id ? o->group_id : tb_buf_cstr(&g), true, err);
        tb_buf_free(&g);
    } else {
        c.rk = new_consumer(&c, tb_buf_cstr(&gid), false, err);
    }
    if (!c.rk) {
        rc = err ? err->code : TB_ERR_KAFKA;
        goto out;
    }
    if (o->error_policy == CACHE_ERR_DLQ && (rc = dlq_open(&c, err)) != TB_OK)
        goto out;
    if (o->dbz_history_topic && *o->dbz_history_topic && (rc = history_open(&c, err)) != TB_OK)
        goto out;
    if ((rc = cache_nudge_start(c.rk, &c.nudge, err)) != TB_OK)
        goto out;
    c.q = rd_kafka_queue_get_consumer(c.rk);
    c.qs = rd_kafka_queue_get_consumer(c.rks);
    if (!c.q || !c.qs) {
        rc = tb_error_set(err, TB_ERR_KAFKA, false, "kafka: no consumer queue");
        goto out;
    }
    c.last_progress = c.last_log = now_s();
    c.caught_up = false;
    /* "caught up" in the state table speaks of the current run */
    if ((rc = cache_store_begin(c.s, err)) != TB_OK || (rc = cache_store_put_state(c.s, "caught_up", 0, err)) != TB_OK ||
        (rc = cache_store_commit(c.s, err)) != TB_OK)
        goto out;
    rc = run_loop(&c, err);
    if (c.s && c.s->in_tx)
        cache_store_rollback(c.s);
out:
    c.closing = true;
    cache_nudge_stop(c.nudge);
    av_msg_close(c.avro);
    for (size_t i = 0; i < c.avbuf_cap; i++)
        tb_buf_free(&c.avbuf[i]);
    free(c.avbuf);
    if (c.q)
        rd_kafka_queue_destroy(c.q);
    if (c.qs)
        rd_kafka_queue_destroy(c.qs);
    if (c.rk) {
        rd_kafka_consumer_close(c.rk);
        if (c.s && c.s->in_tx && !c.failed)
            commit(&c);
        rd_kafka_destroy(c.rk);
    }
    if (c.rks) {
        rd_kafka_consumer_close(c.rks);
        rd_kafka_destroy(c.rks);
    }
    if (c.dlq) {
        rd_kafka_flush(c.dlq, 10000);
        rd_kafka_destroy(c.dlq);
    }
    if (c.rkh) {
        rd_kafka_consumer_close(c.rkh);
        rd_kafka_destroy(c.rkh);
    }
    if (c.s) {
        cache_history_free(c.s->history);
        c.s->history = NULL;
        c.s->history_refresh = NULL;
    }
    if (c.re_ok)
        regfree(&c.re);
    for (size_t i = 0; i < c.nparts; i++)
        free(c.parts[i].topic);
    free(c.parts);
    free(c.lags);
    free(c.prefix);
    free(c.ret_topic);
    free(c.dlq_topic);
    cache_store_close(c.s);
    tb_buf_free(&gid);
    return rc;
}
