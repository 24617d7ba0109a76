/*
 * app_metrics: the metrics registry and the HTTP endpoint of `tributary run`,
 * `tributary cache` and `tributary verify`, on for metrics.listen=HOST:PORT
 * (off when unset).
 *
 * ENDPOINT (libmicrohttpd, its own thread, bound where metrics.listen says):
 *   GET /metrics  Prometheus text exposition format 0.0.4. Every name starts
 *                 with tributary_, carries its unit (_seconds, _bytes,
 *                 _messages, _total for counters) and a `connector` label.
 *                 Base units as Prometheus wants them (promtool check metrics
 *                 refuses _milliseconds): lag is tributary_lag_seconds.
 *   GET /health   200 {"status":"ok",...} when active and healthy; 503 with
 *                 "reason" otherwise: "source down since <time>", "kafka
 *                 unreachable", "failed: <error>", "starting", "stopping",
 *                 "standby" (healthy, not active). A snapshot is healthy.
 *                 cache and verify: 503 "failed" once they failed, cache
 *                 also "stopping" once it stopped.
 * Other paths 404, other methods 405.
 *
 * THREADS AND COST. One thread (the run or cache loop) writes; the HTTP
 * thread reads. Per-event counters (app_metrics_count) are relaxed atomic
 * loads and stores of the writer's own counters: no lock, no read-modify-write
 * bus lock, no formatting on the hot path. Gauges and librdkafka's statistics
 * JSON are set about once a second under a mutex (app_metrics_set_*), and
 * all formatting and JSON parsing (Jansson) happens at scrape time on the
 * HTTP thread.
 *
 * Ownership: app_metrics_start returns a registry the caller ends with
 * app_metrics_stop (stops the server first; NULL-safe). Strings given to the
 * setters are copied, except `state`, which must be a static string.
 */
#ifndef APP_METRICS_H
#define APP_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include "cfg.h"
#include "evt.h"
#include "tb_buf.h"
#include "tb_error.h"

typedef struct app_metrics app_metrics;

typedef enum app_metrics_role { APP_METRICS_RUN, APP_METRICS_CACHE, APP_METRICS_VERIFY } app_metrics_role;

/* Start the endpoint when metrics.listen is set (*out = NULL and TB_OK when
 * it is not). TB_ERR_CONFIG for a listen address that does not parse or a
 * host that is not a numeric IPv4/IPv6 address or "localhost"; TB_ERR_IO when
 * the address cannot be bound (in use). */
TB_MUST_USE tb_code app_metrics_start(const cfg *c, app_metrics_role role, app_metrics **out, tb_error *err);
/* Stop the server and free the registry. NULL-safe. */
void app_metrics_stop(app_metrics *m);

/* Parse "HOST:PORT" ("[v6]:PORT" for IPv6). Exposed for tests. */
/* libmicrohttpd's version, loading it (it is loaded only when an endpoint starts). */
const char *app_metrics_http_version(void);

TB_MUST_USE tb_code app_metrics_parse_listen(const char *s, char *host, size_t host_cap, unsigned *port, tb_error *err);
/* Whether a listen host reaches this host only (127.0.0.0/8, ::1, ::ffff:127.x, localhost).
 * Bound elsewhere without metrics.token, the endpoint logs a WARN at start. */
bool app_metrics_is_loopback(const char *host);

/* ---- hot path (the writer thread only) */

/* The counter slot of table "db.table" (created on first use; a mutex, so
 * call it once per table descriptor, not per event). -1 when m is NULL or
 * the table limit (4096) is reached. */
int app_metrics_table(app_metrics *m, const char *db, const char *table);
/* One event of op on the table in slot (from app_metrics_table). */
void app_metrics_count(app_metrics *m, int slot, evt_op op);
/* Why an event of a captured table was not sent as a change (its own counter,
 * never in tributary_events_total). */
typedef enum app_metrics_skip_reason {
    APP_METRICS_SKIP_OVERSIZE = 0, /* oversize.policy=skip: over message.max.bytes, dropped */
    APP_METRICS_SKIP_DLQ,          /* oversize.policy=dlq: a record in <name>.dlq instead */
    APP_METRICS_SKIP_NO_KEY,       /* a table without a primary key or key.columns */
    APP_METRICS_SKIP_SEQUENCE,     /* a MariaDB SEQUENCE: its generator state, not captured */
    APP_METRICS_NSKIP
} app_metrics_skip_reason;
/* One event of the table in slot not sent, for reason. */
void app_metrics_skip(app_metrics *m, int slot, app_metrics_skip_reason reason);
/* Why the run itself signalled an incremental snapshot of a captured table: its rows changed, or
 * its topic lost them, without row events to send (tributary_resnapshots_total). */
typedef enum app_metrics_resnap_reason {
    APP_METRICS_RESNAP_ALTER = 0,     /* ddl.alter.policy=resnapshot: an ALTER that changes rows or the key */
    APP_METRICS_RESNAP_RENAME,        /* a table renamed into the captured set */
    APP_METRICS_RESNAP_FK_ACTION,     /* a foreign key's action (source.fk.cascade.policy=resnapshot) */
    APP_METRICS_RESNAP_TOPIC_MISSING, /* its topic deleted while captured (topic.missing.policy=resnapshot) */
    APP_METRICS_NRESNAP
} app_metrics_resnap_reason;
/* One incremental snapshot of the table in slot signalled, for reason. */
void app_metrics_resnapshot(app_metrics *m, int slot, app_metrics_resnap_reason reason);
/* The snapshot's row estimate for a table (information_schema), -1 unknown. */
void app_metrics_set_estimate(app_metrics *m, int slot, int64_t rows);

/* ---- gauges (about once a second) */

typedef struct app_metrics_run {
    const char *state;            /* static string: the status file's state */
    const char *error;            /* last error, NULL = none (copied) */
    bool source_connected;
    bool lease_waiting;           /* the HA lease is not confirmed: producing nothing (app_health) */
    int64_t source_down_since_ms; /* Unix ms, 0 = up */
    int64_t kafka_waiting_since_ms; /* Unix ms (app_status.h), 0 = not waiting */
    int64_t registry_down_since_ms; /* Unix ms a send began to wait for the schema registry (app_status.h),
                                       0 = not waiting */
    const char *registry_error;   /* then "<url>: <error>" (copied), NULL otherwise */
    bool source_encrypted;        /* the replication connection uses TLS */
    int64_t lag_ms;               /* -1 unknown */
    int64_t behind_bytes;         /* binlog bytes / WAL frames behind; -1 unknown */
    const char *behind_unit;      /* "bytes" (binlog) or "frames" (SQLite WAL) */
    int64_t wal_bytes;            /* SQLite: size of the application's WAL file; -1 unknown */
    int64_t wal_resets;           /* SQLite: WAL generations seen (resets); -1 unknown */
    uint64_t acked;               /* messages Kafka acknowledged (stdout: written) */
    uint64_t in_flight;           /* messages sent, not yet acknowledged */
    uint64_t reconnects;          /* source connections lost */
    uint64_t restarts;            /* source re-reads after aborted Kafka transactions */
    uint64_t producer_restarts;   /* source re-reads after a Kafka producer that failed was replaced */
} app_metrics_run;
void app_metrics_set_run(app_metrics *m, const app_metrics_run *v);

/* One partition's consumer lag (tributary_cache_partition_lag_messages). */
typedef struct app_metrics_lag {
    const char *topic;            /* copied by app_metrics_set_cache */
    int32_t partition;
    int64_t lag;                  /* messages to the newest known high watermark, -1 unknown */
} app_metrics_lag;

typedef struct app_metrics_cache {
    const char *state;            /* static string: "starting", "catching_up", "caught_up", "stopped", "failed" */
    uint64_t messages;            /* messages applied to tables in this run (not schema records) */
    int64_t remaining;            /* messages up to the start watermarks, -1 unknown */
    bool caught_up;
    const app_metrics_lag *parts; /* every assigned partition (copied; NULL with nparts 0 keeps the last) */
    size_t nparts;
} app_metrics_cache;
void app_metrics_set_cache(app_metrics *m, const app_metrics_cache *v);

/* ---- tributary verify (the writer: the command's thread) */

typedef struct app_metrics_verify {
    const char *state;    /* static string: "starting", "waiting" (for the connector's position),
                             "comparing", "repairing", "done", "failed" */
    uint64_t passes[2];   /* passes run against topics [0] and against the cache [1] */
    bool behind;          /* a pass's connector position did not reach its source read's in --wait-ms */
} app_metrics_verify;
void app_metrics_set_verify(app_metrics *m, const app_metrics_verify *v);
/* n more source rows of the table in slot (app_metrics_table) compared
 * against topics (cache false) or the cache (tributary_verify_rows_total). */
void app_metrics_verify_rows(app_metrics *m, int slot, bool cache, uint64_t n);
/* The outcome of the table's latest pass against topics or the cache:
 * keys missing, extra, different, and changed during the read (in flight). */
void app_metrics_verify_result(app_metrics *m, int slot, bool cache, uint64_t missing, uint64_t extra,
                               uint64_t different, uint64_t in_flight);
/* GET /metrics requests answered so far (a verify that lingers after its
 * end waits for one). 0 when m is NULL. */
uint64_t app_metrics_scrapes(const app_metrics *m);

/* librdkafka's statistics JSON (copied; parsed at scrape time). */
void app_metrics_set_kafka_stats(app_metrics *m, const char *json, size_t len);
/* kafka.statistics.interval.ms: statistics older than 3 intervals (at least
 * 15 s) no longer count for /health's "kafka unreachable" (0: no limit). */
void app_metrics_set_kafka_stats_interval(app_metrics *m, int64_t interval_ms);

/* ---- rendering (what the endpoint serves; exposed for tests) */

/* The /metrics body, appended to out. */
TB_MUST_USE tb_code app_metrics_render(app_metrics *m, tb_buf *out);
/* The /health body appended to out; returns the HTTP status (200 or 503). */
int app_metrics_health(app_metrics *m, int64_t now_ms, tb_buf *out);

/* A registry without a server (tests): connector name, role. */
app_metrics *app_metrics_new(const char *connector, app_metrics_role role);

#endif
