/*
 * cache_kafka: the consumer side of the cache, shared between cache_run.c
 * and cache_status.c. Internal to cache/.
 */
#ifndef CACHE_KAFKA_H
#define CACHE_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <regex.h>

#include "cache.h"
#include "kafka.h"
#include "cache_int.h"

typedef struct cache_part {
    char *topic;
    int32_t partition;
    int64_t next;     /* next offset to apply; -1 = from the beginning */
    int64_t high;     /* high watermark recorded at assignment; -1 unknown */
    bool dirty;       /* next changed since the last commit */
    bool schema;      /* a <prefix>.schema partition (read by the schema consumer) */
    bool assigned;
    bool skip_stale;  /* rewound: ignore the rest of the current fetched batch */
    int64_t ret_ms;   /* the topic's delete.retention.ms; -1 unknown, -2 not asked yet */
    int64_t fresh_ms; /* the latest write time known of what the cache read of it (cache_run.c,
                       * check_fresh); alive_at when resumed */
    bool checked;     /* resumed, or a replay that reached its end: its gaps are checked */
    int64_t end_at;   /* a replay reached its end at this offset (the high watermark when assigned;
                       * -1 after a rewind: its end event only) */
} cache_part;

/* New librdkafka configuration (kafka_conf_new) for a client of type: bootstrap servers,
 * extra properties (kafka.* keys; those such a client ignores are checked and left out,
 * kafka_conf_pass). Returns NULL with err set (naming the key). Caller owns the result. */
rd_kafka_conf_t *cache_kafka_conf(const char *brokers, rd_kafka_type_t type, const char *const *props,
                                  tb_error *err);

/* cache_nudge.c: a thread that wakes librdkafka's broker thread of a partition
 * (a watermark query) so a fetcher paused by a full queue resumes without
 * waiting for its one-second tick. Start: *out owned by the caller, freed by
 * cache_nudge_stop (NULL-safe, joins the thread). rk is borrowed and must
 * outlive the nudge. check: call after a poll that returned messages; it
 * never blocks (parts borrowed for the call, topic names copied). */
typedef struct cache_nudge cache_nudge;
TB_MUST_USE tb_code cache_nudge_start(rd_kafka_t *rk, cache_nudge **out, tb_error *err);
void cache_nudge_check(cache_nudge *n, rd_kafka_queue_t *q, const cache_part *parts, size_t nparts);
void cache_nudge_stop(cache_nudge *n);

#endif
