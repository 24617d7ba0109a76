/*
 * cache: replay compacted topics into a local SQLite table cache (DESIGN 9).
 *
 *   cache_opts o; cache_opts_init(&o);
 *   o.brokers = "127.0.0.1:9092"; o.topics = "^shop\\."; o.db_path = "c.db";
 *   tb_code rc = cache_run(&o, &err);     // returns when caught up (until_caught_up),
 *                                         // when *o.stop becomes non-zero, or on failure
 *
 * Exactly resumable: each batch of applied messages and the offsets after it
 * are one SQLite transaction; on start every partition is assigned at its
 * stored offset (Kafka's committed offsets are not used). File layout: see
 * cache_int.h. Reads: cache_read.h.
 *
 * Ownership: every pointer in cache_opts is borrowed for the duration of the
 * call. cache_status() appends text to a caller-owned buffer.
 */
#ifndef CACHE_H
#define CACHE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tb_buf.h"
#include "tb_error.h"

typedef enum cache_mode { CACHE_MODE_GLOBAL = 0, CACHE_MODE_GROUP } cache_mode;
typedef enum cache_error_policy { CACHE_ERR_FAIL = 0, CACHE_ERR_SKIP, CACHE_ERR_DLQ } cache_error_policy;

/* How a Debezium connector wrote the values of a topic without Connect schemas
 * (cache.debezium.*: the connector's options of the same names). */
typedef enum cache_dbz_decimal { CACHE_DBZ_PRECISE = 0, CACHE_DBZ_STRING, CACHE_DBZ_DOUBLE } cache_dbz_decimal;
typedef enum cache_dbz_time {
    CACHE_DBZ_ADAPTIVE_TIME_US = 0, /* adaptive_time_microseconds */
    CACHE_DBZ_ADAPTIVE,             /* adaptive */
    CACHE_DBZ_CONNECT               /* connect */
} cache_dbz_time;
typedef enum cache_dbz_binary { CACHE_DBZ_BYTES = 0, CACHE_DBZ_BASE64, CACHE_DBZ_BASE64_URL, CACHE_DBZ_HEX } cache_dbz_binary;
typedef struct cache_dbz_opts {
    cache_dbz_decimal decimal; /* decimal.handling.mode */
    cache_dbz_time time;       /* time.precision.mode */
    cache_dbz_binary binary;   /* binary.handling.mode */
} cache_dbz_opts;

/* One assigned partition's consumer lag: messages from the next offset to apply up to the
 * partition's newest known high watermark (the one recorded at assignment, or a newer one from
 * the consumer's fetches); -1 while no high watermark is known. */
typedef struct cache_partition_lag {
    const char *topic;      /* borrowed for the progress call */
    int32_t partition;
    int64_t lag;
} cache_partition_lag;

typedef struct cache_progress {
    int64_t messages;       /* consumed in this run (schema records included) */
    int64_t applied;        /* applied to tables in this run (what `cache status` counts) */
    double rows_per_s;      /* over the last interval */
    int64_t remaining;      /* messages up to the high watermarks recorded at start */
    double eta_s;           /* < 0 when unknown */
    bool caught_up;
    const cache_partition_lag *parts; /* every assigned partition; borrowed for the call */
    size_t nparts;
} cache_progress;

/* Called about once a second from cache_run's thread. */
typedef void (*cache_progress_fn)(const cache_progress *p, void *opaque);

typedef struct cache_opts {
    const char *brokers;          /* bootstrap.servers (or in kafka_props) */
    const char *topics;           /* POSIX extended regex over topic names, e.g. "^shop\\." */
    const char *db_path;          /* the cache file */
    const char *topic_prefix;     /* optional: <prefix> of <prefix>.<db>.<table>; else taken from
                                   * a matching "<prefix>.schema" topic or the topic name */
    const char *name;             /* connector name: DLQ "<name>.cache.dlq", default group id */
    cache_mode mode;
    const char *group_id;         /* group mode; default "<name>-cache" */
    bool drop_on_revoke;          /* group mode: drop a revoked partition's rows */
    bool drop_on_drop;            /* cache.on.drop=drop: a schema record that says dropped drops the table */
    cache_error_policy error_policy;
    cache_dbz_opts dbz;           /* Debezium values without Connect schemas (default: Debezium's defaults) */
    const char *dbz_history_topic; /* Debezium's schema history topic: the fsp of its temporal columns
                                   * (cache_history.c); NULL: none */
    int batch_size;               /* messages per transaction (default 5000) */
    int busy_timeout_ms;          /* wait for another process's lock on the file (default 5000) */
    bool offline_fail;            /* cache.offline.policy=fail: a resume after more than a topic's
                                   * delete.retention.ms fails naming the fix; else (rebuild) the
                                   * topic's partitions are replayed from the beginning */
    int metadata_refresh_ms;      /* global mode: look for new topics (default 5000) */
    bool until_caught_up;         /* return once every partition reached its start watermark */
    /* The schema registry of Avro topics (Confluent's wire format: cache_run reads them as the
     * Kafka Connect JSON the codec writes, avro/av_msg.h); url NULL: none (an Avro message then
     * stops the run naming schema.registry.url) */
    const char *registry_url, *registry_user, *registry_password, *registry_ca;
    long registry_timeout_ms;     /* one request (default 10000) */
    int64_t registry_retry_ms;    /* how long an unreachable registry is asked again (0: not) */
    const char *const *kafka_props; /* extra librdkafka properties: key, value, key, value, ..., NULL */
    volatile sig_atomic_t *stop;  /* non-NULL: stop when it becomes non-zero (signal handler) */
    cache_progress_fn progress;   /* optional */
    void *progress_opaque;
} cache_opts;

void cache_opts_init(cache_opts *o);

/* Consume and apply until stopped, caught up (until_caught_up) or failed.
 * TB_OK on a clean stop (the current batch committed). */
TB_MUST_USE tb_code cache_run(const cache_opts *o, tb_error *err);

/* Per-partition stored offset vs high watermark (recorded at start, and the
 * current one when brokers is not NULL), and whether the cache caught up. */
TB_MUST_USE tb_code cache_status(const char *db_path, const char *brokers, tb_buf *out, tb_error *err);

#endif
