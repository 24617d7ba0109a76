/*
 * cache_nudge: keeps librdkafka 2.0's fetcher going during a replay.
 *
 * Why: librdkafka stops fetching a partition while the consumer queue holds
 * queued.min.messages messages (or queued.max.messages.kbytes), and decides
 * again only when its broker thread wakes up: on a fetch response, on an
 * operation for that broker, or on the thread's own one-second tick. In a
 * replay the queue is over the threshold after every fetch, so the broker
 * thread sleeps until the next tick while the cache drains the queue, and the
 * cache then waits for data (seen with kafka.debug=fetch: "not fetchable:
 * queued.min.messages exceeded", then a fetch exactly one second later, so
 * the replay idles for much of its time). librdkafka 2.0 has no
 * setting for this (fetch.queue.backoff.ms came with 2.2.0; Debian 12 has
 * 2.0.2).
 *
 * What: when the cache has drained its queue from near queued.min.messages
 * to below it, it pokes this thread, which asks a partition's leader for its
 * watermarks (rd_kafka_query_watermark_offsets, two small ListOffsets
 * requests). Sending a request wakes that broker's thread, which re-decides
 * its fetches right away. Pokes: one each time the queue went from near the
 * threshold to below it (so never while following a quiet topic), the assigned
 * table partitions in turn (several leaders: each is woken in its turn). The
 * poke never blocks the cache's thread; none is made while a query is in
 * flight (that one wakes the broker). Only the wake-up matters, the answer is
 * dropped: nothing here touches offsets, so exact resume does not depend on
 * it. Stopping joins the thread, so it waits for a query in flight (answered
 * in a millisecond or two; a broker that stops answering without closing the
 * connection holds it for up to socket.timeout.ms).
 */
#include <stdlib.h>
#include <string.h>

#include "cache_kafka.h"
#include "tb_log.h"
#include "tb_worker.h"

struct cache_nudge {
    rd_kafka_t *rk;   /* borrowed */
    tb_worker w;
    /* written by the cache's thread while the worker is idle, read by the worker's job */
    char topic[256];  /* Kafka topic names have at most 249 bytes */
    int32_t partition;
    /* the cache's thread only: */
    int64_t low_water; /* rk's queued.min.messages */
    bool armed;        /* the queue was near low_water since the last poke */
    size_t next;       /* round robin over the partitions */
};

/* The worker's job: one watermark query (its answer is not needed). */
static void nudge_run(void *arg)
{
    cache_nudge *n = arg;
    int64_t lo, hi;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(n->rk, n->topic, n->partition, &lo, &hi, 1000);
    if (e)
        TB_DEBUG("cache", "fetch nudge on %s [%d]: %s", n->topic, (int)n->partition, rd_kafka_err2str(e));
}

tb_code cache_nudge_start(rd_kafka_t *rk, cache_nudge **out, tb_error *err)
{
    tb_code rc;
    cache_nudge *n = calloc(1, sizeof(*n));
    *out = NULL;
    if (!n)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    n->rk = rk;
    char v[32];
    size_t vn = sizeof(v);
    n->low_water = rd_kafka_conf_get(rd_kafka_conf(rk), "queued.min.messages", v, &vn) == RD_KAFKA_CONF_OK
                       ? atoll(v)
                       : 100000;
    if ((rc = tb_worker_start(&n->w, nudge_run, n, err)) != TB_OK) {
        free(n);
        return rc;
    }
    *out = n;
    return TB_OK;
}

void cache_nudge_check(cache_nudge *n, rd_kafka_queue_t *q, const cache_part *parts, size_t nparts)
{
    if (!n || n->low_water <= 0)
        return;
    int64_t len = (int64_t)rd_kafka_queue_length(q);
    if (len >= n->low_water - n->low_water / 4) /* the fetcher may pause from here on */
        n->armed = true;
    if (!n->armed || len >= n->low_water)
        return;
    /* a query in flight was sent below low_water too: it wakes the broker anyway */
    if (!tb_worker_idle(&n->w))
        return;
    for (size_t k = 0; k < nparts; k++) {
        const cache_part *p = &parts[(n->next + k) % nparts];
        size_t len_topic = strlen(p->topic);
        if (p->assigned && !p->schema && len_topic < sizeof(n->topic)) {
            memcpy(n->topic, p->topic, len_topic + 1);
            n->partition = p->partition;
            n->next = (n->next + k + 1) % nparts;
            n->armed = false;
            tb_worker_wake(&n->w);
            return;
        }
    }
}

void cache_nudge_stop(cache_nudge *n)
{
    if (!n)
        return;
    int64_t runs = tb_worker_stop(&n->w);
    TB_DEBUG("cache", "fetch nudges sent: %lld", (long long)runs);
    free(n);
}
