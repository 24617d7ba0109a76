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
 * queued.min.messages exceeded", then a fetch exactly one second later; the
 * loop was idle about 40% of a 1M-message replay). librdkafka 2.0 has no
 * setting for this (fetch.queue.backoff.ms came later).
 *
 * What: when the cache has drained its queue below queued.min.messages it
 * pokes this thread, which asks the partition's leader for its watermarks
 * (rd_kafka_query_watermark_offsets, two small ListOffsets requests). Sending
 * a request wakes that broker's thread, which re-decides its fetches right
 * away. The poke never blocks the cache's thread; pokes that arrive while a
 * query runs collapse into one. Only the wake-up matters, the answer is
 * dropped: nothing here touches offsets, so exact resume does not depend on it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache_kafka.h"
#include "tb_log.h"

struct cache_nudge {
    rd_kafka_t *rk; /* borrowed */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool pending, stop;
    char topic[256];  /* Kafka topic names have at most 249 bytes */
    int32_t partition;
    int64_t sent;     /* queries made (for the debug line at stop) */
};

static void *nudge_main(void *arg)
{
    cache_nudge *n = arg;
    char topic[sizeof(n->topic)];
    pthread_mutex_lock(&n->mu);
    for (;;) {
        while (!n->pending && !n->stop)
            pthread_cond_wait(&n->cv, &n->mu);
        if (n->stop)
            break;
        memcpy(topic, n->topic, sizeof(topic));
        int32_t partition = n->partition;
        n->pending = false;
        pthread_mutex_unlock(&n->mu);
        int64_t lo, hi;
        rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(n->rk, topic, partition, &lo, &hi, 1000);
        if (e)
            TB_DEBUG("cache", "fetch nudge on %s [%d]: %s", topic, (int)partition, rd_kafka_err2str(e));
        pthread_mutex_lock(&n->mu);
        n->sent++;
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

tb_code cache_nudge_start(rd_kafka_t *rk, cache_nudge **out, tb_error *err)
{
    cache_nudge *n = calloc(1, sizeof(*n));
    *out = NULL;
    if (!n)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    n->rk = rk;
    if (pthread_mutex_init(&n->mu, NULL) != 0) {
        free(n);
        return tb_error_set(err, TB_ERR_NOMEM, false, "fetch nudge: no mutex");
    }
    if (pthread_cond_init(&n->cv, NULL) != 0) {
        pthread_mutex_destroy(&n->mu);
        free(n);
        return tb_error_set(err, TB_ERR_NOMEM, false, "fetch nudge: no condition variable");
    }
    if (pthread_create(&n->thread, NULL, nudge_main, n) != 0) {
        pthread_cond_destroy(&n->cv);
        pthread_mutex_destroy(&n->mu);
        free(n);
        return tb_error_set(err, TB_ERR_NOMEM, false, "fetch nudge: cannot start a thread");
    }
    *out = n;
    return TB_OK;
}

void cache_nudge_poke(cache_nudge *n, const char *topic, int32_t partition)
{
    size_t len = strlen(topic);
    if (!n || len >= sizeof(n->topic))
        return;
    pthread_mutex_lock(&n->mu);
    if (!n->pending) {
        memcpy(n->topic, topic, len + 1);
        n->partition = partition;
        n->pending = true;
        pthread_cond_signal(&n->cv);
    }
    pthread_mutex_unlock(&n->mu);
}

void cache_nudge_stop(cache_nudge *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    TB_DEBUG("cache", "fetch nudges sent: %lld", (long long)n->sent);
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    free(n);
}
