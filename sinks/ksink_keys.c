/*
 * ksink_keys: what a topic holds, read from the beginning of every partition
 * to the high watermark each had when the read started (ksink_topic_read):
 *
 *   ksink_topic_keys     the keys a table's topic holds that a caller's set
 *                        of digests does not (ksink.h): every key for
 *                        TRUNCATE and DROP (read_uncommitted: the sink's own
 *                        messages of an open Kafka transaction count), the
 *                        keys the table no longer has for the reconcile step
 *                        after a resnapshot (read_committed: what a consumer
 *                        sees). A key is held when its latest record is not a
 *                        tombstone.
 *   ksink_schema_seen_*  the latest schema record per table in the schema
 *                        topic, read once per sink with read_committed, so
 *                        that a record the topic already holds for a table is
 *                        not written again (a restart, DESIGN 4). Kept as a
 *                        64-bit FNV-1a digest of the value without its
 *                        version number, and that number.
 *
 * ksink_topic_keys is sink_keys_held (sink_keys.h) over reads of the topic:
 * no key's bytes are kept, a digest and a state byte per distinct key
 * outside the caller's set, and a second read to the same offsets when some
 * are held. A topic of 10M keys costs at most about 240 MB, and a reconcile
 * whose table still has most keys far less (those keys are in the caller's
 * set, not in this one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksink_int.h"
#include "sink_keys.h"
#include "tb_hmap.h"
#include "tb_kset.h"
#include "tb_log.h"

/* Called for every record of the topic below the read's end; value NULL: a tombstone. */
typedef tb_code (*ksink_record_fn)(void *opaque, const char *key, size_t klen, const char *value, size_t vlen,
                                   tb_error *err);

/* Adapts a ksink_record_fn to the ksink_scan_fn of ksink_topic_read. */
typedef struct kk_plain {
    ksink_record_fn fn;
    void *opaque;
} kk_plain;

static tb_code kk_plain_record(void *opaque, const ksink_record *rec, tb_error *err)
{
    kk_plain *p = opaque;
    return p->fn(p->opaque, rec->key, rec->klen, rec->value, rec->vlen, err);
}

/* librdkafka before 2.4 (no fetch.queue.backoff.ms) looks again at a partition whose prefetch
 * queue was full only when its broker thread wakes, about once a second: a small queue would
 * hold a reader to a queue's worth of messages a second. A request to the partition's leader
 * wakes that thread; a scan sends one (a watermark query) each time it has read half a queue (its
 * answer, a round trip, is not used). */
static bool scan_needs_wakeup(void) { return rd_kafka_version() < 0x02040000; }

/* The metadata of topic (handle rkt) into *md (the caller destroys it when set): *exists false
 * when the cluster does not know the topic (or it has no partition), which is not an error. */
static tb_code topic_metadata(rd_kafka_t *rk, rd_kafka_topic_t *rkt, const char *topic, int timeout_ms,
                              const rd_kafka_metadata_t **md, bool *exists, tb_error *err)
{
    *exists = false;
    rd_kafka_resp_err_t rerr = rd_kafka_metadata(rk, 0, rkt, md, timeout_ms);
    if (rerr == RD_KAFKA_RESP_ERR_NO_ERROR && (*md)->topic_cnt == 1 &&
        ((*md)->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || (*md)->topics[0].partition_cnt == 0))
        return TB_OK;
    if (rerr == RD_KAFKA_RESP_ERR_NO_ERROR && ((*md)->topic_cnt != 1 || (*md)->topics[0].err))
        rerr = (*md)->topic_cnt == 1 ? (*md)->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
    if (rerr)
        return kafka_error(err, rerr, "topic %s: metadata", topic);
    *exists = true;
    return TB_OK;
}

/* Read topic from the start of every partition to its high watermark at
 * the start of the read (or, with read_committed, its last stable offset),
 * calling fn per record that has a key. A topic that does not exist holds
 * nothing, unless must_exist (the sink made or found it in this run): then
 * the cluster's metadata not knowing it (a broker that has just started, a
 * cluster whose brokers do not all know it yet) is TB_ERR_NOT_FOUND,
 * retriable, never "nothing held". isolation: librdkafka's isolation.level;
 * reader: the group.id suffix (no group is joined: partitions are assigned;
 * nothing is committed). */
static tb_code ksink_topic_read(const cfg *c, ksink_role role, const char *topic, bool must_exist,
                                const char *isolation, const char *reader, ksink_scan_fn fn, void *opaque,
                                tb_error *err)
{
    tb_code rc = TB_OK;
    rd_kafka_t *rk = NULL;
    rd_kafka_topic_partition_list_t *parts = NULL;
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_topic_t *rkt = NULL;
    bool assigned = false;
    int64_t *hi = NULL;
    int timeout_ms = ksink_request_timeout_ms(c);
    rd_kafka_conf_t *conf = NULL;
    if ((rc = ksink_conf_new(c, role, &conf, err)) != TB_OK)
        goto out;
    char errstr[256], gid[300], kb[32];
    size_t kbsz = sizeof kb;
    /* half the prefetch queue (whatever kafka.* made it) between two wake-ups of the fetcher */
    size_t wake_bytes = rd_kafka_conf_get(conf, "queued.max.messages.kbytes", kb, &kbsz) == RD_KAFKA_CONF_OK
                            ? (size_t)strtoull(kb, NULL, 10) * 512
                            : (size_t)KSINK_SCAN_QUEUE_KB * 512;
    snprintf(gid, sizeof gid, "%s-%s", cfg_get_str(c, CFGK_NAME), reader);
    if (rd_kafka_conf_set(conf, "isolation.level", isolation, errstr, sizeof errstr) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "group.id", gid, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "topic %s: reader configuration: %s", topic, errstr);
        goto out;
    }
    if ((rc = kafka_client_new(conf, RD_KAFKA_CONSUMER, "Kafka client", &rk, err)) != TB_OK)
        goto out;
    if (!(rkt = rd_kafka_topic_new(rk, topic, NULL))) {
        rc = kafka_error(err, rd_kafka_last_error(), "topic %s", topic);
        goto out;
    }
    bool exists;
    rd_kafka_resp_err_t rerr;
    if ((rc = topic_metadata(rk, rkt, topic, timeout_ms, &md, &exists, err)) != TB_OK)
        goto out;
    if (!exists) {
        if (must_exist)
            rc = tb_error_set(err, TB_ERR_NOT_FOUND, true,
                              "topic %s: the cluster's metadata does not know it, though this run made or found it",
                              topic);
        goto out; /* no topic: nothing held */
    }
    int np = md->topics[0].partition_cnt, left = 0;
    int64_t total = 0;                 /* records below the end offsets, all partitions */
    size_t since_wake = 0;             /* bytes read since the fetcher was last woken */
    bool wake = role == KSINK_ROLE_SCAN && scan_needs_wakeup();
    parts = rd_kafka_topic_partition_list_new(np);
    hi = calloc((size_t)np, sizeof(*hi));
    if (!parts || !hi) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (int i = 0; i < np; i++) {
        int32_t p = md->topics[0].partitions[i].id;
        int64_t lo = 0;
        if ((rerr = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi[i], timeout_ms)) != 0) {
            rc = kafka_error(err, rerr, "topic %s [%d]: watermarks", topic, (int)p);
            goto out;
        }
        if (hi[i] > lo) {
            rd_kafka_topic_partition_list_add(parts, topic, p)->offset = lo; /* no logical-offset lookup */
            left++;
            total += hi[i] - lo;
        }
    }
    if (left == 0)
        goto out;
    if ((rerr = rd_kafka_assign(rk, parts)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rc = kafka_error(err, rerr, "topic %s: assign", topic);
        goto out;
    }
    assigned = true;
    int64_t idle_deadline = tb_mono_ms() + timeout_ms;
    while (left > 0) {
        if (tb_mono_ms() > idle_deadline) {
            rc = tb_error_set(err, TB_ERR_KAFKA, true, "topic %s: not read to its end in %d ms without progress",
                              topic, timeout_ms);
            goto out;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rc = kafka_error(err, m->err, "topic %s: read", topic);
            rd_kafka_message_destroy(m);
            goto out;
        }
        int i = 0;
        while (i < np && md->topics[0].partitions[i].id != m->partition)
            i++;
        ksink_record rec = {.partition = m->partition, .offset = m->offset, .key = m->key, .klen = m->key_len,
                            .value = m->payload, .vlen = m->payload ? m->len : 0, .total = total};
        if (!m->err && m->key && i < np && m->offset < hi[i] && (rc = fn(opaque, &rec, err)) != TB_OK) {
            rd_kafka_message_destroy(m);
            tb_error_prefix(err, rc, "topic %s: ", topic);
            goto out;
        }
        if (i < np && hi[i] >= 0 && (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF || m->offset >= hi[i] - 1)) {
            hi[i] = -1; /* done with this partition */
            left--;
        }
        idle_deadline = tb_mono_ms() + timeout_ms;
        since_wake += m->len + m->key_len;
        if (wake && left > 0 && since_wake >= wake_bytes) {
            int64_t wlo, whi;
            since_wake = 0;
            /* its answer is not needed: the request is the wake-up */
            (void)rd_kafka_query_watermark_offsets(rk, topic, m->partition, &wlo, &whi, timeout_ms);
        }
        rd_kafka_message_destroy(m);
    }
out:
    if (assigned)
        rd_kafka_assign(rk, NULL);
    if (parts)
        rd_kafka_topic_partition_list_destroy(parts);
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    if (rk) {
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
    }
    free(hi);
    return rc;
}

tb_code ksink_topic_scan(const cfg *c, const char *topic, bool committed, const char *reader, ksink_scan_fn fn,
                         void *opaque, tb_error *err)
{
    return ksink_topic_read(c, KSINK_ROLE_SCAN, topic, false, committed ? "read_committed" : "read_uncommitted", reader, fn,
                            opaque, err);
}

/* ------------------------------------------------------------ keys of a table's topic */

/* How long a topic this run made or found may be unknown to the cluster's metadata before
 * the read of its keys gives up: it was deleted meanwhile (a send to it would fail too). */
#define KK_UNKNOWN_MS 60000

typedef struct kk_arg {
    const tb_kset *keep;
    ksink_key_fn fn;
    void *opaque;
    const char *topic;
    bool must_exist;      /* the sink made or found the topic in this run */
    int64_t unknown_since; /* tb_mono_ms() of the first read that found it unknown; 0: none */
} kk_arg;

/* One read of the topic for sink_keys_held: a walk of its records. */
typedef struct kk_walk {
    ksink *ks;
    const char *topic, *isolation;
    sink_keys_rec_fn fn;
    void *opaque;
    tb_buf kjson; /* key.converter=avro: a key's JSON payload */
    const kk_arg *a;
} kk_walk;

static tb_code kk_record(void *opaque, const ksink_record *rec, tb_error *err)
{
    kk_walk *w = opaque;
    return w->fn(w->opaque, rec->key, rec->klen, rec->value != NULL, err);
}

static tb_code kk_walk_topic(void *src, sink_keys_rec_fn fn, void *opaque, tb_error *err)
{
    kk_walk *w = src;
    w->fn = fn;
    w->opaque = opaque;
    return ksink_topic_read(w->ks->c, KSINK_ROLE_CONSUMER, w->topic, w->a->must_exist, w->isolation, "keys-reader",
                            kk_record, w, err);
}

/* A key held: to the caller as the topic holds it or, with key.converter=avro, as its JSON
 * payload (the codec's text; the deletes of the key reuse its bytes as the topic holds them,
 * ksink_avro_msg). */
static tb_code kk_give_key(void *opaque, const char *key, size_t klen, tb_error *err)
{
    kk_walk *w = opaque;
    ksink *ks = w->ks;
    if (!ks->avro_key)
        return w->a->fn(w->a->opaque, key, klen, err);
    tb_buf_reset(&w->kjson);
    tb_code rc = av_ser_decode(ks->avro, w->topic, key, klen, &w->kjson, err);
    if (rc != TB_OK)
        return rc;
    ks->topic_key = key;
    ks->topic_key_len = klen;
    rc = w->a->fn(w->a->opaque, w->kjson.data, w->kjson.len, err);
    ks->topic_key = NULL;
    return rc;
}

/* One read of the keys (ksink_topic_keys); a retriable failure reads again from the start. */
static tb_code kk_once(ksink *ks, void *arg, tb_error *err)
{
    kk_arg *a = arg;
    kk_walk w = {.ks = ks, .topic = a->topic, .a = a,
                 .isolation = a->keep ? "read_committed" : "read_uncommitted"};
    tb_buf_init(&w.kjson, 0);
    /* everything sent so far is in the topic before it is read */
    tb_code rc = ksink_flush(ks, ksink_request_timeout_ms(ks->c), err);
    if (rc == TB_OK)
        rc = sink_keys_held(kk_walk_topic, &w, a->keep, kk_give_key, &w, err);
    if (rc == TB_ERR_NOT_FOUND && a->must_exist) {
        int64_t now = tb_mono_ms();
        if (!a->unknown_since)
            a->unknown_since = now;
        else if (now - a->unknown_since > KK_UNKNOWN_MS)
            rc = tb_error_set(err, TB_ERR_KAFKA, false,
                              "topic %s: the cluster has not known it for %d s, though this run wrote to it "
                              "(deleted while the table is captured?); its keys cannot be read. Restart: the "
                              "start checks for topics gone (topic.missing.policy)",
                              a->topic, KK_UNKNOWN_MS / 1000);
    }
    /* A refused login or certificate is what the reader's failure means: the producer's error
     * callback knows it (served here, since nothing polled the producer during the read). */
    if (rc != TB_OK && !ks->failed)
        rd_kafka_poll(ks->rk, 0);
    tb_buf_free(&w.kjson);
    return rc;
}

tb_code ksink_topic_keys(ksink *ks, const evt_table *t, const tb_kset *keep, ksink_key_fn fn, void *opaque,
                         tb_error *err)
{
    tb_buf topic;
    tb_buf_init(&topic, 0);
    tb_code rc = evt_json_topic(&ks->copts, t, &topic);
    if (rc != TB_OK) {
        rc = tb_error_set(err, rc, false, "topic name of %s.%s", evt_table_db(t), evt_table_name(t));
    } else {
        /* Kafka away meanwhile is waited for; a key given twice by a read tried again is a
         * tombstone sent twice, which the topic read as a table does not see */
        kk_arg a = {keep, fn, opaque, topic.data, ksink_topic_made(ks, evt_table_db(t), evt_table_name(t), topic.data), 0};
        char what[320];
        snprintf(what, sizeof what, "the keys of topic %s", topic.data);
        rc = ksink_wait_kafka(ks, what, kk_once, &a, err);
    }
    tb_buf_free(&topic);
    return rc;
}

tb_code ksink_topic_empty(ksink *ks, const char *db, const char *table, bool *empty, tb_error *err)
{
    *empty = false;
    tb_buf topic;
    tb_buf_init(&topic, 0);
    rd_kafka_topic_t *rkt = NULL;
    const rd_kafka_metadata_t *md = NULL;
    int timeout_ms = ksink_request_timeout_ms(ks->c);
    tb_code rc = evt_json_topic_into(&ks->copts, db, table, &topic);
    if (rc != TB_OK) {
        rc = tb_error_set(err, rc, false, "topic name of %s.%s", db, table);
        goto out;
    }
    if (!(rkt = rd_kafka_topic_new(ks->rk, topic.data, NULL))) {
        rc = kafka_error(err, rd_kafka_last_error(), "topic %s", topic.data);
        goto out;
    }
    bool exists;
    rd_kafka_resp_err_t rerr;
    if ((rc = topic_metadata(ks->rk, rkt, topic.data, timeout_ms, &md, &exists, err)) != TB_OK)
        goto out;
    bool none = true;
    for (int i = 0; exists && none && i < md->topics[0].partition_cnt; i++) {
        int64_t lo = 0, hi = 0;
        int32_t p = md->topics[0].partitions[i].id;
        if ((rerr = rd_kafka_query_watermark_offsets(ks->rk, topic.data, p, &lo, &hi, timeout_ms)) != 0) {
            rc = kafka_error(err, rerr, "topic %s [%d]: watermarks", topic.data, (int)p);
            goto out;
        }
        none = hi <= lo;
    }
    *empty = none;
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    tb_buf_free(&topic);
    return rc;
}

tb_code ksink_key_digest(ksink *ks, const evt_event *e, uint64_t *digest, tb_error *err)
{
    tb_buf_reset(&ks->keybuf);
    tb_code rc = evt_render_key(&ks->copts, e, EVT_AFTER, &ks->keybuf, err);
    if (rc == TB_OK && ks->avro_key) { /* the key's bytes as the topic holds them: the wire format */
        const evt_table *t = evt_event_table(e);
        tb_buf subject;
        tb_buf_init(&subject, 0);
        if ((rc = evt_json_topic(&ks->copts, t, &subject)) == TB_OK && (rc = tb_buf_puts(&subject, "-key")) == TB_OK) {
            tb_buf_reset(&ks->avro_k);
            rc = av_ser_encode(ks->avro, tb_buf_cstr(&subject), evt_table_name(t), ks->keybuf.data, ks->keybuf.len,
                               &ks->avro_k, err);
        }
        tb_buf_free(&subject);
        if (rc == TB_OK)
            *digest = tb_kset_digest(ks->avro_k.data ? ks->avro_k.data : "", ks->avro_k.len);
        return rc;
    }
    if (rc == TB_OK)
        *digest = tb_kset_digest(ks->keybuf.data ? ks->keybuf.data : "", ks->keybuf.len);
    return rc;
}

/* ------------------------------------------------------------ schema records held */

typedef struct kk_schema {
    uint64_t digest;  /* of the latest value, without its version */
    uint32_t version; /* and its version */
    bool mine;        /* written by this sink, not read from the topic */
    bool dropped;     /* the latest record says the table was dropped (evt_json_schema_value_as) */
    size_t last_len;  /* last: the latest record that describes the table (not "dropped"), or "" */
    char last[];
} kk_schema;

/* A schema record's digest without its version number, and that number.
 * Records are written by evt_json_schema_value_as: canonical JSON that
 * begins {"db":"…","table":"…","version":N, so the first `,"version":` is
 * that member (the strings before it cannot hold an unescaped quote). A
 * record without one is digested whole, as version 0. */
static uint64_t kk_schema_digest(const char *p, size_t n, uint32_t *version)
{
    static const char tag[] = ",\"version\":";
    *version = 0;
    const char *v = memmem(p, n, tag, sizeof tag - 1);
    if (!v)
        return tb_hash_bytes(p, n);
    const char *d = v + sizeof tag - 1, *end = p + n;
    uint64_t ver = 0;
    for (; d < end && *d >= '0' && *d <= '9'; d++)
        ver = ver * 10 + (uint64_t)(*d - '0') > UINT32_MAX ? UINT32_MAX : ver * 10 + (uint64_t)(*d - '0');
    *version = (uint32_t)ver;
    /* FNV-1a over the bytes before the number, continued over those after it */
    uint64_t h = tb_hash_bytes(p, (size_t)(v - p));
    for (; d < end; d++)
        h = (h ^ (unsigned char)*d) * 0x100000001b3ULL;
    return h;
}

static tb_code kk_add_schema(void *opaque, const char *key, size_t klen, const char *value, size_t vlen,
                             tb_error *err)
{
    tb_hmap *m = opaque;
    void **v;
    if (tb_hmap_put(m, key, klen, &v) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for its records");
    if (!value) { /* a tombstone: nothing held */
        free(*v);
        *v = NULL;
        return TB_OK;
    }
    static const char drop_tag[] = "\"dropped\":true";
    bool dropped = memmem(value, vlen, drop_tag, sizeof drop_tag - 1) != NULL;
    kk_schema *s = *v;
    if (!s || !dropped) { /* a record that describes the table is kept whole (ksink_schema_last) */
        kk_schema *ns = realloc(s, sizeof(*s) + (dropped ? 0 : vlen) + 1);
        if (!ns)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for its records");
        if (!s)
            memset(ns, 0, sizeof(*ns));
        s = ns;
        s->last_len = dropped ? 0 : vlen;
        memcpy(s->last, value, s->last_len);
        s->last[s->last_len] = '\0';
    }
    s->digest = kk_schema_digest(value, vlen, &s->version);
    s->mine = false;
    s->dropped = dropped;
    *v = s;
    return TB_OK;
}

void ksink_schema_seen_free(ksink *ks)
{
    tb_hmap_free(ks->schema_seen, free);
    free(ks->schema_seen);
    ks->schema_seen = NULL;
}

tb_code ksink_schema_seen_load(ksink *ks, const char *topic, tb_error *err)
{
    if (ks->schema_seen)
        return TB_OK;
    if (!(ks->schema_seen = malloc(sizeof(*ks->schema_seen))))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_hmap_init(ks->schema_seen);
    kk_plain p = {kk_add_schema, ks->schema_seen};
    tb_code rc = ksink_topic_read(ks->c, KSINK_ROLE_CONSUMER, topic, false, "read_committed", "schema-reader",
                                  kk_plain_record, &p, err);
    if (rc != TB_OK) /* an empty set: every record is written, as without the read */
        tb_hmap_free(ks->schema_seen, free);
    return rc;
}

bool ksink_schema_seen(const ksink *ks, const char *key, size_t klen, const char *value, size_t vlen,
                       uint32_t *version, bool *same)
{
    *version = 0;
    *same = false;
    void **v = ks->schema_seen ? tb_hmap_find(ks->schema_seen, key, klen) : NULL;
    const kk_schema *s = v ? *v : NULL;
    if (!s)
        return false;
    uint32_t own;
    /* this run's own records differ by their version too (a new descriptor version is written) */
    *same = s->digest == kk_schema_digest(value, vlen, &own) && (!s->mine || s->version == own);
    *version = s->version;
    return true;
}

void ksink_schema_seen_each(const ksink *ks, void (*fn)(void *opaque, const char *key, size_t klen), void *opaque)
{
    const char *k;
    size_t klen;
    void *v;
    for (size_t it = 0; ks->schema_seen && tb_hmap_next(ks->schema_seen, &it, &k, &klen, &v);)
        if (v && !((const kk_schema *)v)->dropped)
            fn(opaque, k, klen);
}

void ksink_schema_seen_set(ksink *ks, const char *key, size_t klen, const char *value, size_t vlen)
{
    tb_error e;
    if (!ks->schema_seen)
        return;
    if (kk_add_schema(ks->schema_seen, key, klen, value, vlen, &e) != TB_OK) {
        tb_hmap_free(ks->schema_seen, free); /* out of memory: forget, write every record */
        return;
    }
    ((kk_schema *)*tb_hmap_find(ks->schema_seen, key, klen))->mine = true;
}

/* ------------------------------------------------------------ the latest schema record of a table */

tb_code ksink_schema_last(const ksink *ks, const char *db, const char *table, evt_table **out, tb_error *err)
{
    *out = NULL;
    if (!ks->schema_seen)
        return TB_OK;
    evt_table *k = evt_table_new(db, table, 0);
    tb_buf key;
    tb_buf_init(&key, 0);
    tb_code rc = k ? evt_json_schema_key(k, &key) : TB_ERR_NOMEM;
    evt_table_unref(k);
    if (rc != TB_OK) {
        tb_buf_free(&key);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    void **v = tb_hmap_find(ks->schema_seen, key.data, key.len);
    tb_buf_free(&key);
    const kk_schema *s = v ? *v : NULL;
    if (!s || s->last_len == 0)
        return TB_OK;
    return evt_json_schema_parse(db, table, s->last, s->last_len, out, err);
}
